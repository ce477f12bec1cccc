"""Nebius: its prices page (recorded: tests/fixtures/nebius_prices.html, its RSC table blocks)
and, with an IAM token, its gRPC price API (a fake server on loopback, answering from
tests/fixtures/nebius_api.json)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc
import orjson
import pytest
from nebius.api.nebius.billing.v1alpha1 import (
    CostBreakdown,
    EstimateRequest,
    EstimateResponse,
    GeneralTotalCost,
    ResourceGroupCost,
)
from nebius.api.nebius.common.v1 import ResourceMetadata
from nebius.api.nebius.compute.v1 import (
    ListPlatformsRequest,
    ListPlatformsResponse,
    Platform,
    PlatformSpec,
    PlatformStatus,
    Preset,
    PresetResources,
)
from nebius.api.nebius.iam.v2 import GetProjectRequest, Project, ProjectSpec

from scrapers import (
    PROVIDERS,
    Pricing,
    ProviderHTTPError,
    ProviderPayloadError,
    credentials_from_env,
    nebius,
)
from scrapers.base import Credentials
from scrapers.errors import MissingCredentialsError
from tests.conftest import OBSERVED_AT, fixture_bytes
from tests.scrapers.test_keyed_apis import replayed_offers

BODY = fixture_bytes("nebius_prices.html")


def offers_by_key(body: bytes = BODY):
    return {(o.offer_id, o.pricing): o for o in nebius.parse(body, OBSERVED_AT).offers}


def test_each_priced_gpu_is_listed_on_demand_and_preemptible_in_every_nebius_region():
    offers = offers_by_key()
    models = {oid.split("@")[0] for oid, _ in offers}
    assert models == {"nvidia-hgx-b300", "nvidia-hgx-b200", "nvidia-hgx-h200",
                      "nvidia-hgx-h100", "nvidia-rtx-pro-6000"}  # fmt: skip
    assert len(offers) == 5 * 2 * len(nebius.REGIONS)
    assert {o.region for o in offers.values()} == set(nebius.REGIONS)
    assert {"eu-north1", "eu-west1", "eu-north2"} <= set(nebius.REGIONS)


def test_prices_are_per_gpu_hour_with_one_gpus_share_of_vcpus_and_ram():
    h100 = offers_by_key()[("nvidia-hgx-h100@eu-north1", Pricing.ON_DEMAND)]
    assert (h100.gpu_count, h100.price_quoted_per, h100.price_per_gpu_hour) == (1, "gpu", 3.85)
    assert (h100.vcpus, h100.ram_gb, h100.vram_gb) == (16, 200, 80)


def test_the_preemptible_column_is_spot():
    offer = offers_by_key()[("nvidia-hgx-b300@us-central1", Pricing.SPOT)]
    assert offer.price_per_gpu_hour == pytest.approx(4.30)


def test_contact_us_and_dashes_give_no_offer_and_no_reject():
    result = nebius.parse(BODY, OBSERVED_AT)
    assert not any("nvl72" in o.offer_id for o in result.offers)
    assert {r.record_id for r in result.rejects} == {"nvidia-l40s-with-intel-cpu",
                                                     "nvidia-l40s-with-amd-cpu"}  # fmt: skip


def test_a_from_price_over_a_range_of_presets_is_a_reject_with_its_reason():
    [intel, _] = nebius.parse(BODY, OBSERVED_AT).rejects
    assert "'from $0.90' is the lowest of a range of configurations" in intel.reason
    assert '"16-192"' in intel.raw


def test_columns_are_found_by_their_labels_not_their_positions():
    swapped = BODY.replace(b'\\"Preemptible, GPU-hour\\",\\"On-demand, GPU-hour\\"',
                           b'\\"On-demand, GPU-hour\\",\\"Preemptible, GPU-hour\\"')  # fmt: skip
    h100 = offers_by_key(swapped)[("nvidia-hgx-h100@eu-north1", Pricing.ON_DEMAND)]
    assert h100.price_per_gpu_hour == pytest.approx(2.15)  # the cells did not move


def test_a_price_column_that_is_not_per_gpu_hour_is_a_changed_page():
    body = BODY.replace(b"On-demand, GPU-hour", b"On-demand, per hour")
    with pytest.raises(ProviderPayloadError, match="not per GPU-hour"):
        nebius.parse(body, OBSERVED_AT)


def test_a_page_chunk_split_across_two_pushes_is_joined_before_reading():
    head, tail = BODY.split(b'\\"title\\":\\"NVIDIA GPU Instances', 1)
    push = b'"])</script><script>self.__next_f.push([1,"'
    split = head + push + b'\\"title\\":\\"NVIDIA GPU Instances' + tail
    assert offers_by_key(split) == offers_by_key()


def test_blocks_moved_out_of_the_pushed_payload_are_still_found():
    start, end = BODY.index(b"self.__next_f.push([1,"), BODY.index(b'"])</script>')
    excerpt = BODY[start + len(b"self.__next_f.push([1,") + 1 : end]  # the recorded excerpt
    page = b"<html><body><script>window.__DATA__ = '" + excerpt + b"';</script></body></html>"
    assert offers_by_key(page) == offers_by_key()


def test_a_page_without_the_table_blocks_is_a_payload_error():
    body = BODY.replace(b"highlight-table-block", b"rich-text-block")
    with pytest.raises(ProviderPayloadError, match="no GPU price table block"):
        nebius.parse(body, OBSERVED_AT)


# the price API: `fetch` runs the nebius SDK for real against a fake gRPC server on loopback,
# which answers from tests/fixtures/nebius_api.json (built in `API_SHAPE`, see the fixtures
# README): platforms and presets, and each preset's estimate, plain or preemptible.

KEY = "nebius-iam-token-for-the-test"
API_BODY = fixture_bytes("nebius_api.json")
PROJECT = "project-e00test0000000000000"


@dataclass
class FakeNebius:
    """What the fake server answers and what it was asked."""

    answer: dict = field(default_factory=lambda: orjson.loads(API_BODY))
    fail_with: list[grpc.StatusCode] = field(default_factory=list)  # then answer
    tokens: list[str] = field(default_factory=list)
    estimates: list[tuple[str, str, bool]] = field(default_factory=list)

    def _called(self, context) -> None:
        self.tokens.append(dict(context.invocation_metadata()).get("authorization", ""))
        if self.fail_with:
            context.abort(self.fail_with.pop(0), "refused by the fake")

    def get_project(self, request, context):
        self._called(context)
        return Project(metadata=ResourceMetadata(id=request.id),
                       spec=ProjectSpec(region=self.answer["region"]))  # fmt: skip

    def list_platforms(self, request, context):
        self._called(context)
        assert request.parent_id == PROJECT
        platforms: dict[str, list[dict]] = {}
        for preset in self.answer["presets"]:
            platforms.setdefault(preset["platform"], []).append(preset)
        platforms.setdefault("cpu-d3", [])  # a CPU platform: its preset gives no estimate
        return ListPlatformsResponse(items=[
            Platform(
                metadata=ResourceMetadata(name=name, parent_id=PROJECT),
                spec=PlatformSpec(
                    gpu_memory_gigabytes=presets[0]["gpu_memory_gigabytes"] if presets else 0,
                    presets=[Preset(name=p["preset"], resources=PresetResources(
                        vcpu_count=p["vcpu_count"], memory_gibibytes=p["memory_gibibytes"],
                        gpu_count=p["gpu_count"])) for p in presets]
                    or [Preset(name="4vcpu-16gb", resources=PresetResources(vcpu_count=4))],
                ),
                status=PlatformStatus(allowed_for_preemptibles=any(
                    p["preemptible_usd_per_hour"] is not None for p in presets)),
            )
            for name, presets in platforms.items()
        ])  # fmt: skip

    def estimate(self, request, context):
        self._called(context)
        instance = request.resource_spec.compute_instance_spec
        assert instance.metadata.parent_id == PROJECT
        resources, preemptible = instance.spec.resources, instance.spec.HasField("preemptible")
        self.estimates.append((resources.platform, resources.preset, preemptible))
        wanted = (resources.platform, resources.preset)
        [preset] = [p for p in self.answer["presets"] if (p["platform"], p["preset"]) == wanted]
        cost = preset["preemptible_usd_per_hour" if preemptible else "on_demand_usd_per_hour"]
        return EstimateResponse(hourly_cost=ResourceGroupCost(
            general=GeneralTotalCost(total=CostBreakdown(cost=cost))))  # fmt: skip


def _handler(service: str, methods: dict):
    return grpc.method_handlers_generic_handler(service, {
        name: grpc.unary_unary_rpc_method_handler(
            call, request_deserializer=request.FromString,
            response_serializer=lambda message: message.SerializeToString())
        for name, (request, call) in methods.items()
    })  # fmt: skip


@pytest.fixture
def fake_nebius(monkeypatch):
    """A fake Nebius API on 127.0.0.1 (the SDK's generated messages, grpc's own server), the
    module pointed at it, NEBIUS_PROJECT_ID set."""
    fake = FakeNebius()
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([
        _handler("nebius.iam.v2.ProjectService", {"Get": (GetProjectRequest, fake.get_project)}),
        _handler("nebius.compute.v1.PlatformService",
                 {"List": (ListPlatformsRequest, fake.list_platforms)}),
        _handler("nebius.billing.v1alpha1.CalculatorService",
                 {"Estimate": (EstimateRequest, fake.estimate)}),
    ])  # fmt: skip
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    monkeypatch.setattr(nebius, "API_ADDRESS", f"127.0.0.1:{port}")
    monkeypatch.setattr(nebius, "API_TIMEOUT_S", 10.0)
    monkeypatch.setenv(nebius.PROJECT_ENV, PROJECT)
    yield fake
    server.stop(grace=None)


def api_offers(body: bytes):
    return sorted((o.offer_id, o.pricing, o.price_per_hour, o.available, o.region)
                  for o in nebius.parse(body, OBSERVED_AT).offers)  # fmt: skip


def test_the_token_is_the_sdks_own_variable_and_optional():
    assert (nebius.ENV_KEY, nebius.KEY_REQUIRED) == ("NEBIUS_IAM_TOKEN", False)
    assert credentials_from_env(PROVIDERS["nebius"], {}) is None  # no token: the page
    assert credentials_from_env(PROVIDERS["nebius"], {"NEBIUS_IAM_TOKEN": KEY}) == Credentials(KEY)


def test_with_a_token_fetch_reads_the_api_and_joins_its_answers(fake_nebius, client_factory):
    with client_factory() as client:
        body = nebius.fetch(client, Credentials(KEY))
    assert api_offers(body) == api_offers(API_BODY)
    assert set(fake_nebius.tokens) == {f"Bearer {KEY}"}  # the token sent as a bearer, only so
    assert KEY.encode() not in body
    # each GPU preset estimated plain, and preemptible where its platform allows it
    assert sorted(fake_nebius.estimates) == sorted(
        [(p["platform"], p["preset"], False) for p in fake_nebius.answer["presets"]]
        + [(p["platform"], p["preset"], True) for p in fake_nebius.answer["presets"]
           if p["preemptible_usd_per_hour"] is not None]
    )  # fmt: skip


def test_fetch_works_from_a_thread_whose_event_loop_is_running(fake_nebius, client_factory):
    """The SDK refuses synchronous calls in an async context; fetch keeps it off the caller's.
    (A thread of the test's own: the suite's main thread may already run a loop, Playwright's.)"""

    async def inside_a_loop() -> bytes:
        with client_factory() as client:
            return nebius.fetch(client, Credentials(KEY))

    with ThreadPoolExecutor(max_workers=1) as thread:
        body = thread.submit(asyncio.run, inside_a_loop()).result()
    assert api_offers(body) == api_offers(API_BODY)


def test_api_offers_are_each_preset_on_demand_and_preemptible_in_the_projects_region():
    offers = {(o.offer_id, o.pricing): o for o in nebius.parse(API_BODY, OBSERVED_AT).offers}
    h100 = offers[("gpu-h100-sxm/8gpu-128vcpu-1600gb@eu-north1", Pricing.ON_DEMAND)]
    assert (h100.gpu_raw, h100.gpu_count, h100.price_per_hour, h100.price_per_gpu_hour) == (
        "NVIDIA H100 SXM", 8, 23.6, 2.95)  # fmt: skip
    assert (h100.vcpus, h100.vram_gb, h100.region, h100.available) == (128, 80, "eu-north1", True)
    assert h100.ram_gb == pytest.approx(1600 * 1.073741824)
    assert offers[("gpu-h100-sxm/8gpu-128vcpu-1600gb@eu-north1", Pricing.SPOT)].price_per_hour == 10
    # L40S is not allowed for preemptibles: on-demand only; `-a` (its Intel host) is no board
    l40s = [o for (oid, _), o in offers.items() if oid.startswith("gpu-l40s-a/")]
    assert [(o.pricing, o.gpu_raw) for o in l40s] == [(Pricing.ON_DEMAND, "NVIDIA L40S")]


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAUTHENTICATED,
                                  grpc.StatusCode.PERMISSION_DENIED])  # fmt: skip
