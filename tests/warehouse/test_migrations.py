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
