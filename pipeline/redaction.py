"""Secrets never reach a log: every record is masked as it is made, its traceback included.

`install_secret_masking(settings)` runs at start-up (`serve`, every CLI command through
`load_settings`). It wraps the log record factory, so that every record of every logger, whatever
handler later writes it (uvicorn configures its own), carries a masked message, masked arguments
and a masked traceback. Masked:

- connection-string passwords (`password=...`, `postgresql://user:pass@host`), as
  `warehouse.target.redacted` masks them in our own messages;
- webhook signing secrets (`whsec_...`) and `Authorization: Bearer ...` values;
- the value of every secret the process was given: `GPUPRICES_API_KEY`, provider keys
  (`*_API_KEY`, from the environment or the settings file), other `*_SECRET`, `*_TOKEN`,
  `*_PASSWORD` variables (AWS's included), and the password inside `GPUPRICES_WAREHOUSE`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pipeline.settings import Settings
from warehouse.target import redacted

__all__ = ["MASK", "SecretFilter", "install_secret_masking", "secret_values"]

MASK = "***"
SECRET_SUFFIXES = ("_API_KEY", "_SECRET", "_TOKEN", "_PASSWORD", "_SECRET_ACCESS_KEY")
"""Environment variables whose values are secrets, by the end of their names."""
MIN_SECRET_CHARS = 4
"""Shorter values are not masked wherever they appear (a 1-character key would mask every
such character of every log line); they are still masked by the patterns."""
_WEBHOOK_SECRET = re.compile(r"whsec_[A-Za-z0-9_\-]+")
_BEARER = re.compile(r"(Bearer\s+)[^\s'\"]+", re.IGNORECASE)
_PASSWORD_VALUE = re.compile(r"""password\s*=\s*'?([^\s'"]+)""", re.IGNORECASE)
_URI_PASSWORD = re.compile(r"://[^:/@\s]*:([^@\s]+)@")


def secret_values(settings: Settings | None, environ: Mapping[str, str]) -> set[str]:
    """Every secret value this process holds."""
    values = {v for name, v in environ.items() if name.upper().endswith(SECRET_SUFFIXES)}
    if settings is not None:
        if settings.api_key is not None:
            values.add(settings.api_key.get_secret_value())
        values.update(key.get_secret_value() for key in settings.api_keys.values())
    for text in (environ.get("GPUPRICES_WAREHOUSE"), settings and settings.warehouse):
        if text:
            values.update(m.group(1) for m in _PASSWORD_VALUE.finditer(text))
            values.update(m.group(1) for m in _URI_PASSWORD.finditer(text))
    return {v for v in values if len(v) >= MIN_SECRET_CHARS}


class SecretFilter(logging.Filter):
    """Masks a record in place (message, arguments, traceback); never drops one."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets = sorted(set(secrets), key=len, reverse=True)  # a longer one first

    def mask(self, text: str) -> str:
        text = _BEARER.sub(rf"\1{MASK}", _WEBHOOK_SECRET.sub(MASK, redacted(text)))
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text

    def _arg(self, value: Any) -> Any:
        if value is None or isinstance(value, int | float):
            return value  # numbers keep their %d and %.2f formats
        return self.mask(value if isinstance(value, str) else str(value))

    def filter(self, record: logging.LogRecord) -> bool:
        template = record.msg if isinstance(record.msg, str) else str(record.msg)
        args: Any = record.args
        if isinstance(args, tuple):
            args = tuple(self._arg(a) for a in args)
        elif isinstance(args, Mapping):
            args = {k: self._arg(v) for k, v in args.items()}
        try:
            message = template % args if args else template
        except (TypeError, ValueError, KeyError):  # a broken call: the handler reports it
            record.msg, record.args = self.mask(template), args
        else:
            if self.mask(message) != message or self.mask(template) != template:
                # a secret in the template, or made by template and arguments together
                record.msg, record.args = self.mask(message), None
            else:  # the arguments kept apart: some formatters read them (uvicorn's access log)
                record.msg, record.args = template, args
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.mask(record.exc_text)
        if record.stack_info:
            record.stack_info = self.mask(record.stack_info)
        return True


_INSTALLED: dict[str, Any] = {}


def install_secret_masking(
    settings: Settings | None = None, environ: Mapping[str, str] | None = None
) -> SecretFilter:
    """Mask every log record this process makes from now on (installing again replaces the
    secrets known, never stacks a second mask)."""
    secrets = secret_values(settings, os.environ if environ is None else environ)
    masking = SecretFilter(secrets)
    base: Callable[..., logging.LogRecord] = _INSTALLED.get("base", logging.getLogRecordFactory())
    if logging.getLogRecordFactory() is not _INSTALLED.get("factory"):
        base = logging.getLogRecordFactory()  # someone else's since: wrap theirs

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = base(*args, **kwargs)
        masking.filter(record)
        return record

    _INSTALLED.update(base=base, factory=factory)
    logging.setLogRecordFactory(factory)
    return masking
