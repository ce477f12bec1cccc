from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.web.chart import build_chart

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def point(hours: int, price: float) -> dict:
    return {
        "t": T0 + hours * HOUR,
        "min": price,
        "p25": price,
        "median": price,
        "max": price,
        "offers": 3,
        "available": 3,
        "snapshots": 1,
    }


def history(*series: tuple[str, str, list[dict]], interval: str = "1h") -> dict:
    return {
        "gpu": "H100-80GB",
        "interval": interval,
        "series": [
            {"gpu": "H100-80GB", "provider": p, "pricing": pr, "points": pts}
            for p, pr, pts in series
        ],
    }


def test_a_missing_bucket_breaks_the_line_and_a_lone_point_is_a_dot():
    hours = {0: 2.0, 1: 2.1, 2: 2.2, 5: 2.0, 6: 2.1, 8: 1.9}
    points = [point(h, price) for h, price in hours.items()]
    chart = build_chart(history(("runpod", "on_demand", points)), until=T0 + 8 * HOUR)
    [line] = chart.lines
    assert line.path.count("M") == 2  # hours 0-2 and 5-6; hour 8 stands alone: a dot only
    assert line.path.count("L") == 3
    assert len(line.markers) == 6 and line.gaps == 2
    assert (line.latest, line.low, line.high) == (1.9, 1.9, 2.2)


def test_cheaper_is_lower_and_later_is_further_right():
    points = [point(0, 1.0), point(1, 3.0)]
    chart = build_chart(history(("vastai", "spot", points)), until=T0 + HOUR)
    first, second = chart.lines[0].markers
    assert second.x > first.x and second.y < first.y
    assert chart.left <= first.x and second.x <= chart.right
    assert chart.top <= second.y and first.y <= chart.bottom


def test_lines_are_coloured_by_provider_and_dashed_for_spot():
    chart = build_chart(
        history(
            ("vastai", "on_demand", [point(0, 1.0)]),
            ("vastai", "spot", [point(0, 0.5)]),
            ("lambda", "on_demand", [point(0, 2.0)]),
        ),
        until=T0,
    )
    lines = {line.label: line for line in chart.lines}
    assert set(lines) == {"lambda · on-demand", "vastai · on-demand", "vastai · spot"}
    assert lines["vastai · on-demand"].color == lines["vastai · spot"].color
    assert lines["lambda · on-demand"].color != lines["vastai · spot"].color
    assert lines["vastai · spot"].dashed and not lines["vastai · on-demand"].dashed


def test_axes_have_round_labels():
    points = [point(h, 2.0 + h / 10) for h in range(25)]
    chart = build_chart(history(("runpod", "on_demand", points)), until=T0 + 24 * HOUR)
    assert [t.label for t in chart.y_ticks] == ["$1.00", "$2.00", "$3.00", "$4.00", "$5.00"]
    assert [t.label for t in chart.x_ticks] == ["01 Jan", "06:00", "12:00", "18:00", "02 Jan"]


def test_no_history_is_an_empty_chart():
    assert build_chart(history(), until=T0).empty
