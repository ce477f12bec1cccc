"""No Docker engine runs here: the compose file and Dockerfile are checked against the settings."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from pipeline.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICE = COMPOSE["services"]["gpuprices"]


def test_the_service_runs_gpuprices_serve_on_the_published_port():
    command = SERVICE["command"]
    assert command[:2] == ["gpuprices", "serve"]
    port = command[command.index("--port") + 1]
    assert SERVICE["ports"] == [f"{port}:{port}"]
    assert int(port) == Settings().port


def test_the_database_lives_on_a_named_volume():
    db = Path(SERVICE["environment"]["GPUPRICES_DB"])
    [mount] = SERVICE["volumes"]
    volume, target = mount.split(":")
    assert volume in COMPOSE["volumes"]
    assert db.parent == Path(target)


def test_the_health_check_asks_healthz_on_the_same_port():
    probe = " ".join(SERVICE["healthcheck"]["test"])
    port = SERVICE["command"][SERVICE["command"].index("--port") + 1]
    assert f"127.0.0.1:{port}/healthz" in probe


def test_keys_come_from_an_env_file_and_it_restarts():
    assert SERVICE["env_file"][0]["path"] == "gpuprices.env"
    assert SERVICE["restart"] == "unless-stopped"
    assert SERVICE["stop_signal"] == "SIGTERM"


def test_the_image_runs_the_same_command_and_database_path():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["gpuprices", "serve"]' in dockerfile
    assert f"GPUPRICES_DB={SERVICE['environment']['GPUPRICES_DB']}" in dockerfile


LAKE = {name: s for name, s in COMPOSE["services"].items() if "lake" in s.get("profiles", [])}


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_the_lake_profile_has_postgres_two_collectors_and_two_api_replicas():
    roles = sorted(_option(s["command"], "--role") for s in LAKE.values() if "command" in s)
    assert roles == ["api", "api", "collector", "collector"]
    assert LAKE["lake-postgres"]["image"].startswith("postgres:15")
    assert "profiles" not in SERVICE  # the single-file service stays the default


def test_the_lake_collectors_are_those_gpuprices_providers_generates():
    from api.cli.providers import COMPOSE_BEGIN, COMPOSE_END, lake_collectors_yaml
    from pipeline.base import collector_shares

    text = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    start, end = text.index(COMPOSE_BEGIN), text.index(COMPOSE_END) + len(COMPOSE_END) + 1
    assert text[start:end] == lake_collectors_yaml(collector_shares()), (
        "docker-compose.yml's lake collectors are stale: replace the lines from "
        f"{COMPOSE_BEGIN.strip()!r} to {COMPOSE_END.strip()!r} with the output of "
        "`gpuprices providers --format compose`"
    )


def test_the_collectors_split_the_providers_and_stand_by_for_each_other():
    from scrapers import sources

    collectors = [s for s in LAKE.values() if "collector" in s.get("command", [])]
    owned = [set(_option(s["command"], "--providers").split(",")) for s in collectors]
    standby = [set(s["environment"]["GPUPRICES_STANDBY_FOR"].split(",")) for s in collectors]
    assert owned[0].isdisjoint(owned[1])
    assert owned[0] | owned[1] == set(sources())
    assert abs(len(owned[0]) - len(owned[1])) <= 1
    assert standby == [owned[1], owned[0]]


def test_the_lake_collector_of_the_ecb_rates_collects_every_provider_quoting_another_currency():
    from scrapers import PROVIDERS

    collectors = [s for s in LAKE.values() if "collector" in s.get("command", [])]
    [with_rates] = [
        set(_option(s["command"], "--providers").split(","))
        for s in collectors
        if "ecb" in _option(s["command"], "--providers").split(",")
    ]
    priced_in_other = {name for name, p in PROVIDERS.items() if p.currency != "USD"}
    assert priced_in_other and priced_in_other <= with_rates


def test_every_lake_service_opens_the_same_lake_on_the_shared_volume():
    postgres = LAKE["lake-postgres"]["environment"]
    for name, service in LAKE.items():
        if name == "lake-postgres":
            continue
        env = service["environment"]
        settings = Settings(
            warehouse=env["GPUPRICES_WAREHOUSE"], lake_data_path=env["GPUPRICES_LAKE_DATA_PATH"]
        )
        target = settings.warehouse_target
        assert f"host=lake-postgres user={postgres['POSTGRES_USER']}" in str(target)
        assert f"dbname={postgres['POSTGRES_DB']}" in str(target)
        [mount] = service["volumes"]
        volume, path = mount.split(":")
        assert volume in COMPOSE["volumes"]
        assert Path(env["GPUPRICES_LAKE_DATA_PATH"]).is_relative_to(path)
        assert service["depends_on"]["lake-postgres"]["condition"] == "service_healthy"


def test_the_lake_s3_profile_reaches_its_store_path_style_with_the_stores_own_key():
    from warehouse.lake_s3 import s3_client

    services = {n: s for n, s in COMPOSE["services"].items() if "lake-s3" in s.get("profiles", [])}
    store = services["lake-s3"]
    [config] = store["configs"]
    assert f"-s3.config={config['target']}" in store["command"]
    identities = json.loads(COMPOSE["configs"][config["source"]]["content"])["identities"]
    [credentials] = identities[0]["credentials"]
    roles = sorted(_option(s["command"], "--role") for s in services.values() if "gpuprices" in
                   s.get("command", []))
    assert roles == ["api", "collector"]
    for service in services.values():
        if "gpuprices" not in service.get("command", []):
            continue
        env = service["environment"]
        target = Settings(
            warehouse=env["GPUPRICES_WAREHOUSE"], lake_data_path=env["GPUPRICES_LAKE_DATA_PATH"]
        ).warehouse_target
        assert str(target).endswith("(data s3://gpuprices/lake/)")
        client = s3_client(env)
        assert (client.endpoint, client.use_ssl) == ("lake-s3:8333", False)  # http: no TLS
        assert client.url_style == "path"
        assert env["AWS_ACCESS_KEY_ID"] == credentials["accessKey"]
        assert env["AWS_SECRET_ACCESS_KEY"] == credentials["secretKey"]
        assert service["depends_on"]["lake-s3-bucket"]["condition"] == (
            "service_completed_successfully"
        )
        assert "s3.bucket.create -name gpuprices" in " ".join(
            services["lake-s3-bucket"]["entrypoint"]
        )


def test_the_image_has_the_lake_extra():
    assert "'.[lake]'" in (ROOT / "Dockerfile").read_text()


def _dockerfile_instructions() -> list[tuple[str, str]]:
    lines = (ROOT / "Dockerfile").read_text().replace("\\\n", " ").splitlines()
    return [
        (word.upper(), rest.strip())
        for word, _, rest in (line.strip().partition(" ") for line in lines)
        if word and not word.startswith("#")
    ]


def test_the_build_context_leaves_out_the_virtualenv_data_git_and_caches():
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".venv", "data", ".git", "tests", "**/__pycache__", ".pytest_cache"} <= ignored
    assert "gpuprices.env" in ignored  # keys never baked into an image
    copied = [
        source
        for word, args in _dockerfile_instructions()
        if word == "COPY"
        for source in args.split()[:-1]
    ]
    assert copied and not set(copied) & ignored  # what the image needs is still sent


def test_the_image_runs_as_an_unprivileged_user_that_owns_the_data_volume():
    instructions = _dockerfile_instructions()
    users = [args for word, args in instructions if word == "USER"]
    assert users, "the image must name a USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    words = [word for word, _ in instructions]
    assert words.index("USER") > max(i for i, w in enumerate(words) if w == "RUN")
    volume = next(args for word, args in instructions if word == "VOLUME")
    chown = next(args for word, args in instructions if word == "RUN" and "chown" in args)
    assert all(path in chown for path in json.loads(volume))
    assert f"--uid {user}" in chown


def test_every_service_on_our_image_can_build_it():
    ours = {n: s for n, s in COMPOSE["services"].items() if s.get("image", "").startswith("gpu")}
    assert set(ours) >= {"gpuprices", *(n for n in LAKE if n != "lake-postgres")}
    assert all(service.get("build") == "." for service in ours.values())


def _make_dry_run(target: str, tmp_path: Path) -> str:
    """The commands `make <target>` would run on a machine without a virtualenv yet."""
    venv = tmp_path / "venv"
    result = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_make_run_installs_only_what_running_needs_and_make_test_adds_the_dev_tools(tmp_path):
    run = _make_dry_run("run", tmp_path)
    assert "pip install --quiet -e '.[lake]'" in run and "dev" not in run
    assert "gpuprices serve" in run
    assert "pip install --quiet -e '.[dev,lake,docs]'" in _make_dry_run("test", tmp_path)
