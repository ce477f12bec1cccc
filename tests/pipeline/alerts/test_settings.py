"""The alert settings: read from GPUPRICES_* like the others, the API key never shown."""

from __future__ import annotations

from datetime import timedelta

import pytest

import pipeline.alerts
from pipeline.settings import Settings, SettingsError


def test_alert_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPUPRICES_API_KEY", "s3cret-management-key")
    monkeypatch.setenv("GPUPRICES_ALLOW_PRIVATE_WEBHOOKS", "true")
    monkeypatch.setenv("GPUPRICES_WEBHOOK_BACKOFF", "1m")
    settings = Settings.load()
    assert settings.api_key is not None
    assert settings.api_key.get_secret_value() == "s3cret-management-key"
    assert settings.allow_private_webhooks is True
    assert settings.webhook_backoff == timedelta(minutes=1)
    assert "s3cret" not in repr(settings) and "s3cret" not in settings.model_dump_json()


def test_safe_defaults_https_only_no_key_and_a_ten_second_timeout():
    settings = Settings.load()
    assert settings.allow_private_webhooks is False and settings.api_key is None
    assert settings.webhook_timeout_s == 10


def test_an_empty_api_key_is_refused(monkeypatch):
    monkeypatch.setenv("GPUPRICES_API_KEY", "")
    with pytest.raises(SettingsError, match="api_key"):
        Settings.load()


def test_the_public_names_of_the_alerts_package_are_pinned():
    assert sorted(pipeline.alerts.__all__) == sorted(
        [
            "ALERT_SCOPE", "DEFAULT_BAND", "DEFAULT_COOLDOWN", "AlertError", "AlertKind",
            "AlertNotFoundError",
            "AlertRule", "AlertSpec", "AlertStatus", "AttemptResult", "Condition",
            "CreatedAlert", "DeliveryLog", "InvalidAlertError", "Resolver", "TargetError",
            "UnresolvableTargetError", "UnsafeTargetError", "WebhookDispatcher", "WebhookSender",
            "alert_deliveries", "check_target", "create_alert", "delete_alert", "deliver_due",
            "evaluate_alerts",
            "get_alert", "list_alerts", "resolve_host", "retry_delay", "send_test",
        ]
    )
