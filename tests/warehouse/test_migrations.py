from __future__ import annotations

import pytest

from warehouse import DatabaseLockedError, Warehouse, WarehouseError
from warehouse.db import _migrations


def test_a_new_database_is_migrated_to_the_latest_version(warehouse):
    assert warehouse.schema_version() == max(v for v, _, _ in _migrations())


def test_migrating_twice_applies_nothing_the_second_time(db_path):
    with Warehouse.open(db_path) as first:
        version = first.schema_version()
    with Warehouse.open(db_path) as second:
        assert second.migrate() == []
        assert second.schema_version() == version


@pytest.mark.parametrize("_version,name,sql", _migrations())
def test_migrations_stay_ducklake_compatible(_version, name, sql):
    upper = "\n".join(line.split("--")[0] for line in sql.splitlines()).upper()
    for forbidden in ("PRIMARY KEY", "UNIQUE", "CREATE SEQUENCE", "CREATE INDEX", "ON CONFLICT"):
        assert forbidden not in upper, f"{name} uses {forbidden}"


def test_a_file_held_by_another_process_is_one_clear_error(db_held_by_another_process, db_path):
    with pytest.raises(DatabaseLockedError) as info:
        Warehouse.open(db_path)
    message = str(info.value)
    assert "in use by another process" in message and "\n" not in message
    assert f"PID {db_held_by_another_process.pid}" in message


def test_a_transaction_that_fails_leaves_nothing_behind(warehouse):
    with pytest.raises(WarehouseError, match="no_such_table"), warehouse.transaction() as conn:
        conn.execute("INSERT INTO quarantine VALUES ('r', 'p', NULL, 'x', '{}', now())")
        conn.execute("INSERT INTO no_such_table VALUES (1)")
    with warehouse.cursor() as cur:
        assert cur.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)


def test_migration_0010_rebuilds_kept_summaries_with_form_factor_and_available_minimum(db_path):
    from datetime import UTC, datetime

    from pipeline.collection.collect import run_collection
    from tests.conftest import FIXTURES

    at = datetime(2026, 1, 1, tzinfo=UTC)
    with Warehouse.open(db_path) as warehouse:
        run_collection(
            ["lambda"],
            warehouse,
            replays={"lambda": FIXTURES / "lambda_instance_types.json"},
            now=lambda: at,
        )
        with warehouse.transaction() as conn:  # back to the layout before 0010
            conn.execute("ALTER TABLE price_summaries DROP COLUMN min_available_offer_id")
            conn.execute("DROP TABLE index_rollups")
            conn.execute("DROP TABLE history_rollups")
            conn.execute("DELETE FROM schema_version WHERE version = 13")
            conn.execute("ALTER TABLE price_summaries DROP COLUMN form_factor")
            conn.execute("ALTER TABLE price_summaries DROP COLUMN min_available_price")
            conn.execute("DELETE FROM schema_version WHERE version = 10")
            old = "INSERT INTO price_summaries VALUES (?, 'lambda', ?, 'A10', 'on_demand', ?, ?)"
            prices = [1.0, 1.0, 1.5, 2.0]
            conn.execute(old.replace("?)", "?, ?, ?, ?, ?)"), ["pruned-all", at, *prices, 3, 3])
            conn.execute(old.replace("?)", "?, ?, ?, ?, ?)"), ["pruned-some", at, *prices, 3, 1])
    with Warehouse.open(db_path) as warehouse, warehouse.cursor() as cur:
        rows = cur.execute(
            "SELECT run_id, gpu, form_factor, min_price, min_available_price, available_count"
            " FROM price_summaries"
        ).fetchall()
        raw = cur.execute(
            "SELECT gpu, form_factor, min(price_per_gpu_hour) FILTER (WHERE available)"
            " FROM offer_observations WHERE gpu IS NOT NULL GROUP BY ALL"
        ).fetchall()
    pruned = {r[0]: r[4] for r in rows if r[0].startswith("pruned")}
    assert pruned == {"pruned-all": 1.0, "pruned-some": None}  # unknown stays unknown
    rebuilt = {(r[1], r[2]): r[4] for r in rows if not r[0].startswith("pruned")}
    assert rebuilt == {(gpu, form): price for gpu, form, price in raw}
    assert any(form is not None for _, form in rebuilt)
