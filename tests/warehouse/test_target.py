"""Warehouse targets: a lake's catalog password never shows in a message."""

from __future__ import annotations

import duckdb

from warehouse import parse_target
from warehouse.db import translate_error
from warehouse.target import redacted


def test_a_lake_target_masks_its_password_when_printed():
    target = parse_target("ducklake:postgres:dbname=g host=db user=u password=s3cret", "/lake")
    assert "s3cret" not in str(target)
    assert "password=***" in str(target)
    assert target.conninfo.endswith("password=s3cret")  # still used to connect


def test_a_driver_error_quoting_the_conninfo_is_masked():
    error = duckdb.IOException(
        'IO Error: Unable to connect to Postgres at "dbname=g password=\'a b\' user=u": refused'
    )
    message = str(translate_error(error, "ducklake:postgres:dbname=g"))
    assert "a b" not in message
    assert "password=*** user=u" in message


def test_a_uri_conninfo_masks_the_password_but_keeps_the_user():
    assert redacted("postgresql://gpuprices:pw@db:5432/g") == "postgresql://gpuprices:***@db:5432/g"
