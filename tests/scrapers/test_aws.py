"""AWS: the on-demand price-list file and the spot feed, parsed from recordings; fetch mocked."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from scrapers import ProviderHTTPError, ProviderPayloadError, aws
from scrapers.base import REPLAY_HEADER, build_client
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

SPOT = fixture_bytes("aws_spot.json")
ON_DEMAND = fixture_bytes("aws_ondemand_us-east-1.json")


def by_id(result, pricing):
    return {o.offer_id: o for o in result.offers if o.pricing == pricing}


def test_p5_on_demand_is_eight_h100_sxm_at_the_instance_price_and_its_per_gpu_price():
    p5 = by_id(aws.parse(ON_DEMAND, OBSERVED_AT), "on_demand")["p5.48xlarge@us-east-1"]
    assert (p5.gpu_raw, p5.gpu_count, p5.vram_gb, p5.form_factor) == ("H100", 8, 80.0, "SXM")
    assert p5.price_per_hour == 55.04
    assert p5.price_per_gpu_hour == pytest.approx(6.88)
    assert p5.price_quoted_per == "instance"
    assert p5.region == "us-east-1" and p5.currency == "USD"
    assert p5.available is True  # listed at a price, as CoreWeave's rate card


def test_the_spot_feed_gives_p5_a_spot_price_and_its_per_gpu_price():
    p5 = by_id(aws.parse(SPOT, OBSERVED_AT), "spot")["p5.48xlarge@us-east-1"]
    assert p5.price_per_hour == pytest.approx(19.4933)
    assert p5.price_per_gpu_hour == pytest.approx(19.4933 / 8)
    assert p5.gpu_count == 8 and p5.form_factor == "SXM"


def test_fractional_gpus_and_other_accelerators_are_rejected_with_their_reason():
    reasons = {r.record_id: r.reason for r in aws.parse(SPOT, OBSERVED_AT).rejects}
    assert "fraction of one L4" in reasons["g6f.large@us-east-1"]
    assert "fraction of one L4" in reasons["gr6f.4xlarge@us-east-1"]
    assert reasons["inf1.xlarge@us-east-1"] == "inf1.xlarge carries Inferentia, not a GPU"
    assert "Trainium" in reasons["trn1.2xlarge@us-east-1"]
    offered = {o.offer_id.split("@")[0] for o in aws.parse(SPOT, OBSERVED_AT).offers}
    assert not offered & {"g6f.large", "gr6f.4xlarge", "inf1.xlarge", "m5.large", "t1.micro"}


def test_an_exact_repeat_in_the_feed_is_read_once_and_a_conflicting_one_is_rejected():
    result = aws.parse(SPOT, OBSERVED_AT)
    assert [o.offer_id for o in result.offers].count("p4de.24xlarge@us-east-1") == 1
    body = orjson.loads(SPOT)
    sizes = body["config"]["regions"][1]["instanceTypes"][1]["sizes"]
    p5 = next(size for size in sizes if size["size"] == "p5.48xlarge")
    sizes.append({**p5, "valueColumns": [{"name": "linux", "prices": {"USD": "25.0"}}]})
    result = aws.parse(orjson.dumps(body), OBSERVED_AT)
    assert by_id(result, "spot")["p5.48xlarge@us-east-1"].price_per_hour == pytest.approx(19.4933)
    reasons = {r.reason for r in result.rejects if r.record_id == "p5.48xlarge@us-east-1"}
    assert reasons == {"duplicate offer_id 'p5.48xlarge@us-east-1' (spot)"}


def test_the_jsonp_spot_feed_reads_as_the_bare_one():
    wrapped = b"/* spot.js */\ncallback(" + SPOT + b");\n"
    assert aws.parse(wrapped, OBSERVED_AT).table.equals(aws.parse(SPOT, OBSERVED_AT).table)


def test_a_gpu_family_missing_from_the_table_is_a_reject_naming_the_table():
    body = orjson.loads(ON_DEMAND)
    entries = body["regions"]["US East (N. Virginia)"]
    entries["p9 48xlarge"] = {**next(iter(entries.values())), "Instance Type": "p9.48xlarge"}
    rejects = aws.parse(orjson.dumps(body), OBSERVED_AT).rejects
    assert [r.record_id for r in rejects] == ["p9.48xlarge@us-east-1"]
    assert "aws_instance_types.csv" in rejects[0].reason


@pytest.mark.parametrize("body", [b"", ON_DEMAND[: len(ON_DEMAND) // 2], b'{"other": 1}'])
def test_a_truncated_or_foreign_answer_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="aws"):
        aws.parse(body, OBSERVED_AT)


def _mock_regions(router, status=200, body=ON_DEMAND):
    for location in aws.LOCATIONS.values():
        url = aws.URL.format(location=location)
        router.get(url).mock(return_value=httpx.Response(status, content=body))


@respx.mock(assert_all_mocked=True)
def test_fetch_reads_each_regions_price_list_and_the_spot_feed(respx_mock, client_factory):
    _mock_regions(respx_mock, 404)
    respx_mock.get(aws.URL.format(location="US East (N. Virginia)")).mock(
        side_effect=[httpx.Response(429, headers={"Retry-After": "1"}),
                     httpx.Response(200, content=ON_DEMAND)])  # fmt: skip
    respx_mock.get(aws.SPOT_URL).mock(return_value=httpx.Response(200, content=SPOT))
    with client_factory() as client:
        payload = aws.fetch(client, None)
    result = aws.parse(payload, OBSERVED_AT)
    assert {"on_demand", "spot"} == {o.pricing for o in result.offers}
    assert client_factory.waits == [1.0]  # the 429's Retry-After, once


@respx.mock(assert_all_mocked=True)
def test_a_spot_feed_failing_past_the_retries_is_an_http_error(respx_mock, client_factory):
    _mock_regions(respx_mock)
    respx_mock.get(aws.SPOT_URL).mock(return_value=httpx.Response(503))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 503"):
        aws.fetch(client, None)


def test_a_directory_of_recorded_answers_replays_both_kinds():
    handler = aws.replay_directory(FIXTURES / "aws_answers")
    with build_client(httpx.MockTransport(handler)) as client:
        client.headers[REPLAY_HEADER] = "1"
        result = aws.parse(aws.fetch(client, None), OBSERVED_AT)
    regions = {(o.region, o.pricing) for o in result.offers}
    assert {("us-east-1", "on_demand"), ("eu-central-1", "on_demand"), ("us-east-1", "spot")} \
        <= regions  # fmt: skip


def test_a_price_list_location_not_asked_for_is_a_reject_not_a_region():
    body = orjson.loads(fixture_bytes("aws_ondemand_us-east-1.json"))
    entries = body["regions"]["US East (N. Virginia)"]
    key = "p5 48xlarge US East N. Virginia Linux"
    entries[key] = {**entries[key], "Location": "Frankfurt, DE"}
    result = aws.parse(orjson.dumps(body), OBSERVED_AT)
    assert "Frankfurt, DE" not in {o.region for o in result.offers}
    [reject] = [r for r in result.rejects if r.record_id == "p5.48xlarge@Frankfurt, DE"]
    assert "not one of LOCATIONS" in reject.reason
