"""AWS EC2: on-demand Linux prices from the public price list, spot prices from the spot feed.

Quirks (see tests/fixtures/README.md, "aws"):
- On-demand: the per-region file AWS's own on-demand pricing page loads,
  `b0.p.awsstatic.com/.../ec2-ondemand-without-sec-sel/<Location>/Linux/index.json` (tens of KB,
  where the Price List API's per-region offer file is over a gigabyte). It holds Linux, shared
  tenancy, no pre-installed software ("without-sec-sel") only: `{"manifest": {...}, "regions":
  {"US East (N. Virginia)": {"<type> <place> Linux": {"rateCode", "price", "Instance Type",
  ...}}}}`. Keys are compound strings, never the instance type: the type is `Instance Type`.
  The region is named by its display name (`Location`), mapped to its code by `LOCATIONS`.
  `price` is USD per instance-hour as a decimal string.
- Spot: `https://website.spot.ec2.aws.a2z.com/spot.json`, the feed behind the spot pricing page
  (bare JSON; the older `spot.js` wraps the same document in `callback(...)`, read too): per
  region code, `instanceTypes[].sizes[]` with `valueColumns` `linux`/`mswin` and `prices.USD`
  a decimal string or `N/A*` (not offered: no offer). Only `linux` is read. The feed lists some
  sizes twice in one region (`p4de.24xlarge`, `g6.8xlarge` in the recording): an exact repeat is
  read once, a repeat with another price is rejected as a duplicate.
- Neither answer carries GPU facts: `data/aws_instance_types.csv` (model, count, VRAM, form
  factor, vCPUs, RAM, source) does. A type of a GPU family missing from it is a reject naming
  the table; CPU types are not offers. Fractional GPUs (`g6f`, `gr6f`: a share of one L4) are
  rejected, never counted as a whole GPU, until the offer can carry a fraction; non-GPU
  accelerators (Inferentia, Trainium, video transcoders) are rejected with their name.
- A price list says "listed", not "rentable now": `available=True` means listed at a price, as
  CoreWeave's rate card (`LISTED_ONLY`).
- `fetch` asks every region of `LOCATIONS` and the spot feed and hands `parse` one document
  `{"answers": [<body text>, ...]}`; a region answering 404 is skipped. Each answer is read by
  its shape, so one recorded answer alone (`collect --replay aws=FILE`: the spot feed gives spot
  offers, a price-list file on-demand ones) parses too. A directory of recorded answers
  (`spot.json`, `ondemand-<region>.json`) replays through `replay_directory`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import orjson

from scrapers.base import Credentials, data_rows, fetch_bytes
from scrapers.batch import RECORD_ERRORS, OfferBatch, decimal
from scrapers.errors import ProviderHTTPError, ProviderPayloadError
from scrapers.machines import Machine, machines_of
from scrapers.models import ParseResult, Pricing, reason_of

NAME = "aws"
URL = (
    "https://b0.p.awsstatic.com/pricing/2.0/meteredUnitMaps/ec2/USD/current/"
    "ec2-ondemand-without-sec-sel/{location}/Linux/index.json"
)
SPOT_URL = "https://website.spot.ec2.aws.a2z.com/spot.json"
HOSTS = ("b0.p.awsstatic.com", "website.spot.ec2.aws.a2z.com")
"""The two hosts fetched (scrapers/urls.py: nothing else is, redirects included)."""
ENV_KEY: str | None = None
KEY_REQUIRED = False  # both are public files
INTERVAL = timedelta(hours=1)
"""Hourly: the spot feed moves within the day; the price-list files (tens of KB each) change
rarely, and re-reading them hourly costs little."""
CURRENCY = "USD"
LISTED_ONLY = True
IN_PRICE_INDEX = False
LOCATIONS = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-2": "US West (Oregon)",
    "eu-central-1": "EU (Frankfurt)",
    "eu-west-1": "EU (Ireland)",
    "eu-west-2": "EU (London)",
    "eu-north-1": "EU (Stockholm)",
    "eu-south-2": "EU (Spain)",
    "ap-northeast-1": "Asia Pacific (Tokyo)",
    "ap-south-1": "Asia Pacific (Mumbai)",
    "ap-southeast-2": "Asia Pacific (Sydney)",
    "sa-east-1": "South America (Sao Paulo)",
}
"""Region code -> the price list's location name (`EU (Stockholm)`, as its files spell it)."""
REGIONS = {row["region"]: row for row in data_rows("aws_regions")}
MACHINES = machines_of(data_rows("aws_instance_types"), "instance_type")
GPU_FAMILY = re.compile(r"^(p\d|g\d|gr\d)")
"""Instance families that carry GPUs (p3..p6, g4dn..g7e, gr6): one missing from the table is a
reject; any other family (m5, c7i, ...) is a CPU type, not an offer."""
NO_PRICE = "N/A"
_ANSWER_OF_PATH = re.compile(r"/ec2-ondemand-without-sec-sel/(?P<location>[^/]+)/Linux/")
_JSONP = re.compile(rb"^\s*(?:/\*.*?\*/\s*)?callback\((?P<body>.*)\)\s*;?\s*$", re.DOTALL)


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    answers: list[str] = []
    for location in LOCATIONS.values():
        try:
            body = fetch_bytes(client, "GET", URL.format(location=quote(location)), provider=NAME)
        except ProviderHTTPError as exc:
            cause = exc.__cause__
            if isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code == 404:
                continue  # no price list under that name: the region is skipped
            raise
        answers.append(body.decode())
    answers.append(fetch_bytes(client, "GET", SPOT_URL, provider=NAME).decode())
    return orjson.dumps({"answers": list(dict.fromkeys(answers))})


