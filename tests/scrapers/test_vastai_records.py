"""Any Vast.ai body: each record becomes its offers or one reject that keeps it as served."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.catalog import get_catalog
from pipeline.collection.normalize import normalize
from scrapers import vastai
from tests.conftest import OBSERVED_AT, fixture_bytes

RECORDS = orjson.loads(fixture_bytes("vastai_bundles.json"))["offers"]
FIELDS = [
    "id", "num_gpus", "gpu_name", "gpu_ram", "dph_base", "min_bid", "geolocation", "rentable",
    "rented", "cpu_cores_effective", "cpu_ram", "disk_space", "verification", "reliability2",
    "reliability",
]  # fmt: skip
MISSING = object()

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),  # what orjson writes
    st.integers(min_value=-3, max_value=10),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1, max_value=2000),
    st.sampled_from(["", "verified", "A100 SXM4", "RTX 4090", "free", "2", "Texas, US"]),
    st.just(MISSING),
)


@st.composite
def records(draw: st.DrawFn) -> list[object]:
    found: list[object] = []
    for i in range(draw(st.integers(min_value=0, max_value=6))):
        record = dict(draw(st.sampled_from(RECORDS)), id=1000 + i)
        for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
            value = draw(values)
            if value is MISSING:
                record.pop(field, None)
            else:
                record[field] = value
        kind = draw(st.integers(min_value=0, max_value=9))
        if kind == 0:
            found.append(draw(st.sampled_from([None, 3, "x", [1]])))  # not an object at all
        else:
            found.append(record)
    return found


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=records())
def test_every_record_is_offers_or_one_reject_with_its_raw_record(body: list[object]):
    parsed = vastai.parse(orjson.dumps({"offers": body}), OBSERVED_AT)
    on_demand = [row.offer_id for row in parsed.offers if row.pricing == "on_demand"]
    assert len(set(on_demand)) == len(on_demand)
    assert len(on_demand) + len(parsed.rejects) == len(body)
    for reject in parsed.rejects:
        assert orjson.loads(reject.raw) in body and reject.reason
    # Ingest then holds out what the parser built outside the plausible band, with its reason.
    result = normalize(parsed, get_catalog())
    held_out = result.rejects[len(parsed.rejects) :]
    assert len(result.offers) + len(held_out) == len(parsed.offers)
    assert all("plausible band" in reject.reason for reject in held_out)
