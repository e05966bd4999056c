"""Server-rendered SVG chart of a decision's answer: its candidates on the Pareto frontier's first two criteria.

Same contract as registry/presentation/charts.py: inline-safe SVG or None, deterministic, ids scoped per chart.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, cast

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

# A candidate on one criterion: (value, interval low, interval high), the bounds None where the answer has none.
_Point = tuple[float, float | None, float | None]

CRITERION_AXES = {
    "cost": ("cost_per_million", "cost per million outputs"),
    "latency": ("latency_ms", "latency at the first objective (ms)"),
    "energy": ("energy_per_output", "energy per output"),
}


def pareto_chart(answer: Mapping[str, Any]) -> str | None:
    """A decision's candidates on the first two criteria of its Pareto frontier (lower is better on both): frontier
    members filled and joined, the rest hollow, candidates that miss the objectives left out (as in the frontier).
    Intervals where the answer has them. None when the frontier uses fewer than two criteria."""
    criteria, points, members = _pareto(answer)
    return _pareto_svg(criteria, list(enumerate(points)), points, members) if points else None


def pareto_charts(answer: Mapping[str, Any]) -> list[str]:
    """pareto_chart in as many parts (of fewer candidates each, on the same axes, each with the whole frontier's
    line) as keep each whole on a report's page, its legend included (chart_style.page_parts); [] without one."""
    criteria, points, members = _pareto(answer)
    return page_parts(lambda part: _pareto_svg(criteria, part, points, members), list(enumerate(points)))


def _pareto(answer: Mapping[str, Any]) -> tuple[list[str], list[tuple[int, Mapping[str, Any], list[_Point]]], set[int]]:
    """The frontier's first two criteria, the candidates drawn on them (none with fewer than two), its members."""
    front = answer.get("frontier") or {}
    criteria = list(front.get("criteria") or [])[:2]
    if len(criteria) < 2:
        return criteria, [], set()
    return criteria, _pareto_points(answer, criteria), set(front.get("members") or [])


def _pareto_svg(
    criteria: list[str],
    part: Sequence[tuple[int, tuple[int, Mapping[str, Any], list[_Point]]]],
    points: Sequence[tuple[int, Mapping[str, Any], list[_Point]]],
    members: set[int],
) -> str:
    """The candidates of `part` (each with its position among all `points`: its colour); the axes and the
    frontier's line are those of all `points`, so parts read alike."""
    with rc_context(STYLE):
        fig = new_figure(figsize=(WIDTH_IN, 3.6))
        ax = fig.add_subplot()
        for n, (i, cand, xy) in part:
            _candidate(ax, n, cand, xy, i in members)
        if len(part) < len(points):  # the other parts' candidates, unlabelled in grey: where this part stands
            shown = {i for _, (i, _, _) in part}
            others = [xy for i, _, xy in points if i not in shown]
            ax.scatter([xy[0][0] for xy in others], [xy[1][0] for xy in others], s=10, color="#c8c8c8", zorder=1)
        _frontier_line(ax, sorted((xy[0][0], xy[1][0]) for i, _, xy in points if i in members))
        _pareto_axes(ax, criteria, points)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=7)
        title(ax, "Candidates that meet or may meet the objectives: filled points are the Pareto frontier")
        return svg(fig, "pareto", [criteria, [[i, xy] for _, (i, _, xy) in part], sorted(members)])


def _pareto_points(answer: Mapping[str, Any], criteria: list[str]) -> list[tuple[int, Mapping[str, Any], list[_Point]]]:
    """(index, candidate, its point on each criterion) of the candidates that do not miss and have both points."""
    points: list[tuple[int, Mapping[str, Any], list[_Point]]] = []
    for i, cand in enumerate(answer.get("candidates") or []):
        if cand.get("meets") == "misses":
            continue
        xy = [_criterion_point(cand, c) for c in criteria]
        if all(p is not None for p in xy):
            points.append((i, cand, cast(list[_Point], xy)))  # none is None (checked above)
    return points


def _candidate(ax: Any, n: int, cand: Mapping[str, Any], xy: list[_Point], on: bool) -> None:
    """One candidate's point (filled when on the frontier) with its intervals' whiskers."""
    (x, xlo, xhi), (y, ylo, yhi) = xy
    colour, marker = point_style(n)
    xerr = None if xlo is None or xhi is None else [[max(x - xlo, 0)], [max(xhi - x, 0)]]
    yerr = None if ylo is None or yhi is None else [[max(y - ylo, 0)], [max(yhi - y, 0)]]
    if xerr is not None or yerr is not None:
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="none", ecolor="#777777", elinewidth=0.8, capsize=2, zorder=2)
    ax.scatter(
        [x],
        [y],
        s=46,
        zorder=3,
        marker=marker,
        color=colour if on else "white",
        edgecolors=colour,
        linewidths=1.5,
        label=("\n".join(textwrap.wrap(str(cand.get("label")), LABEL_WIDTH)) or str(cand.get("label")))
        + ("  (frontier)" if on else ""),
    )


def _frontier_line(ax: Any, frontier_xy: list[tuple[float, float]]) -> None:
    if len(frontier_xy) > 1:
        ax.plot(
            [p[0] for p in frontier_xy],
            [p[1] for p in frontier_xy],
            color="#444444",
            linewidth=1,
            linestyle="--",
            zorder=1,
        )


def _pareto_axes(ax: Any, criteria: list[str], points: Sequence[tuple[int, Mapping[str, Any], list[_Point]]]) -> None:
    """Axis labels with the first candidate's units, and limits with room for the outermost point and whisker."""
    unit_of = {c: _criterion_unit(points[0][1], c) for c in criteria}
    ax.set_xlabel(f"{CRITERION_AXES[criteria[0]][1]}{unit_of[criteria[0]]}, lower is better")
    ax.set_ylabel("\n".join(textwrap.wrap(f"{CRITERION_AXES[criteria[1]][1]}{unit_of[criteria[1]]}", 30)))
    highest = [
        max((v for v in (xy[k][0], xy[k][2]) if v is not None), default=0.0) for k in (0, 1) for _, _, xy in points
    ]
    half = len(points)
    ax.set_xlim(0, max(highest[:half]) * 1.08 or 1.0)  # room for the outermost point and its whisker
    ax.set_ylim(0, max(highest[half:]) * 1.1 or 1.0)


def _criterion_point(cand: Mapping[str, Any], criterion: str) -> _Point | None:
    block = cand.get(CRITERION_AXES[criterion][0])
    if isinstance(block, Mapping):
        value = finite(block.get("value"))
        return None if value is None else (value, finite(block.get("ci_low")), finite(block.get("ci_high")))
    value = finite(block)
    return None if value is None else (value, None, None)


def _criterion_unit(cand: Mapping[str, Any], criterion: str) -> str:
    block = cand.get(CRITERION_AXES[criterion][0])
    unit = block.get("unit") if isinstance(block, Mapping) else None
    return f" ({unit})" if unit and criterion != "cost" else f" ({unit.split(' per ')[0]})" if unit else ""
