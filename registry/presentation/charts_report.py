"""The figures of a signed report, each whole on a page: a chart too tall for one page is drawn in parts of fewer
configurations (chart_style.page_parts), and each part has its own caption ("part 1 of 2").

Same charts as the web pages (charts, charts_decision, charts_serving); only their splitting is the report's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from registry.presentation import charts, charts_decision, charts_serving

MAX_DISTRIBUTIONS = 4  # histograms of raw samples: the first runs that have them, to keep the report short


def report_figures(
    result: Mapping[str, Any], docs: Sequence[Mapping[str, Any]], run_ids: Sequence[int]
) -> list[dict[str, str]]:
    """The report's figures in page order, each captioned uniquely and labelled by configuration; distributions
    for the first run with raw samples of each configuration (at most MAX_DISTRIBUTIONS). Each is
    {"title", "svg"}; a chart drawn in parts gives one figure per part."""
    arm_of = {i: a for a in result.get("arms") or [] for i in a.get("runs") or []}
    labels = [str(arm_of[i]["label"]) if i in arm_of else f"run {run_ids[i]}" for i in range(len(docs))]
    found = [
        ("Headline result per configuration, with 95% intervals", charts.throughput_charts(result)),
        ("Latency percentiles per configuration", charts.latency_percentiles_charts(docs, result)),
        ("p99 latency against offered load, per configuration", charts.latency_vs_load_charts(docs, labels)),
        ("Energy and cost per output, per configuration", charts.derived_charts(result)),
        (
            "Output tokens/s per accelerator against tokens/s per user, per configuration (measured loads only)",
            charts_serving.runs_frontier_charts(docs, labels),
        ),
    ]
    shown: set[str] = set()
    for i, doc in enumerate(docs):
        if doc.get("samples") and labels[i] not in shown and len(shown) < MAX_DISTRIBUTIONS:
            shown.add(labels[i])
            name = f"run {run_ids[i]} · {labels[i]}"
            drawn = charts.latency_distribution_chart(doc, name)
            found.append((f"Latency distribution of {name}", [drawn] if drawn else []))
    return [{"title": caption, "svg": svg} for name, parts in found for caption, svg in captioned(name, parts)]


def captioned(title: str, parts: Sequence[str]) -> list[tuple[str, str]]:
    """(caption, chart) of each part: the title alone for a chart in one piece, else "<title>, part k of n"."""
    return [(f"{title}, {words}" if words else title, svg) for words, svg in numbered(parts)]


def numbered(parts: Sequence[str]) -> list[tuple[str, str]]:
    """("part k of n", chart) of each part; "" for a chart in one piece."""
    return [(f"part {k} of {len(parts)}" if len(parts) > 1 else "", svg) for k, svg in enumerate(parts, start=1)]


def decision_figures(answer: Mapping[str, Any]) -> dict[str, list[dict[str, str]]]:
    """A decision's two figures, each as its parts ({"part": "part k of n" or "", "svg"}): `pareto`, its
    candidates on the frontier's first two criteria, and `frontier_chart`, its sweeps' throughput against
    interactivity. An empty list where the answer has nothing to draw."""
    figures = {
        # a training answer's frontier (time, cost per run, scaling) is said in words and its table, not drawn
        "pareto": charts_decision.pareto_charts(answer) if answer.get("phase") != "training" else [],
        "frontier_chart": charts_serving.decision_frontier_charts(answer),
    }
    return {name: [{"part": words, "svg": svg} for words, svg in numbered(parts)] for name, parts in figures.items()}