def test_a_refused_token_names_the_variable_and_never_the_token(fake_nebius, client_factory, code):
    fake_nebius.fail_with = [code]
    with client_factory() as client, pytest.raises(ProviderHTTPError) as exc:
        nebius.fetch(client, Credentials(KEY))
    assert code.name in str(exc.value) and "NEBIUS_IAM_TOKEN" in str(exc.value)
    assert KEY not in str(exc.value) and KEY not in repr(exc.value.__cause__)


def test_an_unavailable_api_is_retried(fake_nebius, client_factory):
    fake_nebius.fail_with = [grpc.StatusCode.UNAVAILABLE]
    with client_factory() as client:
        assert api_offers(nebius.fetch(client, Credentials(KEY))) == api_offers(API_BODY)


def test_an_api_that_stays_unavailable_is_a_clear_failure(fake_nebius, client_factory):
    fake_nebius.fail_with = [grpc.StatusCode.UNAVAILABLE] * 10
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="UNAVAILABLE"):
        nebius.fetch(client, Credentials(KEY))


def test_a_project_without_gpu_presets_is_a_payload_error(fake_nebius, client_factory):
    fake_nebius.answer["presets"] = []
    with client_factory() as client:
        body = nebius.fetch(client, Credentials(KEY))
    with pytest.raises(ProviderPayloadError, match="no GPU preset.*NEBIUS_PROJECT_ID"):
        nebius.parse(body, OBSERVED_AT)


def test_a_token_without_a_project_says_which_variable_is_missing(monkeypatch, client_factory):
    monkeypatch.delenv(nebius.PROJECT_ENV, raising=False)
    with client_factory() as client, pytest.raises(MissingCredentialsError, match="NEBIUS_PROJECT"):
        nebius.fetch(client, Credentials(KEY))


def test_with_a_token_a_replayed_api_answer_lists_offers_with_availability(monkeypatch, db_path):
    monkeypatch.setenv(nebius.ENV_KEY, KEY)
    monkeypatch.setenv(nebius.PROJECT_ENV, PROJECT)
    offers = replayed_offers("nebius", "nebius_api.json", db_path, KEY)
    assert {(o["offer_id"], o["available"]) for o in offers} == {
        (oid, True) for oid, *_ in api_offers(API_BODY)
    }
    assert {o["region"] for o in offers} == {"eu-north1"}
    assert all(o["gpu"] for o in offers), [o["gpu_raw"] for o in offers]