def replay_directory(directory: Path) -> Callable[[httpx.Request], httpx.Response]:
    """Answers from recorded files: `spot.json` (or `spot.js`) for the spot feed,
    `ondemand-<region>.json` for a region's price list; 404 for anything else."""
    code_of = {location: code for code, location in LOCATIONS.items()}

    def answer(request: httpx.Request) -> httpx.Response:
        match = _ANSWER_OF_PATH.search(unquote(request.url.path))
        if match is not None:
            names = [f"ondemand-{code_of.get(match['location'], match['location'])}.json"]
        elif request.url.host == httpx.URL(SPOT_URL).host:
            names = ["spot.json", "spot.js"]
        else:
            names = []
        for name in names:
            if (directory / name).is_file():
                return httpx.Response(200, content=(directory / name).read_bytes())
        return httpx.Response(404)

    return answer


MAX_RAW_CHARS = 10_000
"""Of a malformed answer kept as a reject, its first characters."""


def _decoded(answer: bytes | str) -> Any:
    raw = answer.encode() if isinstance(answer, str) else answer
    wrapped = _JSONP.match(raw)
    try:
        return orjson.loads(wrapped["body"] if wrapped else raw)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(
            f"{NAME}: an answer is not JSON or callback(JSON) ({exc})"
        ) from exc


def _answers(payload: bytes) -> list[Any]:
    """The answers: those of fetch's document (each still text), or the one recorded answer
    given (decoded)."""
    body = _decoded(payload)
    if isinstance(body, dict) and isinstance(body.get("answers"), list):
        return list(body["answers"])
    return [body]


Record = tuple[Pricing | None, Any, Any, Any]
"""(pricing, region, instance type, the record as served); pricing None: a malformed part of
an answer, its region the reason."""


def _records(answer: Any) -> Iterator[Record]:
    """The records of one answer, by its shape; a part of the wrong type is one malformed
    record (rejected with its reason), never an exception that fails the other answers."""
    if isinstance(answer, dict) and isinstance(answer.get("regions"), dict):
        for location, entries in answer["regions"].items():
            if not isinstance(entries, dict):
                yield None, f"price list of {location!r} is not an object", None, entries
                continue
            for entry in entries.values():
                region = entry.get("Location", location) if isinstance(entry, dict) else location
                yield Pricing.ON_DEMAND, _code_of(region), _type_of(entry), entry
        return
    config = answer.get("config") if isinstance(answer, dict) else None
    if not isinstance(config, dict) or not isinstance(config.get("regions"), list):
        raise ProviderPayloadError(
            f"{NAME}: an answer is neither a price-list file ('regions' object) nor the spot "
            f"feed ('config.regions' list) of {SPOT_URL}"
        )
    for region in config["regions"]:
        code = region.get("region") if isinstance(region, dict) else None
        groups = region.get("instanceTypes") if isinstance(region, dict) else region
        if not isinstance(groups, list | None):
            yield None, f"spot region {code!r}: instanceTypes is not a list", None, region
            continue
        for group in groups or []:
            sizes = group.get("sizes") if isinstance(group, dict) else group
            if not isinstance(sizes, list | None):
                yield None, f"spot region {code!r}: sizes is not a list", None, group
                continue
            for size in sizes or []:
                kind = size.get("size") if isinstance(size, dict) else None
                yield Pricing.SPOT, code, kind, size


