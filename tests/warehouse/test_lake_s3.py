"""The S3 client of an `s3://` data path, from the standard AWS variables."""

from __future__ import annotations

import duckdb
import pytest

from warehouse import WarehouseError
from warehouse.lake import extension_file
from warehouse.lake_s3 import create_s3_secret, s3_client, s3_reason

LOCAL = {
    "AWS_ACCESS_KEY_ID": "AKIDLOCAL",
    "AWS_SECRET_ACCESS_KEY": "s3cr3t-value",
    "AWS_REGION": "eu-west-1",
    "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
}


def test_a_local_http_endpoint_is_its_host_and_port_without_tls_addressed_path_style():
    client = s3_client(LOCAL)
    assert (client.endpoint, client.use_ssl, client.url_style) == ("127.0.0.1:9000", False, "path")
    assert client.region == "eu-west-1" and client.signed


def test_an_https_endpoint_keeps_tls_and_the_url_style_can_be_virtual_host():
    env = {"AWS_ENDPOINT_URL": "https://s3.example.net", "GPUPRICES_S3_URL_STYLE": "vhost"}
    client = s3_client(env)
    assert (client.endpoint, client.use_ssl, client.url_style) == ("s3.example.net", True, "vhost")
    assert not client.signed


def test_the_s3_specific_endpoint_wins_over_the_general_one():
    env = {"AWS_ENDPOINT_URL": "https://other:1", "AWS_ENDPOINT_URL_S3": "http://store:8333/"}
    assert s3_client(env).endpoint == "store:8333"


def test_without_an_endpoint_it_is_aws_with_duckdbs_virtual_host_default():
    client = s3_client({"AWS_DEFAULT_REGION": "us-west-2"})
    assert (client.endpoint, client.use_ssl, client.url_style) == (None, True, None)
    assert client.region == "us-west-2"


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"AWS_ENDPOINT_URL_S3": "127.0.0.1:9000"}, "AWS_ENDPOINT_URL_S3 must be http://host"),
        ({"AWS_ENDPOINT_URL_S3": "http://h:1/bucket"}, "without a path"),
        ({"AWS_ENDPOINT_URL_S3": "http://k:s3cr3t-value@h:1"}, "must not hold credentials"),
        ({"GPUPRICES_S3_URL_STYLE": "virtual"}, "must be path or vhost"),
        ({"AWS_ACCESS_KEY_ID": "AKIDLOCAL"}, "Set both AWS_ACCESS_KEY_ID and"),
    ],
)
def test_a_wrong_variable_is_one_error_naming_it_and_never_the_secret(env, says):
    with pytest.raises(WarehouseError, match=says) as raised:
        s3_client(env)
    assert "s3cr3t-value" not in str(raised.value)


def test_the_duckdb_secret_holds_the_endpoint_style_and_tls_and_hides_the_secret():
    conn = duckdb.connect(config={"autoinstall_known_extensions": False})
    conn.execute(f"LOAD '{extension_file('httpfs')}'")
    create_s3_secret(conn, LOCAL)
    [(secret,)] = conn.execute("SELECT secret_string FROM duckdb_secrets()").fetchall()
    for part in ("endpoint=127.0.0.1:9000", "url_style=path", "use_ssl=false", "region=eu-west-1"):
        assert part in secret
    assert "s3cr3t-value" not in secret


def test_an_s3_refusal_in_a_duckdb_error_is_named_with_what_to_fix():
    message = (
        "HTTP Error: HTTP GET error reading 'http://h/b/k' (HTTP 403 Forbidden)\n\n"
        "SignatureDoesNotMatch: The request signature we calculated does not match"
    )
    reason = s3_reason(message)
    assert reason is not None and reason.startswith("SignatureDoesNotMatch: The request")
    assert "check AWS_ACCESS_KEY_ID" in reason
    assert s3_reason("HTTP Error: Unable to connect") is None
