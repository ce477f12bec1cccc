"""`POST /collections`: ask the server that holds the database to collect now.

What `gpuprices collect` does beside a running `serve` (whose process holds the database).
Recorded answers to replay are uploaded as files of a multi-part form, each named after its
provider (`vastai.json`), never read from a path on the server. Needs the API key when one is set;
without one, only loopback clients may ask. An `api` replica answers 409: it never collects.
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path, PurePath
from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, HTTPException, Request, UploadFile
from fastapi.security import HTTPAuthorizationCredentials

from api.rest.deps import (
    ClockDep,
    SettingsDep,
    WarehouseDep,
    bearer,
    is_loopback,
    require_api_key,
)
from api.rest.parameters import NO_QUERY
from api.rest.problems import problems
from api.rest.schemas_collections import CollectionOut, collection_out
from pipeline.collection.runs import collect
from pipeline.errors import PipelineError
from pipeline.timeparse import check_not_future, parse_time
from scrapers import build_client, sources

__all__ = ["router"]

MAX_FILE_NAME_CHARS = 255
"""Longest replay file name accepted (`<provider>/<file>` included): a file system's limit."""
SHOWN_NAME_CHARS = 64
"""Characters of a refused file name repeated in the answer."""
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
MAX_REPLAY_FILES = 200
"""One file per provider, or a provider's directory of answers (Scaleway: two per zone and page),
each such file named `<provider>/<file>`."""


def require_collector(
    request: Request,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """409 on an `api` replica; the key when one is set; else loopback clients only."""
    if settings.role == "api":
        raise HTTPException(
            status_code=409,
            detail="This server is an `api` replica (read only) and never collects: send "
            "POST /collections to a server whose role is `collector` or `all`",
        )
    if settings.api_key is not None:
        require_api_key(request, settings, credentials)
    elif not is_loopback(request.client.host if request.client else None):
        raise HTTPException(
            status_code=403,
            detail="POST /collections is open to loopback clients only while no API key is set: "
            "set GPUPRICES_API_KEY on the server and send Authorization: Bearer <key>",
        )


router = APIRouter(
    prefix="/collections",
    tags=["collections"],
    dependencies=[Depends(require_collector)],
    responses=problems(401, 403, 409, 415),
)


def _checked_file_name(upload: UploadFile) -> str:
    """The upload's file name, refused before any use when no file system would take it."""
    name = upload.filename or ""
    shown = repr(name[:SHOWN_NAME_CHARS]) + ("…" if len(name) > SHOWN_NAME_CHARS else "")
    if not name or len(name) > MAX_FILE_NAME_CHARS:
        raise PipelineError(
            f"replay file name {shown}: give a name of 1 to {MAX_FILE_NAME_CHARS} characters"
        )
    if any(not char.isprintable() for char in name):
        raise PipelineError(f"replay file name {shown}: control characters are not allowed")
    return name


def _replay_name(upload: UploadFile) -> tuple[str, str | None]:
    """The provider a file replays, and its name inside the provider's directory of answers
    (`scaleway/servers-fr-par-2-1.json`), or None for a provider's one answer (`vastai.json`)."""
    filename = _checked_file_name(upload)
    parts = PurePath(filename).parts
    known = sources()
    if len(parts) == 2 and parts[0] in known and not parts[1].startswith("."):
        return parts[0], parts[1]
    name = PurePath(filename).name.split(".", 1)[0]
    if len(parts) != 1 or name not in known:
        raise PipelineError(
            f"replay file {filename[:SHOWN_NAME_CHARS]!r}: name each file after its provider "
            f"({', '.join(sorted(known))}), e.g. vastai.json, or <provider>/<file> for a "
            "provider that replays a directory of answers (scaleway)"
        )
    return name, None


def _check_form(request: Request) -> None:
    """415 for a body that is not a form (JSON, text): its fields would silently read as unset."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind not in FORM_TYPES:
        raise HTTPException(
            status_code=415,
            detail="Send the request as a form: multipart/form-data with replay files, or "
            "application/x-www-form-urlencoded with live=true",
        )


@router.post(
    "",
    response_model=CollectionOut,
    summary="Collect now (or replay uploaded bodies)",
    dependencies=[NO_QUERY],
)
def post_collection(
    request: Request,
    warehouse: WarehouseDep,
    settings: SettingsDep,
    clock: ClockDep,
    provider: Annotated[
        list[str] | None, Form(description="Providers to collect; default: the server's")
    ] = None,
    at: Annotated[
        str | None, Form(max_length=64, description="observed_at of the run, ISO 8601")
    ] = None,
    replay: Annotated[
        list[UploadFile] | None,
        File(description="Recorded answers, each named after its provider: vastai.json, ..."),
    ] = None,
    live: Annotated[
        bool,
        Form(description="Fetch from the providers' real endpoints: `provider`, else the server's"),
    ] = False,
) -> CollectionOut:
    """One collection, as `gpuprices collect` runs it: each provider in its own transaction,
    then the alert rules (their webhooks go out from this server's outbox). Only what is asked
    for runs: the replayed providers, and with `live=true` the `provider`s fetched live (all the
    server's without replay files). A body that carries neither is a 422: a malformed form
    never starts a collection."""
    _check_form(request)
    uploads = replay or []
    if len(uploads) > MAX_REPLAY_FILES:
        raise PipelineError(f"at most {MAX_REPLAY_FILES} replay files")
    observed_at: datetime | None = None
    if at is not None:
        observed_at = check_not_future(parse_time(at), clock(), "at")
    named: dict[str, list[tuple[str | None, UploadFile]]] = {}
    for upload in uploads:
        name, inside = _replay_name(upload)
        named.setdefault(name, []).append((inside, upload))
    known = sources()
    for name in provider or []:
        if name not in known:
            raise PipelineError(f"unknown provider '{name}' (known: {', '.join(sorted(known))})")
    fetched = [name for name in provider or [] if name not in named]
    if not live and (fetched or not named):
        raise PipelineError(
            "nothing to collect: upload replay files (each named after its provider), or send "
            "live=true to fetch "
            + (", ".join(fetched) if fetched else "from the providers")
            + " over the network"
        )
    if named:
        names = list(dict.fromkeys([*named, *(provider or [])]))
    else:
        names = list(provider or settings.providers)
    scratch = request.app.state.scratch.path  # this process's, swept at the next start-up
    with tempfile.TemporaryDirectory(prefix="replay-", dir=scratch) as folder:
        replays: dict[str, Path] = {}
        for name, files in named.items():
            if any(inside is None for inside, _ in files):  # the provider's one answer
                path = Path(folder) / f"{name}.body"
                path.write_bytes(files[-1][1].file.read())
            else:  # a directory of answers, as `--replay NAME=DIR` gives it locally
                path = Path(folder) / name
                path.mkdir()
                for inside, upload in files:
                    (path / str(inside)).write_bytes(upload.file.read())
            replays[name] = path
        collected = collect(
            names,
            warehouse,
            settings,
            now=clock,
            observed_at=observed_at,
            replays=replays,
            client_factory=request.app.state.client_factory or build_client,
        )
    return collection_out(collected)
