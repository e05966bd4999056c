"""The serving frontier chart and the sweep views: measured points only, readable on a phone, the sentence at a
target, and the decision report's figure (no database)."""

from __future__ import annotations

import re
from typing import Any

from protocol import decisions as dec
from protocol import serving
from registry.presentation import charts_serving, sweeps
from registry.reports.context import decision_answer
from registry.reports.render import render_html
from tests.protocol.serving_law import sweep_docs

PHONE_PX = 390


def refs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": i + 1, "digest": f"sha256:{i}", "url": f"/runs/{i + 1}/"} for i in range(len(docs))]


def summary(docs: list[dict[str, Any]], per_user: float | None = 48.0) -> dict[str, Any]:
    target = serving.Target(per_user) if per_user is not None else None
    return serving.sweep_summary(serving.levels(docs), target)


def test_the_frontier_chart_draws_every_measured_level_and_the_target() -> None:
    a = summary(sweep_docs((1, 2, 4, 8, 16, 32, 64), saturate_at=64))
    svg = charts_serving.frontier_chart([{"label": "8×B200", "sweep": a}], 48.0)
    assert svg is not None and svg.startswith('<svg class="benchreg-chart')
    for tag in ("c1", "c8", "c64"):
        assert f">{tag}<" in svg  # every measured level is labelled by its load
    assert "target 48 tok/s per user" in svg and "8×B200" in svg


def test_the_chart_stays_readable_at_390_px() -> None:
    """Shrunk to a 390 px phone column, the smallest text is still at least 5.5 px (as the other charts)."""
    svg = charts_serving.frontier_chart([{"label": "8×B200", "sweep": summary(sweep_docs((1, 2, 4, 8)))}], 48.0)
    assert svg is not None
    width = float(re.search(r'width="([\d.]+)pt"', svg).group(1))  # type: ignore[union-attr]
    sizes = [float(s) for s in re.findall(r"font-size:\s*([\d.]+)px", svg)] or [7.0]
    assert width <= 480 and min(sizes) * PHONE_PX / width >= 5.5


def test_one_point_per_series_is_nothing_to_draw() -> None:
    assert charts_serving.frontier_chart([{"label": "x", "sweep": summary(sweep_docs((4,)))}]) is None


def test_a_sweep_view_names_the_level_used_and_what_was_not_measured() -> None:
    docs = sweep_docs((1, 2, 4, 8, 16, 32))
    view = sweeps.sweep_view(docs, refs(docs), "8×B200", 48.0)
    assert view["sentence"].startswith("At 48 tok/s per user, 8×B200 delivers 50 output tokens/s per accelerator")
    assert "no interval" in view["sentence"] and "concurrency 16" in view["sentence"]
    assert "not measured" in view["sentence"]
    used = [r for r in view["rows"] if r["used"]]
    assert [r["load"] for r in used] == ["concurrency 8"] and used[0]["frontier"]


def test_two_arms_compared_at_equal_interactivity_in_words() -> None:
    a = sweep_docs((1, 2, 4, 8, 16), sweep="a", noise=(0.97, 1.0, 1.03))
    b = sweep_docs((1, 2, 4, 8), sweep="b", noise=(0.97, 1.0, 1.03), accelerators=2, model="MI355X", u0=80, c0=4)
    view = sweeps.comparison_view([("8×B200", a, refs(a)), ("2×MI355X", b, refs(b))], 48.0)
    assert view is not None and view["chart"] is not None
    assert view["sentences"][0].startswith("At 48 tok/s per user, 8×B200 delivers 0.938× 2×MI355X's")
    assert "95% CI" in view["sentences"][0]


def test_the_decision_report_draws_the_frontier_and_says_where_capacity_was_read() -> None:
    docs = sweep_docs((1, 2, 4, 8, 16, 32), sweep="b200", noise=(0.98, 1.0, 1.02))
    q = dec.Question.from_dict(
        {
            "workload": "decoder-small",
            "scenario": "server",
            "interactivity": {"min_tokens_per_second_per_user": 30},
            "demand": {"value": 20000, "unit": "tokens/s"},
            "provisioning": {"nameplate_kw": {"8x B200": 14.3}, "pue": 1.25},
        }
    )
    answer = dec.answer(q, [dec.Evidence(d, r) for d, r in zip(docs, refs(docs), strict=True)])
    import json

    section = {"canonical": json.dumps(answer), "id": 1, "title": "t", "answer": 1, "digest": "sha256:x"}
    context = decision_answer(section)
    assert context is not None and context["frontier_chart"] is not None
    assert any("capacity read at concurrency 16" in line for line in context["sweeps"])
    assert any("per provisioned MW" in line and "14.3 kW" in line for line in context["sweeps"])
    html = render_html({"decision_answer": context})
    assert "data:image/svg+xml;base64," in html and "Candidates measured as load sweeps" in html


def test_the_per_user_axis_spans_the_points_when_they_would_stand_in_one_column_from_zero() -> None:
    # aiperf's and guidellm's sweeps of the simulated endpoint: 81-82 tok/s per user at every load, target 80
    low, high = charts_serving.per_user_range([81.6, 81.6, 81.1, 81.7, 82.2, 81.8], 80.0)
    assert 77.0 < low < 80.0 and 82.2 < high < 84.0  # the target line and every point inside, with a margin
    # a sweep that trades interactivity for throughput (20 to 150 tok/s per user) keeps the axis from zero
    assert charts_serving.per_user_range([20.0, 60.0, 150.0], 50.0) == (0.0, None)
    assert charts_serving.per_user_range([1e308, 1.7e308], None) == (0.0, None)  # a margin past the floats: from 0
