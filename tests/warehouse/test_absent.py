"""Modules that are not installed fail to import at once; installed ones are never marked."""

from __future__ import annotations

import importlib
import sys

import pytest

from warehouse.absent import mark_absent

MISSING = "gpuprices_test_no_such_module"


def test_a_module_that_is_not_installed_is_refused_by_the_first_finder():
    mark_absent([MISSING, "json"])
    first = sys.meta_path[0]
    with pytest.raises(ModuleNotFoundError, match=MISSING):
        first.find_spec(MISSING, None)
    with pytest.raises(ModuleNotFoundError, match=MISSING):
        importlib.import_module(MISSING)
    assert first.find_spec("json", None) is None  # installed: left to the other finders
    assert importlib.import_module("json").dumps([1]) == "[1]"


def test_duckdb_and_pyarrow_still_bind_and_convert_values_with_pandas_marked(warehouse):
    mark_absent()
    with warehouse.cursor() as cur:
        table = cur.execute(
            "SELECT ?::TIMESTAMPTZ AS t, ? AS n", ["2026-01-01", 2]
        ).to_arrow_table()
    assert table.to_pylist()[0]["n"] == 2 and table.to_pylist()[0]["t"].year == 2026
