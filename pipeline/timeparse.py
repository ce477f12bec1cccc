"""Times and durations as people and clients write them: one parser for every route and command.

A leaf module (it imports only `pipeline.errors`), so settings, the API, the CLI and the alert
rules all share it.

- Durations: `90s`, `30m`, `2h`, `7d`, `2w`, a bare number of seconds, or ISO 8601 (`PT2H`,
  `P1DT12H`, `PT0S`, `P2W`). Never negative, at most `MAX_DURATION`: a bigger one is refused
  before any arithmetic, so no value overflows.
- Times: ISO 8601 date-times with a timezone (`2026-03-01T14:00:00Z`, `+02:00`) or dates
  (`2026-03-01`, midnight UTC), between `MIN_TIME` and `MAX_TIME`; returned as aware UTC.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator

from pipeline.errors import PipelineError

__all__ = [
    "CLOCK_SKEW",
    "MAX_DURATION",
    "MAX_TIME",
    "MIN_TIME",
    "Duration",
    "TimeParseError",
    "UtcDateTime",
    "check_not_future",
    "format_duration",
    "parse_duration",
    "parse_time",
    "parse_time_or_ago",
]

MAX_DURATION = timedelta(days=3650)
"""Ten years: longer than any retention, cooldown or age anyone means."""
MIN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(2100, 1, 1, tzinfo=UTC)
"""Times outside [MIN_TIME, MAX_TIME) are refused: far enough from datetime's limits (years 1
and 9999) that adding a bucket, a window or a retention period never overflows."""
CLOCK_SKEW = timedelta(minutes=5)
"""How far in the future an observation time may be: clocks of two machines disagree a little."""
_MAX_TEXT = 64  # characters: no real time or duration is longer

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SHORT = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)", re.IGNORECASE)
_ISO = re.compile(
    r"P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)
_DURATION_HINT = "a duration such as 90s, 30m, 2h, 7d or ISO 8601 PT2H"


class TimeParseError(PipelineError, ValueError):
    """A time or duration that cannot be read or is out of range; the message says which."""


def _seconds(text: str) -> float | None:
    if short := _SHORT.fullmatch(text):
        return float(short.group(1)) * _UNIT_SECONDS[(short.group(2) or "s").lower()]
    iso = _ISO.fullmatch(text)
    if iso is None or not any(iso.groupdict().values()) or text.upper().endswith("T"):
        return None
    return sum(float(v) * _UNIT_SECONDS[k] for k, v in iso.groupdict().items() if v)


def parse_duration(value: Any) -> timedelta:
    """A non-negative duration of at most `MAX_DURATION`, from text, seconds or a timedelta."""
    if isinstance(value, timedelta):
        seconds: float | None = value.total_seconds()
    elif isinstance(value, bool):
        seconds = None
    elif isinstance(value, int | float):
        seconds = float(value) if abs(value) < 1e18 else math.inf
    else:
        text = str(value).strip()
        seconds = _seconds(text) if len(text) <= _MAX_TEXT else None
    if seconds is None:
        raise TimeParseError(f"'{_short(value)}' is not {_DURATION_HINT}")
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_DURATION.total_seconds():
        raise TimeParseError(
            f"'{_short(value)}' is out of range: a duration is from 0 to {MAX_DURATION.days} days"
        )
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """`value` in its largest whole unit (`10m`, `6h`, `1d`, `2w`), as `parse_duration` reads it
    back; else in seconds (`90.5s`, `0s`)."""
    seconds = value.total_seconds()
    for unit, size in sorted(_UNIT_SECONDS.items(), key=lambda item: -item[1]):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    text = f"{seconds:.6f}".rstrip("0").rstrip(".")  # timedelta keeps microseconds
    return f"{text or '0'}s"


def parse_time(value: Any) -> datetime:
    """An aware UTC datetime in [MIN_TIME, MAX_TIME), from ISO 8601 text, a date or a datetime."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str) and len(value.strip()) <= _MAX_TEXT:
        text = value.strip()
        try:
            if len(text) == len("2026-03-01"):
                day = date.fromisoformat(text)
                parsed = datetime(day.year, day.month, day.day, tzinfo=UTC)
            else:
                parsed = datetime.fromisoformat(text)
        except ValueError:
            raise TimeParseError(
                f"'{_short(value)}' is not ISO 8601: give a time such as "
                "2026-03-01T14:00:00Z or a date such as 2026-03-01"
            ) from None
    else:
        raise TimeParseError(f"'{_short(value)}' is not ISO 8601: give a time such as 2026-03-01")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise TimeParseError(f"'{_short(value)}' has no timezone: add Z or +00:00")
    try:
        utc = parsed.astimezone(UTC)
    except OverflowError:
        utc = MIN_TIME - timedelta(days=1) if parsed.year < 2000 else MAX_TIME
    if not MIN_TIME <= utc < MAX_TIME:
        raise TimeParseError(
            f"'{_short(value)}' is out of range: times are from {MIN_TIME:%Y-%m-%d} "
            f"to {MAX_TIME:%Y-%m-%d}"
        )
    return utc


def parse_time_or_ago(value: Any, now: datetime) -> datetime:
    """A time as `parse_time` reads it, or a duration meaning that long before `now`
    (`7d`, `2h`, `PT30M`): what a `--since` or `--as-of` option takes."""
    try:
        return parse_time(value)
    except TimeParseError as exc:
        try:
            ago = parse_duration(value)
        except TimeParseError:
            raise TimeParseError(f"{exc}; or a duration ago such as 7d or 2h") from None
        return parse_time(now - ago)


def check_not_future(at: datetime, now: datetime, name: str = "time") -> datetime:
    """`at`, unless it is later than `now` plus `CLOCK_SKEW` (an observation cannot be)."""
    if at > now + CLOCK_SKEW:
        raise TimeParseError(
            f"{name} {at.isoformat()} is in the future (now {now.isoformat(timespec='seconds')}; "
            f"at most {int(CLOCK_SKEW.total_seconds() // 60)} minutes of clock skew allowed)"
        )
    return at


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]
"""A pydantic field or FastAPI parameter read by `parse_duration`."""
UtcDateTime = Annotated[datetime, BeforeValidator(parse_time)]
"""A pydantic field or FastAPI parameter read by `parse_time` (aware UTC, in range)."""
