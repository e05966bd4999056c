"""Server-rendered SVG chart of serving sweeps: throughput per accelerator against tokens/s per user, one series per
configuration, its frontier joined, the level used at the target ringed, the target drawn as a line.

Same contract as registry/presentation/charts.py: inline-safe SVG or None, deterministic, ids scoped per chart.
Sized like the other charts (WIDTH_IN at 72 dpi, 8 pt text): shrunk to a 390 px phone, text stays about 7 px.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from protocol import serving
from protocol.numbers import Style, number
from registry.presentation.chart_style import (
    STYLE,
    WIDTH_IN,
    finite,
    new_figure,
    page_parts,
    point_style,
    rc_context,
    svg,
    title,
)
from registry.presentation.charts import LABEL_WIDTH


def _xy(level: Mapping[str, Any]) -> tuple[float, float] | None:
    x = finite((level.get("per_user") or {}).get("value"))
    y = finite((level.get("per_accelerator") or {}).get("value"))
    return None if x is None or y is None else (x, y)


def _load_tag(level: Mapping[str, Any]) -> str:
    load = number(level.get("load"), Style.SIGNIFICANT)
    return f"c{load}" if level.get("mode") == "concurrency" else f"{load}/s"


def frontier_chart(series: Sequence[Mapping[str, Any]], min_per_user: float | None = None) -> str | None:
    """`series`: [{"label": configuration, "sweep": protocol.serving.sweep_summary(...)}]. Every measured level is a
    point labelled by its load (c16: concurrency 16); frontier levels are filled and joined by a dashed line (a
    reading aid: nothing between measured loads was measured); the level used at the target is ringed. None when
    no series has two measured points."""
    drawable = _drawable(series)
    return _frontier_svg(drawable, min_per_user, _limits(drawable, min_per_user)) if drawable else None


def frontier_charts(series: Sequence[Mapping[str, Any]], min_per_user: float | None = None) -> list[str]:
    """frontier_chart in as many parts (of fewer configurations each, on the same axes) as keep each whole on a
    report's page, its legend included (chart_style.page_parts); [] when it draws nothing."""
    drawable = _drawable(series)
    limits = _limits(drawable, min_per_user)
    return page_parts(lambda part: _frontier_svg(part, min_per_user, limits), drawable)


_Drawable = tuple[Mapping[str, Any], list[tuple[Mapping[str, Any], tuple[float, float]]]]


def _drawable(series: Sequence[Mapping[str, Any]]) -> list[_Drawable]:
    """Each series with its measured points, of the series that have two at least."""
    drawable = [(s, [(lv, xy) for lv in s["sweep"].get("levels") or [] if (xy := _xy(lv))]) for s in series]
    return [(s, pts) for s, pts in drawable if len(pts) >= 2]


def _limits(drawable: Sequence[_Drawable], min_per_user: float | None) -> tuple[tuple[float, float | None], float]:
    """The per-user axis (per_user_range) and the highest throughput, over every series: axes that parts share."""
    xs = [xy[0] for _, pts in drawable for _, xy in pts]
    top = max((xy[1] for _, pts in drawable for _, xy in pts), default=0.0)
    return (per_user_range(xs, min_per_user) if xs else (0.0, None)), top


def _frontier_svg(
    drawable: Sequence[_Drawable], min_per_user: float | None, limits: tuple[tuple[float, float | None], float]
) -> str:
    labels = [_legend_label(s) for s, _ in drawable]
    with rc_context(STYLE):
        # The legend sits below the axes, one entry per configuration, in height of its own: constrained layout
        # keeps the axes' height whatever the legend's (tight layout squashed the axes under a long legend).
        lines = sum(1 + label.count("\n") for label in labels)
        fig = new_figure(figsize=(WIDTH_IN, 3.4 + 0.14 * lines), layout="constrained")
        ax = fig.add_subplot()
        for n, (s, pts) in enumerate(drawable):
            _series(ax, n, s, pts)
        if min_per_user is not None:
            _target_line(ax, min_per_user)
        ax.set_xlabel("tokens/s per user (median request), higher is more interactive")
        ax.set_ylabel("\n".join(textwrap.wrap("output tokens/s per accelerator", 24)))
        ax.set_xlim(*limits[0])
        ax.set_ylim(0, limits[1] * 1.08 or None)
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=1, fontsize=7.5)
        title(ax, "Throughput per accelerator against interactivity (measured loads; filled: frontier)")
        data = [[s["label"], [xy for _, xy in pts]] for s, pts in drawable]
        return svg(fig, "frontier", [data, min_per_user])


def _target_line(ax: Any, min_per_user: float) -> None:
    ax.axvline(min_per_user, color="#b00020", linewidth=1, linestyle=":", zorder=1)
    ax.annotate(
        f"target {number(min_per_user, Style.SIGNIFICANT)} tok/s per user",
        (min_per_user, 0.0),  # at the foot of the line: the frontier's high points are up the left side
        xycoords=("data", "axes fraction"),
        xytext=(3, 4),
        textcoords="offset points",
        fontsize=7.5,
        color="#b00020",
    )


