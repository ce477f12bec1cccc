"""What must hold on a lake after any fault: nothing partial, lost or doubled, no dangling file."""

from __future__ import annotations

from warehouse import Warehouse


def observation_totals(warehouse: Warehouse) -> tuple[int, int, int]:
    """(observations stored, offers the runs say they stored, runs whose two disagree)."""
    with warehouse.cursor() as cur:
        row = cur.execute(
            """
            WITH per_run AS (
                SELECT r.run_id, r.offer_count, count(o.run_id) AS stored
                FROM collection_runs r LEFT JOIN offer_observations o USING (run_id)
                WHERE r.status = 'ok' GROUP BY ALL
            )
            SELECT coalesce(sum(stored), 0), coalesce(sum(offer_count), 0),
                   count(*) FILTER (WHERE stored <> offer_count)
            FROM per_run
            """
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def orphan_observations(warehouse: Warehouse) -> int:
    """Observations or current offers whose run is not recorded (a partial run)."""
    with warehouse.cursor() as cur:
        row = cur.execute(
            """
            SELECT (SELECT count(*) FROM offer_observations WHERE run_id NOT IN
                        (SELECT run_id FROM collection_runs WHERE status = 'ok'))
                 + (SELECT count(*) FROM current_offers WHERE run_id NOT IN
                        (SELECT run_id FROM collection_runs WHERE status = 'ok'))
            """
        ).fetchone()
    return int(row[0]) if row else 0


def doubled_runs(warehouse: Warehouse) -> int:
    """Runs stored twice (same run id), or two good snapshots of one provider at one time."""
    with warehouse.cursor() as cur:
        row = cur.execute(
            """
            SELECT (SELECT count(*) FROM (SELECT run_id FROM collection_runs
                                          GROUP BY run_id HAVING count(*) > 1))
                 + (SELECT count(*) FROM (SELECT provider, observed_at FROM collection_runs
                                          WHERE status = 'ok'
                                          GROUP BY ALL HAVING count(*) > 1))
            """
        ).fetchone()
    return int(row[0]) if row else 0


def overlapping_runs(warehouse: Warehouse) -> int:
    """Pairs of runs of one provider that overlapped in time (two collectors at once)."""
    with warehouse.cursor() as cur:
        row = cur.execute(
            """
            SELECT count(*) FROM collection_runs a JOIN collection_runs b
            ON a.provider = b.provider AND a.run_id < b.run_id
            AND a.started_at < b.finished_at AND b.started_at < a.finished_at
            """
        ).fetchone()
    return int(row[0]) if row else 0


def listed_files(warehouse: Warehouse) -> list[str]:
    """The data and delete files the lake's current snapshot lists, over every table."""
    with warehouse.cursor() as cur:
        tables = [row[0] for row in cur.execute("SHOW TABLES").fetchall()]
        return [
            str(path)
            for table in tables
            for row in cur.execute(
                "SELECT data_file, delete_file FROM ducklake_list_files('lake', ?)", [table]
            ).fetchall()
            for path in row
            if path is not None
        ]


def stored_files(warehouse: Warehouse) -> list[str]:
    """Every Parquet file under the lake's data path (a directory or a bucket's prefix), listed
    by DuckDB as the lake reads them."""
    assert warehouse.lake is not None
    root = warehouse.lake.data_path.rstrip("/")
    with warehouse.cursor() as cur:
        rows = cur.execute("SELECT file FROM glob(?)", [f"{root}/**/*.parquet"]).fetchall()
    return sorted(str(row[0]) for row in rows)


def missing_data_files(warehouse: Warehouse) -> list[str]:
    """Data files the lake's current snapshot lists that are not stored. Listed first: a
    collector still running may commit between the two reads, and a file it wrote is stored
    before its commit lists it, never after."""
    listed = listed_files(warehouse)
    stored = set(stored_files(warehouse))
    return [path for path in listed if path not in stored]


def assert_consistent(warehouse: Warehouse) -> None:
    """Every run whole or absent, none doubled, never two collectors at once, no dangling file."""
    stored, claimed, disagreeing = observation_totals(warehouse)
    assert stored == claimed
    assert disagreeing == 0
    assert orphan_observations(warehouse) == 0
    assert doubled_runs(warehouse) == 0
    assert overlapping_runs(warehouse) == 0
    assert missing_data_files(warehouse) == []
