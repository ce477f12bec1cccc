"""The warehouse stores the scrapers' offer table BY NAME and checks it against its own columns."""

from __future__ import annotations

import pyarrow as pa
import pytest

from scrapers import vastai
from tests.conftest import OBSERVED_AT, fixture_bytes
from warehouse import RunRow, WarehouseError
from warehouse.queries import insert_run

RUN = RunRow("r1", "vastai", OBSERVED_AT, OBSERVED_AT, OBSERVED_AT, "ok", 13, 0, None, "test")


def offers() -> pa.Table:
    return vastai.parse(fixture_bytes("vastai_bundles.json"), OBSERVED_AT).table


def test_the_parsers_table_is_stored_as_it_is(warehouse):
    with warehouse.transaction() as conn:
        insert_run(conn, RUN, offers())
    with warehouse.cursor() as cur:
        stored = cur.execute("SELECT * EXCLUDE (run_id) FROM offer_observations").to_arrow_table()
    assert stored.num_rows == offers().num_rows
    assert sorted(stored.column_names) == sorted(offers().column_names)


def test_a_batch_whose_columns_do_not_fit_the_table_is_refused_in_one_line(warehouse):
    table = offers()
    wrong = table.set_column(
        table.schema.get_field_index("gpu_count"), "gpu_count", pa.array(["8"] * table.num_rows)
    ).append_column("colour", pa.array(["red"] * table.num_rows))
    refused = pytest.raises(WarehouseError, match="gpu_count VARCHAR.*colour VARCHAR")
    with refused, warehouse.transaction() as conn:
        insert_run(conn, RUN, wrong)
    with warehouse.cursor() as cur:
        assert cur.execute("SELECT count(*) FROM collection_runs").fetchone() == (0,)