def per_user_range(xs: Sequence[float], target: float | None) -> tuple[float, float | None]:
    """The x axis from 0, unless every point and the target lie within a factor of 2 of each other: then from 0
    they would stand in one column at the right edge (an endpoint far from saturation keeps its per-user rate at
    every load), so the axis spans them with a margin; its tick labels say where it starts."""
    values = [*xs, *([target] if target is not None else [])]
    low, high = min(values), max(values)
    if low <= 0.5 * high:
        return 0.0, None
    pad = max((high - low) * 0.15, high * 0.02)
    ends = (low - pad, high + pad)
    return ends if all(math.isfinite(e) for e in ends) else (0.0, None)


def _series(ax: Any, n: int, s: Mapping[str, Any], pts: list[tuple[Mapping[str, Any], tuple[float, float]]]) -> None:
    """One configuration: its points (filled on the frontier), the frontier's dashed line, load tags, the used
    level ringed."""
    colour, marker = point_style(n)  # series n and n + 8 never look alike
    sweep = s["sweep"]
    levels = sweep.get("levels") or []
    on = {id(levels[i]) for i in sweep.get("frontier") or [] if i < len(levels)}
    front = sorted(xy for lv, xy in pts if id(lv) in on)
    if len(front) > 1:
        ax.plot([p[0] for p in front], [p[1] for p in front], color=colour, linewidth=1, linestyle="--", zorder=2)
    for lv, (x, y) in pts:
        filled = id(lv) in on
        ax.scatter([x], [y], s=30, marker=marker, color=colour if filled else "white", edgecolors=colour, zorder=3)
        ax.annotate(_load_tag(lv), (x, y), xytext=(3, 3), textcoords="offset points", fontsize=7, color="#333333")
    best = ((sweep.get("best") or {}).get("level")) or None
    if best is not None and (xy := _xy(best)) is not None:
        ax.scatter([xy[0]], [xy[1]], s=140, facecolors="none", edgecolors="#b00020", linewidths=1.4, zorder=4)
    ax.scatter([], [], marker=marker, color=colour, label=_legend_label(s))


def _legend_label(s: Mapping[str, Any]) -> str:
    label = "\n".join(textwrap.wrap(str(s.get("label")), LABEL_WIDTH * 2)) or str(s.get("label"))
    best = ((s["sweep"].get("best") or {}).get("level")) or None
    return label + (" (ringed: level used at the target)" if best else "")


def decision_frontier_chart(answer: Mapping[str, Any]) -> str | None:
    """The frontier of every candidate of a decision's answer that was measured as a sweep, with the question's
    interactivity target; None when fewer than one candidate has a sweep to draw."""
    series, target = _answer_series(answer)
    return frontier_chart(series, target) if series else None


def decision_frontier_charts(answer: Mapping[str, Any]) -> list[str]:
    """decision_frontier_chart in parts that each fit a report's page (frontier_charts); [] without sweeps."""
    series, target = _answer_series(answer)
    return frontier_charts(series, target) if series else []


def _answer_series(answer: Mapping[str, Any]) -> tuple[list[dict[str, Any]], float | None]:
    series = [{"label": c.get("label"), "sweep": c["sweep"]} for c in answer.get("candidates") or [] if c.get("sweep")]
    if not series:
        return [], None
    return series, finite((series[0]["sweep"].get("target") or {}).get("min_tokens_per_second_per_user"))


def runs_frontier_chart(
    docs: Sequence[Mapping[str, Any]], labels: Sequence[str], min_per_user: float | None = None
) -> str | None:
    """The frontier of runs grouped by their configuration's label (a comparison's arms): None unless some label
    has runs at two offered loads of a sweep."""
    series = _runs_series(docs, labels, min_per_user)
    return frontier_chart(series, min_per_user) if series else None


def runs_frontier_charts(
    docs: Sequence[Mapping[str, Any]], labels: Sequence[str], min_per_user: float | None = None
) -> list[str]:
    """runs_frontier_chart in parts that each fit a report's page (frontier_charts); [] when it draws nothing."""
    return frontier_charts(_runs_series(docs, labels, min_per_user), min_per_user)


def _runs_series(
    docs: Sequence[Mapping[str, Any]], labels: Sequence[str], min_per_user: float | None
) -> list[dict[str, Any]]:
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for doc, label in zip(docs, labels, strict=True):
        if serving.sweep_id(doc) is not None:
            grouped.setdefault(label, []).append(doc)
    target = serving.Target(min_per_user) if min_per_user is not None else None
    return [{"label": k, "sweep": serving.sweep_summary(serving.levels(v), target)} for k, v in grouped.items()]
