"""Any Hugging Face model by its id: its `config.json`, fetched once from the Hub and kept.

`resolve_model` is the one way a model name becomes an architecture: the catalog first (a name,
an alias or a catalog model's Hub id), else, for an `owner/name` id, the model's own
`config.json` read from `{HF_ENDPOINT}/{id}/resolve/main/config.json` — the URL
`huggingface_hub.hf_hub_url` builds, `HF_ENDPOINT` defaulting to the Hub as there — and kept on
disk (`<cache>/<owner>/<name>/config.json`), so that quoting the model again makes no request.

`HF_TOKEN` is sent as a bearer token (gated and private models) and never logged or returned.
Failures are one `WorkloadError` line on `model`, as `huggingface_hub` tells them apart
(`utils/_http.py`, `hf_raise_for_status`): 404 (or `X-Error-Code: RepoNotFound` /
`EntryNotFound`) is a missing id; 401/403 a gated or private one (the Hub answers 401 for a
private id it will not confirm exists); no answer at all names `--hf-config`, the way to give
the file by hand.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from pipeline.errors import WorkloadError
from pipeline.workload.architectures import Architecture, from_config, lookup_model

__all__ = [
    "DEFAULT_ENDPOINT",
    "ModelHub",
    "is_hub_id",
    "resolve_model",
]

logger = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"
"""`huggingface_hub`'s default `HF_ENDPOINT` (constants.py `_HF_DEFAULT_ENDPOINT`)."""
FETCH_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
MAX_CONFIG_BYTES = 1 << 20
"""A config.json is a few KiB; anything past 1 MiB is not one."""
CONFIG_FILE = "config.json"
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
HUB_ID = re.compile(rf"({_PART})/({_PART})")
"""`owner/name` as the Hub allows it (huggingface_hub `validate_repo_id`: letters, digits, `-`,
`_`, `.`; no leading or trailing `-`/`.`, no `--` or `..`; at most 96 characters a part)."""
_NOT_FOUND_CODES = frozenset({"RepoNotFound", "EntryNotFound", "RevisionNotFound"})
_GIVE_IT = "give its config.json instead (--hf-config FILE; in the API, `config`)"


def is_hub_id(name: str) -> bool:
    """Whether `name` is a Hugging Face model id, `owner/name` (safe as two path parts)."""
    return HUB_ID.fullmatch(name) is not None and ".." not in name and "--" not in name


class ModelHub:
    """Reads models' `config.json` from a Hub endpoint, keeping each one under `cache_dir`
    (None: in this process only). Build it with `from_env` at start-up, never at import."""

    def __init__(
        self,
        cache_dir: Path | None,
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self.endpoint = endpoint.rstrip("/")
        self._token = token or None
        self._transport = transport
        self._kept: dict[str, dict[str, Any]] = {}

    @classmethod
    def from_env(cls, cache_dir: Path | None, environ: Mapping[str, str] | None = None) -> ModelHub:
        """`HF_ENDPOINT` and `HF_TOKEN` as `huggingface_hub` reads them."""
        env = os.environ if environ is None else environ
        return cls(
            cache_dir,
            endpoint=env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT,
            token=env.get("HF_TOKEN"),
        )

    def __repr__(self) -> str:  # the token stays out of logs and tracebacks
        return f"ModelHub(endpoint={self.endpoint!r}, cache_dir={self.cache_dir!r})"

    def url(self, repo_id: str) -> str:
        return f"{self.endpoint}/{repo_id}/resolve/main/{CONFIG_FILE}"

    def _path(self, repo_id: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir.joinpath(*repo_id.split("/"))

    def config(self, repo_id: str) -> dict[str, Any]:
        """The model's parsed `config.json`: kept, else fetched once and kept."""
        if not is_hub_id(repo_id):
            raise WorkloadError("model", f"'{repo_id}' is not a Hugging Face id (owner/name)")
        key = repo_id.lower()
        if key in self._kept:
            return self._kept[key]
        folder = self._path(repo_id)
        stored = folder / CONFIG_FILE if folder is not None else None
        if stored is not None and stored.is_file():
            config = _parse(repo_id, stored.read_bytes())
        else:
            body = self._fetch(repo_id)
            config = _parse(repo_id, body)
            if stored is not None:
                _keep(stored, body)
        self._kept[key] = config
        return config

    def _fetch(self, repo_id: str) -> bytes:
        url = self.url(repo_id)
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        logger.info("fetching %s", url)
        try:
            with httpx.Client(
                timeout=FETCH_TIMEOUT, follow_redirects=True, transport=self._transport
            ) as client:
                response = client.get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise WorkloadError(
                "model",
                f"cannot reach the Hugging Face Hub at {self.endpoint} for '{repo_id}' "
                f"({type(exc).__name__}); {_GIVE_IT}",
            ) from None
        status, code = response.status_code, response.headers.get("X-Error-Code", "")
        if status in (401, 403):
            who = "HF_TOKEN has no access to it" if self._token else "set HF_TOKEN"
            raise WorkloadError(
                "model",
                f"'{repo_id}' is gated or private on the Hugging Face Hub (HTTP {status}), or "
                f"does not exist: {who} (a token that has accepted its terms)",
            )
        if status == 404 or code in _NOT_FOUND_CODES:
            raise WorkloadError(
                "model",
                f"no model '{repo_id}' on the Hugging Face Hub ({self.endpoint}): check the id",
            )
        if status != 200:
            raise WorkloadError(
                "model",
                f"the Hugging Face Hub answered HTTP {status} for '{repo_id}'; try again, or "
                f"{_GIVE_IT}",
            )
        if len(response.content) > MAX_CONFIG_BYTES:
            raise WorkloadError("model", f"'{repo_id}' config.json is over 1 MiB: not a config")
        return response.content


def _parse(repo_id: str, body: bytes) -> dict[str, Any]:
    try:
        config = json.loads(body)
    except ValueError:
        config = None
    if not isinstance(config, dict):
        raise WorkloadError("model", f"'{repo_id}' config.json is not a JSON object")
    return config


def _keep(path: Path, body: bytes) -> None:
    """Write the fetched body beside the database, atomically; a read-only disk only costs
    the next process a request."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_bytes(body)
        partial.replace(path)
    except OSError as exc:
        logger.warning("cannot keep %s: %s", path, exc)


def resolve_model(name: str, hub: ModelHub | None = None) -> Architecture:
    """The one way a model name becomes an architecture: the catalog (`lookup_model`), else, for
    a Hugging Face id and a `hub`, the model's own config.json. An unknown name that is no id
    keeps the catalog's answer (the closest names)."""
    try:
        return lookup_model(name)
    except WorkloadError:
        if hub is None or not is_hub_id(name):
            raise
    config = hub.config(name)
    try:
        arch = from_config(config, name=name)
    except WorkloadError as exc:
        raise WorkloadError("model", f"'{name}' config.json: {exc.detail}") from None
    return replace(arch, source=f"{hub.url(name)}")
