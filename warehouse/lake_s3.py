"""An `s3://` data path's client settings, read from the environment as AWS tools read them.

`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (or
`AWS_DEFAULT_REGION`), and the endpoint of an S3-compatible store in `AWS_ENDPOINT_URL_S3` (or
`AWS_ENDPOINT_URL`): its scheme decides TLS (`http://` is plain), its `host:port` is where
requests go. A custom endpoint is addressed path-style (`http://host:port/bucket/key`, what
MinIO, SeaweedFS, Garage, Ceph and moto serve without wildcard DNS) unless
`GPUPRICES_S3_URL_STYLE=vhost`; AWS itself keeps DuckDB's virtual-host default.

They become one DuckDB secret of type s3 (httpfs). The key, secret and token go into that
secret only: never into a log line, an object's repr or an error message (a DuckDB error about
the secret is reported with every credential masked).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import duckdb

from warehouse.errors import WarehouseError

__all__ = ["S3Client", "URL_STYLE_VARIABLE", "create_s3_secret", "s3_client", "s3_reason"]

logger = logging.getLogger(__name__)

URL_STYLE_VARIABLE = "GPUPRICES_S3_URL_STYLE"
_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
_CREDENTIALS = {
    "KEY_ID": "AWS_ACCESS_KEY_ID",
    "SECRET": "AWS_SECRET_ACCESS_KEY",
    "SESSION_TOKEN": "AWS_SESSION_TOKEN",
}
_TLS = {"https": True, "http": False}
SECRET_NAME = "gpuprices_s3"

UrlStyle = Literal["path", "vhost"]
_URL_STYLES: dict[str, UrlStyle | None] = {"": None, "path": "path", "vhost": "vhost"}


@dataclass(frozen=True, slots=True)
class S3Client:
    """Where and how requests go; no credentials (those stay in the environment)."""

    region: str | None
    endpoint: str | None
    """`host[:port]` of a custom endpoint; None: AWS."""
    use_ssl: bool
    url_style: UrlStyle | None
    """None: DuckDB's default (virtual-host, for AWS)."""
    signed: bool
    """Whether a key is set (else requests are anonymous: public buckets only)."""


def _endpoint(env: Mapping[str, str]) -> tuple[str | None, bool]:
    for variable in _ENDPOINT_VARIABLES:
        url = env.get(variable, "").strip()
        if not url:
            continue
        parts = urlsplit(url)
        if parts.scheme not in _TLS or not parts.hostname:
            raise WarehouseError(
                f"{variable} must be http://host:port or https://host (with its scheme, as "
                "for the AWS CLI)"
            )
        if parts.username is not None or parts.password is not None:
            raise WarehouseError(
                f"{variable} must not hold credentials: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY instead"
            )
        if parts.path not in ("", "/") or parts.query:
            raise WarehouseError(
                f"{variable} must be the server alone (scheme://host:port), without a path: "
                "the bucket and prefix go in GPUPRICES_LAKE_DATA_PATH (s3://bucket/prefix/)"
            )
        return parts.netloc, _TLS[parts.scheme]
    return None, True


def s3_client(env: Mapping[str, str]) -> S3Client:
    """The client settings the variables in `env` describe; `WarehouseError` says what to fix."""
    endpoint, use_ssl = _endpoint(env)
    given = env.get(URL_STYLE_VARIABLE, "").strip().lower()
    if given not in _URL_STYLES:
        raise WarehouseError(f"{URL_STYLE_VARIABLE} must be path or vhost, not '{given}'")
    style = _URL_STYLES[given] if given else ("path" if endpoint is not None else None)
    key_set = bool(env.get(_CREDENTIALS["KEY_ID"]))
    if key_set != bool(env.get(_CREDENTIALS["SECRET"])):
        raise WarehouseError(
            "Set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (only one of them is set)"
        )
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None
    return S3Client(region, endpoint, use_ssl, style, key_set)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def create_s3_secret(conn: duckdb.DuckDBPyConnection, env: Mapping[str, str]) -> S3Client:
    """Create the DuckDB secret for `s3://` paths from `env`; the client settings it holds."""
    client = s3_client(env)
    credentials = {option: env[name] for option, name in _CREDENTIALS.items() if env.get(name)}
    options = {
        **credentials,
        **({"REGION": client.region} if client.region else {}),
        **({"ENDPOINT": client.endpoint} if client.endpoint else {}),
        **({"URL_STYLE": client.url_style} if client.url_style else {}),
    }
    listed = ", ".join(f"{key} {_literal(value)}" for key, value in options.items())
    try:
        conn.execute(
            f"CREATE OR REPLACE SECRET {SECRET_NAME} (TYPE s3, {listed}"
            f"{', ' if listed else ''}USE_SSL {str(client.use_ssl).lower()})"
        )
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        for value in credentials.values():
            message = message.replace(value, "***")
        raise WarehouseError(f"The S3 settings were refused: {message}") from None
    logger.debug(
        "s3 client: endpoint=%s tls=%s url_style=%s region=%s signed=%s",
        client.endpoint or "AWS",
        client.use_ssl,
        client.url_style or "vhost",
        client.region or "default",
        client.signed,
    )
    return client


_S3_ERROR_LINE = re.compile(r"^([A-Z][A-Za-z]+): (.+)$", re.MULTILINE)
_CREDENTIAL_ERRORS = frozenset(
    {
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
        "AccessDenied",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
    }
)


def s3_reason(message: str) -> str | None:
    """The S3 error code and text in a DuckDB HTTP error (after its first line), with what to
    fix when the store refused the credentials; None when the message carries none."""
    for code, text in _S3_ERROR_LINE.findall(message):
        if code.endswith("Error") or code in {"HTTP", "IO"}:
            continue  # DuckDB's own "HTTP Error: ..." / "IO Error: ..." line
        reason = f"{code}: {text.strip()}"
        if code in _CREDENTIAL_ERRORS:
            reason += (
                " (the object store refused the credentials: check AWS_ACCESS_KEY_ID, "
                "AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN)"
            )
        return reason
    return None
