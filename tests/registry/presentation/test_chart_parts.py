"""A chart too tall for a report's page is drawn in parts: the fewest that each fit a page, of consecutive
configurations in order, near-equal in count, on one scale, each captioned as a part; a chart that fits is one."""

from __future__ import annotations

import re
from collections.abc import Sequence

from protocol import comparability
from registry.presentation import charts
from registry.presentation.chart_style import MAX_ASPECT, aspect, page_parts
from registry.presentation.charts_report import captioned, numbered
from tests.registry.reports.conftest import variant


def _fleet(configurations: int) -> tuple[list[dict], dict]:
    """`configurations` systems, one run each, with latency percentiles and a price (so every chart draws all)."""
    docs = [variant(f"lab-node{i:02d}", 900.0 + 37.0 * i) for i in range(configurations)]
    for i, doc in enumerate(docs):  # a configuration is its accelerators: each its own, named as long as real ones
        doc["system"]["accelerators"][0]["model"] = f"Accelerator {i:02d}-SXM5 Extended Memory Edition 141GB HBM3e"
    prices = {d["system"]["name"]: 3.0 + i for i, d in enumerate(docs)}
    return docs, comparability.compare(docs, "system", resamples=50, prices=prices)


def _bar_labels(svg: str) -> list[str]:
    """The configuration labels a bar chart names, top to bottom (matplotlib writes text as <text> with svg.fonttype
    none)."""
    return [t for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg) if t.lstrip("1× ").startswith("Accelerator")]


def _fake(height_per_item: float, overhead: float):
    def draw(items: Sequence[int]) -> str:
        return f'<svg width="100pt" height="{overhead + height_per_item * len(items)}pt"></svg>'

    return draw


def test_a_chart_that_fits_a_page_is_drawn_whole_as_the_web_page_draws_it():
    docs, result = _fleet(3)
    assert charts.throughput_charts(result) == [charts.throughput_chart(result)]
    assert charts.latency_percentiles_charts(docs, result) == [charts.latency_percentiles_chart(docs, result)]
    assert charts.derived_charts(result) and len(charts.derived_charts(result)) == 1


def test_a_chart_taller_than_a_page_is_drawn_in_parts_that_each_fit_every_configuration_once_in_order():
    docs, result = _fleet(24)
    whole = charts.latency_percentiles_chart(docs, result)
    assert whole is not None and aspect(whole) > MAX_ASPECT  # one chart of 24 would run past the page
    parts = charts.latency_percentiles_charts(docs, result)
    assert len(parts) > 1 and all(aspect(p) <= MAX_ASPECT for p in parts)
    for drawer in (charts.throughput_charts, charts.derived_charts):
        assert all(aspect(p) <= MAX_ASPECT for p in drawer(result))
    throughput = charts.throughput_charts(result)
    assert len(throughput) > 1
    names = [label for p in throughput for label in _bar_labels(p)]
    assert names == _bar_labels(charts.throughput_chart(result) or "")  # each once, in the whole chart's order


def test_parts_are_the_fewest_that_fit_and_near_equal_in_count():
    # 10 items of 30 pt on 20 pt of title and axes, 100 pt wide: a page holds 100 * MAX_ASPECT pt, so 3 items a part
    drawn = page_parts(_fake(30.0, 20.0), list(range(10)))
    heights = [float(h) for h in re.findall(r'height="([\d.]+)pt"', "".join(drawn))]
    assert heights == [110.0, 110.0, 80.0, 80.0]  # 3, 3, 2, 2 items: four parts, never 3, 3, 3, 1
    assert page_parts(_fake(30.0, 20.0), [1, 2]) == [_fake(30.0, 20.0)([1, 2])]  # fits: one chart
    assert page_parts(_fake(30.0, 20.0), []) == []


def test_one_item_taller_than_a_page_is_still_drawn_alone_never_dropped():
    drawn = page_parts(_fake(500.0, 20.0), [1, 2, 3])
    assert len(drawn) == 3  # the stylesheet caps such an image's height: it stays on its page


def test_each_part_is_captioned_as_a_part_and_a_whole_chart_as_itself():
    assert captioned("Latency percentiles", ["a"]) == [("Latency percentiles", "a")]
    assert captioned("Latency percentiles", ["a", "b"]) == [
        ("Latency percentiles, part 1 of 2", "a"),
        ("Latency percentiles, part 2 of 2", "b"),
    ]
    assert numbered(["a"]) == [("", "a")] and numbered(["a", "b"])[1] == ("part 2 of 2", "b")


def test_no_two_candidates_of_a_pareto_part_look_alike(monkeypatch):
    """A part of a decision's Pareto chart holds about twenty candidates, and PALETTE has eight colours: candidates
    n and n + 8 were drawn alike (same colour, same round marker), so a reader could not tell from the legend which
    point was which. Read from the figure each part draws: its labelled points' colour and marker."""
    from registry.presentation import chart_style, charts_decision

    answer = {
        "frontier": {"criteria": ["cost", "latency"], "members": list(range(0, 40, 3))},
        "candidates": [
            {
                "label": f"8x Accelerator {i:02d}-SXM5 Extended Memory Edition 141GB HBM3e, bf16",
                "meets": "meets",
                "cost_per_million": {"value": 20.0 + i, "unit": "USD per million outputs"},
                "latency_ms": {"value": 60.0 + 2 * i, "ci_low": 58.0 + 2 * i, "ci_high": 63.0 + 2 * i, "unit": "ms"},
            }
            for i in range(40)
        ],
    }
    drawn: list[list[tuple[str, str]]] = []
    real_svg = chart_style.svg

    def looked_at(fig, kind, data):
        styles = []
        for collection in fig.axes[0].collections:
            if collection.get_label().startswith("8x Accelerator"):
                colour = tuple(collection.get_edgecolor()[0])
                styles.append((colour, collection.get_paths()[0].vertices.tobytes()))
        drawn.append(styles)
        return real_svg(fig, kind, data)

    monkeypatch.setattr(charts_decision, "svg", looked_at)
    parts = charts_decision.pareto_charts(answer)
    assert len(parts) > 1 and sum(len(styles) for styles in drawn[-len(parts) :]) == 40
    for styles in drawn[-len(parts) :]:
        assert len(set(styles)) == len(styles), "two candidates of one part are drawn alike"