def _code_of(location: Any) -> Any:
    """The region code of a price list's location name; an unknown name stays as served (its
    record is rejected: `fetch` asks only `LOCATIONS`)."""
    codes = {name: code for code, name in LOCATIONS.items()}
    return codes.get(location, location) if isinstance(location, str) else location


def _type_of(entry: Any) -> Any:
    return entry.get("Instance Type") if isinstance(entry, dict) else None


def _records_of(answers: list[Any]) -> list[tuple[Pricing | None, Any, Any, bytes]]:
    """Every answer's records, each once; with several answers, one that is not JSON or of
    neither shape is one malformed record (the others are read), alone it fails the parse."""
    records: list[tuple[Pricing | None, Any, Any, bytes]] = []
    for n, answer in enumerate(answers, start=1):
        try:
            decoded = _decoded(answer) if isinstance(answer, str | bytes) else answer
            found = list(_records(decoded))
        except ProviderPayloadError as exc:
            if len(answers) == 1:
                raise
            found = [(None, f"answer {n}: {exc}", None, str(answer)[:MAX_RAW_CHARS])]
        for pricing, region, kind, raw in found:
            if pricing is not None and not all(isinstance(v, str | None) for v in (region, kind)):
                pricing, region, kind = None, "region or instance type is not text", None
            records.append((pricing, region, kind, orjson.dumps(raw)))
    return list(dict.fromkeys(records))


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    records = _records_of(_answers(payload))
    batch = OfferBatch(
        NAME, observed_at, raw_of=lambda i: records[i][3].decode(),
        id_of=lambda i: f"{records[i][2]}@{records[i][1]}" if records[i][0] else None,
    )  # fmt: skip
    for i, (pricing, region, instance_type, raw) in enumerate(records):
        if pricing is None:
            batch.reject(i, str(region))
            continue
        try:
            batch.add(i, _offers_of(pricing, region, instance_type, orjson.loads(raw)))
        except RECORD_ERRORS as exc:
            batch.reject(i, reason_of(exc))
    return batch.finish()


def _price(pricing: Pricing, raw: dict[str, Any]) -> float | None:
    """USD per instance-hour, or None where the answer offers none (`N/A*`)."""
    if pricing is Pricing.ON_DEMAND:
        text = raw["price"]
    else:
        linux = [c for c in raw["valueColumns"] if c.get("name") == "linux"]
        if not linux:
            return None
        text = linux[0]["prices"]["USD"]
    if not isinstance(text, str):
        raise TypeError(f"price {text!r} is not a decimal string")
    return None if text.startswith(NO_PRICE) else decimal("price", text)


def _offers_of(
    pricing: Pricing, region: Any, instance_type: Any, raw: dict[str, Any]
) -> list[dict[str, Any]]:
    if not isinstance(instance_type, str) or not isinstance(region, str):
        raise ValueError("record has no instance type or region")
    if pricing is Pricing.ON_DEMAND and region not in LOCATIONS:
        raise ValueError(f"price-list location {region!r} is not one of LOCATIONS (not asked)")
    machine: Machine | None = MACHINES.get(instance_type)
    if machine is None:
        if GPU_FAMILY.match(instance_type):
            raise ValueError(
                f"GPU instance type {instance_type!r} is not in scrapers/data/"
                "aws_instance_types.csv; add it with its source"
            )
        return []  # a CPU type: not a GPU offer
    price = _price(pricing, raw)
    if price is None:
        return []
    machine.check_whole_gpus()
    return [
        {
            **machine.offer_fields(),
            "offer_id": f"{instance_type}@{region}",
            "pricing": pricing,
            "price_per_hour": price,  # AWS quotes the instance
            "currency": CURRENCY,
            "region": region,
            "available": True,  # listed at a price (LISTED_ONLY), not stock
        }
    ]
