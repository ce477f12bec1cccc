"""`/healthz` reads the database at most once a second; the event loop answers in between."""

from __future__ import annotations

from unittest.mock import patch

from warehouse import Warehouse


def test_healthz_reads_the_database_once_a_second(client):
    with patch.object(Warehouse, "schema_version", autospec=True, return_value=16) as read:
        answers = [client.get("/healthz").json() for _ in range(3)]
        assert {a["schema_version"] for a in answers} == {16} and read.call_count == 1
        with patch("api.rest.routes.health.DATABASE_CHECK_TTL_S", 0.0):
            client.get("/healthz")
        assert read.call_count == 2


def test_healthz_reports_what_the_database_says(client):
    with patch("api.rest.routes.health.DATABASE_CHECK_TTL_S", 0.0):
        assert client.get("/healthz").json()["schema_version"] >= 16
        with patch.object(Warehouse, "schema_version", autospec=True, return_value=99):
            assert client.get("/healthz").json()["schema_version"] == 99
