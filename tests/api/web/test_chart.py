from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.web.chart import NowPrice, build_chart

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


SAME = object()


def point(hours: int, price: float, available: float | None | object = SAME) -> dict:
    """A bucket whose listed minimum is `price`; `available`: its available minimum (None: all
    sold out; by default the same, everything rentable)."""
    return {
        "t": T0 + hours * HOUR,
        "min": price,
        "min_available": price if available is SAME else available,
        "p25": price,
        "median": price,
        "max": price,
        "offers": 3,
        "available": 3,
        "snapshots": 1,
    }


def history(*series: tuple, interval: str = "1h") -> dict:
    """`(provider, pricing, points)` or `(provider, pricing, points, form_factor)` per series."""
    return {
        "gpu": "H100-80GB",
        "gpus": ["H100-80GB"],
        "interval": interval,
        "series": [
            {
                "gpu": "H100-80GB",
                "form_factor": rest[0] if rest else None,
                "provider": p,
                "pricing": pr,
                "points": pts,
            }
            for p, pr, pts, *rest in series
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


def test_a_provider_collected_every_6_hours_is_a_line_until_it_misses_a_run():
    hours = [0, 6, 12, 18, 30, 36]  # the run due at hour 24 never came
    points = [point(h, 2.0 + h / 100) for h in hours]
    chart = build_chart(
        history(("coreweave", "on_demand", points)),
        until=T0 + 36 * HOUR,
        intervals={"coreweave": timedelta(hours=6)},
    )
    [line] = chart.lines
    assert line.path.count("M") == 2 and line.gaps == 1
    assert line.path.count("L") == 4  # 0-6-12-18 and 30-36: joined across the hourly buckets


def test_the_line_follows_available_offers_and_breaks_where_everything_was_sold_out():
    points = [point(0, 1.0, 2.0), point(1, 1.0, None), point(2, 1.5, 2.5), point(3, 1.5, 2.5)]
    chart = build_chart(history(("lambda", "on_demand", points)), until=T0 + 3 * HOUR)
    [line] = chart.lines
    assert (line.low, line.high, line.points) == (2.0, 2.5, 3)  # sold-out $1.00 never drawn
    assert line.gaps == 1


def test_the_last_point_is_the_current_cheapest_available_offer():
    points = [point(0, 2.0), point(1, 1.8)]
    now = NowPrice(price_per_gpu_hour=2.4, observed_at=T0 + HOUR + timedelta(minutes=40))
    chart = build_chart(
        history(("lambda", "on_demand", points, "SXM")),
        until=T0 + 2 * HOUR,
        now_prices={("H100-80GB", "SXM", "lambda", "on_demand"): now},
    )
    [line] = chart.lines
    assert line.latest == 2.4 and line.points == 3 and line.path.count("L") == 2
    assert "now" in line.markers[-1].title and line.markers[-1].x > line.markers[-2].x


def test_sxm_and_pcie_are_separate_lines_named_by_form_factor():
    chart = build_chart(
        history(
            ("lambda", "on_demand", [point(0, 2.5), point(1, 2.6)], "SXM"),
            ("lambda", "on_demand", [point(0, 1.9), point(1, 2.0)], "PCIe"),
        ),
        until=T0 + HOUR,
    )
    lines = {line.label: line for line in chart.lines}
    assert set(lines) == {"PCIe · lambda · on-demand", "SXM · lambda · on-demand"}
    assert lines["SXM · lambda · on-demand"].latest == 2.6
    assert lines["PCIe · lambda · on-demand"].latest == 2.0


def test_the_index_chart_has_labelled_axes_its_points_sit_on():
    from api.web.index_view import build_index_chart

    points = [
        {"t": T0 + h * HOUR, "value": v, "providers": 2} for h, v in enumerate((2.0, 2.5, 3.0))
    ]
    series = [{"gpu": "H100-80GB", "pricing": "on_demand", "points": points}]
    chart = build_index_chart({"interval": "1h", "series": series})
    assert chart is not None
    ticks = {tick.label: tick.pos for tick in chart.y_ticks}
    [line] = chart.lines
    by_value = {p["value"]: m.y for p, m in zip(points, line.markers, strict=True)}
    assert ticks["$2.00"] == by_value[2.0] and ticks["$3.00"] == by_value[3.0]
    assert [m.x for m in line.markers] == sorted(m.x for m in line.markers)
    assert chart.x_ticks[0].label == "01 Jan"  # midnight UTC: the date
    assert all(chart.left <= t.pos <= chart.right for t in chart.x_ticks)
