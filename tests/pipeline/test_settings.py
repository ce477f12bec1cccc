from __future__ import annotations

from datetime import timedelta

import pytest

from pipeline.settings import DEFAULT_DB, Settings, SettingsError, parse_duration
from scrapers import sources


def test_defaults_collect_every_provider_at_its_documented_interval():
    settings = Settings.load()
    assert settings.db == DEFAULT_DB
    assert settings.providers == list(sources()), "by default every registered source is collected"
    for name, source in sources().items():
        assert settings.interval(name) == source.interval, f"{name}: its module's INTERVAL"
    assert settings.interval("ecb") == timedelta(days=1)
    assert settings.interval("aws") == settings.interval("azure") == timedelta(hours=1)
    assert settings.interval("scaleway") == settings.interval("verda") == timedelta(hours=1)
    assert settings.interval("ovhcloud") == settings.interval("hetzner") == timedelta(hours=6)
    assert settings.interval("vastai") == timedelta(minutes=10)
    assert settings.interval("runpod") == settings.interval("lambda") == timedelta(minutes=15)
    assert settings.interval("coreweave") == timedelta(hours=6)
    assert settings.interval("gcp") == timedelta(hours=12)
    assert settings.interval("oci") == timedelta(hours=24)
    assert settings.interval("nebius") == settings.interval("hotaisle") == timedelta(hours=6)
    assert settings.interval("mithril") == timedelta(minutes=15)
    assert settings.stale_threshold("vastai") == timedelta(minutes=30)
    assert settings.retention == timedelta(days=90)


def test_environment_overrides_the_defaults(monkeypatch):
    monkeypatch.setenv("GPUPRICES_DB", "/tmp/elsewhere.duckdb")
    monkeypatch.setenv("GPUPRICES_PROVIDERS", "vastai,lambda")
    monkeypatch.setenv("GPUPRICES_INTERVALS__VASTAI", "5m")
    monkeypatch.setenv("GPUPRICES_STALE_AFTER__LAMBDA", "2h")
    settings = Settings.load()
    assert str(settings.db) == "/tmp/elsewhere.duckdb"
    assert settings.providers == ["vastai", "lambda"]
    assert settings.interval("vastai") == timedelta(minutes=5)
    assert settings.stale_threshold("vastai") == timedelta(minutes=15)
    assert settings.stale_threshold("lambda") == timedelta(hours=2)


def test_a_toml_file_is_read_and_the_environment_wins_over_it(tmp_path, monkeypatch):
    config = tmp_path / "gpuprices.toml"
    config.write_text(
        'db = "/data/from-file.duckdb"\nport = 9000\n'
        '[intervals]\ncoreweave = "12h"\n[api_keys]\nLAMBDA_API_KEY = "s3cret-in-file"\n'
    )
    monkeypatch.setenv("GPUPRICES_PORT", "9100")
    settings = Settings.load(config)
    assert str(settings.db) == "/data/from-file.duckdb"
    assert settings.port == 9100
    assert settings.interval("coreweave") == timedelta(hours=12)
    assert settings.provider_env({})["LAMBDA_API_KEY"] == "s3cret-in-file"
    assert settings.provider_env({"LAMBDA_API_KEY": "from-env"})["LAMBDA_API_KEY"] == "from-env"
    assert "s3cret" not in repr(settings) and "s3cret" not in settings.model_dump_json()


def test_config_file_from_the_environment(tmp_path, monkeypatch):
    config = tmp_path / "c.toml"
    config.write_text("port = 8123\n")
    monkeypatch.setenv("GPUPRICES_CONFIG", str(config))
    assert Settings.load().port == 8123


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"providers": ["nosuchcloud"]}, "unknown provider 'nosuchcloud'"),
        ({"intervals": {"vastai": "soon"}}, "not a duration"),
        ({"port": 0}, "port"),
    ],
)
def test_invalid_settings_are_one_error_naming_the_setting(overrides, message):
    with pytest.raises(SettingsError, match=message):
        Settings.load(**overrides)


def test_a_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(SettingsError, match="does not exist"):
        Settings.load(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("6h", 21600), ("1d", 86400), (45, 45)]
)
def test_durations_read_as_people_write_them(text, seconds):
    assert parse_duration(text) == timedelta(seconds=seconds)


def test_the_lake_snapshot_expiry_reaches_the_lake_and_must_be_positive(monkeypatch):
    lake = "ducklake:postgres:dbname=gpuprices host=db"
    monkeypatch.setenv("GPUPRICES_WAREHOUSE", lake)
    monkeypatch.setenv("GPUPRICES_LAKE_DATA_PATH", "s3://bucket/gpuprices/")
    target = Settings().warehouse_target
    assert target.expire_snapshots_after == timedelta(days=1)  # the default
    monkeypatch.setenv("GPUPRICES_LAKE_EXPIRE_SNAPSHOTS_AFTER", "2d")
    assert Settings().warehouse_target.expire_snapshots_after == timedelta(days=2)
    monkeypatch.setenv("GPUPRICES_LAKE_EXPIRE_SNAPSHOTS_AFTER", "0s")
    with pytest.raises(ValueError, match="GPUPRICES_LAKE_EXPIRE_SNAPSHOTS_AFTER must be positive"):
        Settings()
