from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.errors import PipelineError
from pipeline.timeparse import (
    MAX_DURATION,
    TimeParseError,
    check_not_future,
    format_duration,
    parse_duration,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("2h", timedelta(hours=2)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("1.5h", timedelta(minutes=90)),
        ("45", timedelta(seconds=45)),
        ("PT2H", timedelta(hours=2)),
        ("PT0S", timedelta(0)),
        ("P1DT12H30M", timedelta(days=1, hours=12, minutes=30)),
        ("P2W", timedelta(weeks=2)),
        ("pt1.5s", timedelta(seconds=1.5)),
        (120, timedelta(minutes=2)),
        (timedelta(hours=1), timedelta(hours=1)),
    ],
)
def test_durations_read_short_and_iso_8601_forms(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["abc", "P", "PT", "P1Y", "P1M", "-5m", "10^30", "", "1e300", True, "5 parsecs"]
)
def test_a_text_that_is_no_duration_is_refused_with_the_forms_it_takes(text):
    with pytest.raises(TimeParseError, match="90s, 30m, 2h, 7d or ISO 8601 PT2H|out of range"):
        parse_duration(text)


@pytest.mark.parametrize(
    "value",
    ["999999999999999999w", "99999999999999w", 1e300, 10**30, "1" + "0" * 30, "P99999999D"],
)
def test_a_huge_duration_is_out_of_range_not_an_overflow(value):
    with pytest.raises(TimeParseError, match="out of range: a duration is from 0 to 3650 days"):
        parse_duration(value)


def test_the_longest_duration_is_ten_years():
    assert parse_duration(f"{MAX_DURATION.days}d") == MAX_DURATION


def test_time_errors_are_pipeline_errors_and_value_errors():
    """The CLI's error edge catches them as ours; pydantic turns them into field errors."""
    assert issubclass(TimeParseError, PipelineError) and issubclass(TimeParseError, ValueError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T14:00:00Z", datetime(2026, 3, 1, 14, tzinfo=UTC)),
        ("2026-03-01T16:00:00+02:00", datetime(2026, 3, 1, 14, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
    ],
)
def test_times_read_iso_8601_date_times_and_dates_as_aware_utc(text, expected):
    parsed = parse_time(text)
    assert parsed == expected and parsed.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0001-01-01T00:00:00Z", "out of range"),
        ("9999-12-31T23:59:59Z", "out of range"),
        ("0001-01-01T00:00:00+14:00", "out of range"),
        ("2026-03-01T14:00:00", "has no timezone"),
        ("2026-13-01", "is not ISO 8601"),
        ("yesterday", "is not ISO 8601"),
        ("2" * 10_000, "is not ISO 8601"),
    ],
)
def test_a_bad_or_far_time_is_refused_with_a_reason(text, message):
    with pytest.raises(TimeParseError, match=message):
        parse_time(text)


def test_an_observation_a_minute_ahead_is_clock_skew_but_an_hour_ahead_is_the_future():
    now = datetime(2026, 3, 1, tzinfo=UTC)
    assert check_not_future(now + timedelta(minutes=1), now) == now + timedelta(minutes=1)
    with pytest.raises(TimeParseError, match="in the future"):
        check_not_future(now + timedelta(hours=1), now, "--at")


@pytest.mark.parametrize(
    ("duration", "text"),
    [
        (timedelta(minutes=10), "10m"),
        (timedelta(hours=6), "6h"),
        (timedelta(days=1), "1d"),
        (timedelta(weeks=2), "2w"),
        (timedelta(seconds=90), "90s"),
        (timedelta(seconds=90.5), "90.5s"),
        (timedelta(0), "0s"),
    ],
)
def test_a_duration_is_written_in_its_largest_whole_unit(duration, text):
    assert format_duration(duration) == text


@given(st.timedeltas(min_value=timedelta(0), max_value=MAX_DURATION))
def test_a_written_duration_reads_back_as_itself(duration):
    assert parse_duration(format_duration(duration)) == duration
