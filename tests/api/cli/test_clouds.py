"""The clouds' published prices beside the marketplaces: `collect --replay gcp=DIR oci=FILE`
then `gpuprices offers`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from api.cli.commands import app
from tests.conftest import FIXTURES

runner = CliRunner()


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def clouds_db(db_path):
    invoke(
        "collect", "--replay", f"gcp={FIXTURES / 'gcp_skus'}",
        "--replay", f"oci={FIXTURES / 'oci_products.json'}",
        "--replay", f"vastai={FIXTURES / 'vastai_bundles.json'}",
        "--replay", f"lambda={FIXTURES / 'lambda_instance_types.json'}",
        "--db", str(db_path),
    )  # fmt: skip
    return db_path


def offers(db_path, *args: str) -> list[dict]:
    result = invoke("offers", *args, "--format", "jsonl", "--db", str(db_path))
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_a100_80gb_lists_google_and_oracle_beside_the_marketplaces_cheapest_first(clouds_db):
    got = offers(clouds_db, "--gpu", "A100-80GB")
    assert {"gcp", "oci", "vastai"} <= {o["provider"] for o in got}
    assert {o["gpu"] for o in got} == {"A100-80GB"}
    per_gpu = [o["price_per_gpu_hour"] for o in got]
    assert per_gpu == sorted(per_gpu)
    google = {(o["region"], o["pricing"]) for o in got if o["provider"] == "gcp"}
    assert {("europe-west4", "on_demand"), ("europe-west4", "spot")} <= google
    assert {("us-central1", "on_demand"), ("us-central1", "spot")} <= google


def test_the_eea_filter_keeps_the_clouds_european_regions_only(clouds_db):
    got = offers(clouds_db, "--gpu", "H100-80GB", "--jurisdiction", "eea")
    places = {(o["provider"], o["region"]) for o in got}
    assert {("gcp", "europe-west4"), ("gcp", "europe-west3"), ("oci", "eu-frankfurt-1")} <= places
    assert not {region for provider, region in places if region.startswith("us-")}


def test_oracles_h100_shape_is_eight_gpus_at_its_per_gpu_price(clouds_db):
    got = offers(clouds_db, "--gpu", "H100-80GB:8", "--provider", "oci")
    assert got and {(o["gpu_count"], o["price_per_gpu_hour"], o["price_per_hour"]) for o in got} \
        == {(8, 10.0, 80.0)}  # fmt: skip


def test_a_live_google_run_without_a_key_fails_that_provider_with_one_line(db_path):
    result = runner.invoke(app, ["collect", "--provider", "gcp", "--db", str(db_path)])
    assert "GCP_API_KEY is not set" in result.output
