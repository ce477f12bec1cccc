"""The CLI as a client of the HTTP API: beside a running `serve`, or with `--api URL`.

A running `serve` holds the database (DuckDB allows one writer process), so it leaves its
address beside the file (`<db>.serve.json`: host, port, pid; removed on a clean stop). A command
that finds it, with the pid alive, asks that server over loopback instead of opening the file;
`--api URL` (or `GPUPRICES_API_URL`) names any server. The answers are the API's response
models, printed by the same code as a local answer, so both read alike.

API errors (problem details) become one line: exit 2 for a 422 (the usage was wrong), else 1.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import httpx
import typer
from pydantic import BaseModel

from api.cli.common import open_existing
from api.rest.problems import problem_detail
from pipeline.errors import PipelineError
from pipeline.settings import Settings
from warehouse import Warehouse

__all__ = [
    "ApiError",
    "ApiOption",
    "Remote",
    "address_file",
    "answered",
    "query_params",
    "remote_for",
    "remove_address",
    "write_address",
]

API_ENV = "GPUPRICES_API_URL"
ADDRESS_SUFFIX = ".serve.json"
TIMEOUT = httpx.Timeout(60.0, connect=5.0)
"""A quote over 100,000 offers or a collection can take a while; a dead server is seen fast."""

ApiOption = Annotated[
    str | None,
    typer.Option(
        "--api",
        envvar=API_ENV,
        help="Ask this gpuprices server (http://host:port) instead of opening the database "
        f"[env: {API_ENV}]",
        show_envvar=False,
    ),
]


class ApiError(PipelineError):
    """The server answered with a problem, or could not be reached; `exit_code` 2 for a 422."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def address_file(db: Path) -> Path:
    """Where a `serve` over `db` leaves its address."""
    return db.with_name(db.name + ADDRESS_SUFFIX)


def write_address(db: Path, host: str, port: int) -> Path:
    path = address_file(db)
    path.write_text(json.dumps({"host": host, "port": port, "pid": os.getpid()}), "utf-8")
    return path


def remove_address(db: Path) -> None:
    """Removed on a clean stop, only if it is still this process's (another may have started)."""
    path = address_file(db)
    try:
        if json.loads(path.read_text("utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        pass
    return True


def _loopback_host(host: str) -> str:
    """A wildcard or loopback listening address is reached on loopback; any other as it is."""
    if host in ("", "0.0.0.0", "localhost"):
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if address.is_unspecified or address.is_loopback:
        return "[::1]" if address.version == 6 else "127.0.0.1"
    return f"[{host}]" if address.version == 6 else host


def _running_server(db: Path) -> str | None:
    """The URL of the live `serve` over `db`, if its address file names a live process."""
    path = address_file(db)
    try:
        found = json.loads(path.read_text("utf-8"))
        host, port, pid = str(found["host"]), int(found["port"]), int(found["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(pid):
        return None
    return f"http://{_loopback_host(host)}:{port}"


def remote_for(settings: Settings, api: str | None) -> Remote | None:
    """The server a command should ask, or None to open the database itself."""
    if api:
        return Remote(api, settings)
    target = settings.warehouse_target
    if isinstance(target, Path):
        url = _running_server(target)
        if url is not None:
            return Remote(url, settings)
    return None


def query_params(model: BaseModel, **extra: Any) -> dict[str, Any]:
    """A query model as the API's query parameters (aliases, lists repeated, no defaults)."""
    params = model.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    params.update({k: v for k, v in extra.items() if v is not None})
    return {k: v for k, v in params.items() if v is not None and v != []}


@dataclass
class Remote:
    """One server's API; every call returns the JSON body or raises `ApiError`."""

    url: str
    settings: Settings

    def _headers(self) -> dict[str, str]:
        key = self.settings.api_key
        return {"Authorization": f"Bearer {key.get_secret_value()}"} if key is not None else {}

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        data: Mapping[str, Any] | None = None,
        files: list[tuple[str, tuple[str, bytes]]] | None = None,
    ) -> Any:
        try:
            with httpx.Client(
                base_url=self.url.rstrip("/"), timeout=TIMEOUT, headers=self._headers()
            ) as client:
                response = client.request(
                    method, path, params=params, json=json_body, data=data, files=files or None
                )
        except httpx.InvalidURL as exc:
            raise ApiError(f"--api {self.url!r} is not a URL ({exc})", 2) from None
        except httpx.HTTPError as exc:
            raise ApiError(
                f"cannot reach the gpuprices server at {self.url}: {exc or type(exc).__name__} "
                f"(is `gpuprices serve` running? check --api / {API_ENV})"
            ) from None
        if response.status_code >= 400:
            raise _problem(response)
        if response.status_code == 204 or not response.content:
            return None
        if "json" not in response.headers.get("content-type", ""):
            return response.content
        return response.json()

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.request("GET", path, params=params)

    def every(self, path: str, key: str) -> list[Any]:
        """Every item of a paged list (`key` of each page), following `next_offset`."""
        items: list[Any] = []
        offset: int | None = 0
        while offset is not None:
            page = self.get(path, {"offset": offset})
            items.extend(page[key])
            offset = page.get("next_offset")
        return items


def _problem(response: httpx.Response) -> ApiError:
    """A problem-details answer as one line: the server's `detail`, with the status."""
    text = problem_detail(response) or response.text[:200] or response.reason_phrase
    code = 2 if response.status_code == 422 else 1
    return ApiError(f"{text} (HTTP {response.status_code} from {response.url.host})", code)


T = TypeVar("T")


def answered(
    settings: Settings,
    api: str | None,
    ask: Callable[[Remote], T],
    local: Callable[[Warehouse], T],
) -> T:
    """`ask(remote)` beside a running server (or with --api), else `local(warehouse)` on the
    database, which must exist: every read command answers one way or the other alike."""
    remote = remote_for(settings, api)
    if remote is not None:
        return ask(remote)
    with open_existing(settings) as warehouse:
        return local(warehouse)
