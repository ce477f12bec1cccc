"""No Docker engine runs here: the compose file and Dockerfile are checked against the settings."""

from __future__ import annotations

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
