"""Server-rendered SVG charts of a configuration's history (registry/selectors/series.py), in the house style of
registry/presentation/charts.py (same contract: inline-safe SVG or None, deterministic, ids scoped per chart).

Both charts take `History.as_dict()`: the headline over time (each point's `at`: when the run was measured, or in a
series when the registry received it; the axis says which), each run with its interval and the change points
marked; and the headline per software version, each with the interval over its runs.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from protocol.numbers import Style, number
from registry.presentation.chart_style import PALETTE, STYLE, new_figure, rc_context, svg
from registry.presentation.words import HEADLINE_STYLE, metric_label

if TYPE_CHECKING:
    from matplotlib import dates as mdates
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

CHANGE_COLOUR = "#d55e00"
FONT: dict[RcKeyType, float] = {
    "font.size": 10,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
}
SIZE = (4.6, 3.2)  # inches: about 330 px at 72 dpi, the width of a 390 px screen's panel: fonts at full size
# Runs submitted seconds apart (a sweep, the demo) would get sub-second ticks that read "19.320": the time axis
# spans at least this much, and its finest tick label is a clock time.
MIN_TIME_SPAN = timedelta(minutes=1)


def _axis_label(history: Mapping[str, Any]) -> str:
    direction = "lower is better" if history.get("lower_is_better") else "higher is better"
    return f"{metric_label(history.get('metric'))} ({history.get('unit') or 'no unit'}), {direction}"


def _time_locator() -> mdates.AutoDateLocator:
    """3 to 6 ticks on any span. Each unit's intervals reach the next unit, so no span falls between two units
    (where matplotlib warns and crowds the axis: with its defaults, minticks 5 above the maxticks we want)."""
    from matplotlib import dates as mdates  # loaded already: a figure is being drawn (chart_style.new_figure)

    # matplotlib.dates is unannotated (no stub), so its constructors are untyped calls.
    locator = mdates.AutoDateLocator(minticks=3, maxticks=6)  # type: ignore[no-untyped-call]
    locator.intervald[mdates.SECONDLY] = [1, 2, 5, 10, 15, 30, 60]  # 2: seven minutes would get one tick at 5
    locator.intervald[mdates.MINUTELY] = [1, 2, 5, 10, 15, 30, 60]
    locator.intervald[mdates.HOURLY] = [*locator.intervald[mdates.HOURLY], 24]
    locator.intervald[mdates.MONTHLY] = [*locator.intervald[mdates.MONTHLY], 12]
    return locator


# The time axis's words, by the history's time_basis: which time of a run is plotted.
TIME_AXIS = {
    "measured": "when measured (UTC)",
    "submitted": "when received (UTC)",
}


def time_axis_label(history: Mapping[str, Any]) -> str:
    """Which time of each run the time axis plots, in words ('when measured (UTC)')."""
    return TIME_AXIS.get(str(history.get("time_basis")), TIME_AXIS["submitted"])


def history_time_chart(history: Mapping[str, Any]) -> str | None:
    """Headline per run over the time its history places it at (when measured, or a series' when received): point
    and 95% interval, coloured by software; change points as orange diamonds on a dashed line."""
    with rc_context({**STYLE, **FONT}):
        fig = history_time_figure(history)
        return svg(fig, "histtime", [history.get("run"), _plotted(history)]) if fig is not None else None


def _plotted(history: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p for p in history.get("points") or [] if p.get("value") is not None]


def history_time_figure(history: Mapping[str, Any]) -> Figure | None:
    """The figure history_time_chart draws (None without a point to plot); call it inside the charts' rc_context."""
    points = _plotted(history)
    if not points:
        return None
    software = list(dict.fromkeys(p["software"] for p in points))
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(software)}
    fig = new_figure(figsize=(SIZE[0], SIZE[1] + _legend_room(software)))
    ax = fig.add_subplot()
    for name in software:
        _software_runs(ax, name, [p for p in points if p["software"] == name], colour[name])
    for p in points:
        if p.get("change_point"):
            _change_point(ax, p)
    ax.set_ylabel("\n".join(textwrap.wrap(_axis_label(history), 30)))
    _time_axis(ax, [_when(p) for p in points])
    ax.set_xlabel(time_axis_label(history), loc="left")  # the date formatter's offset ("2026-Dec-02") is at the right
    # from 0, with room above the highest point and interval: a marker at the top edge would be cut in half
    top = max(max(p["value"], p.get("ci_high") or 0) for p in points)
    room = top * 1.08
    if math.isfinite(room):  # a value near the largest double (1e308) has no room above it: matplotlib's own limits
        ax.set_ylim(0, max(ax.get_ylim()[1], room))
    if len(software) > 1 or any(p.get("change_point") for p in points):
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=1)
    return fig


def _when(point: Mapping[str, Any]) -> datetime:
    """A point's place on the time axis: `at` (when measured; in a series, when received)."""
    return datetime.fromisoformat(point.get("at") or point["submitted_at"])


LEGEND_LINE_IN = 0.25  # one line of the legend below the plot, at its font size, with its spacing


def _legend_room(software: list[str]) -> float:
    """Inches added below the plot for a legend longer than two lines: without them, tight_layout cannot fit the
    legend in the figure ("Tight layout not applied") and the plot is squashed; two lines fit in SIZE."""
    lines = sum(1 + _legend_label(name).count("\n") for name in software) if len(software) > 1 else 0
    return max(lines - 2, 0) * LEGEND_LINE_IN


def _legend_label(name: str) -> str:
    return "\n".join(textwrap.wrap(name, 40))


def _software_runs(ax: Axes, name: str, mine: list[Mapping[str, Any]], colour: str) -> None:
    """One software version's runs: each a point with its interval."""
    xs = [_when(p) for p in mine]
    ys = [p["value"] for p in mine]
    low = [max(p["value"] - p["ci_low"], 0) if p.get("ci_low") is not None else 0 for p in mine]
    high = [max(p["ci_high"] - p["value"], 0) if p.get("ci_high") is not None else 0 for p in mine]
    # x as datetimes: matplotlib's date converter takes them, its stubs allow only numbers (also below).
    ax.errorbar(
        xs,  # type: ignore[arg-type]
        ys,
        yerr=[low, high],
        fmt="o",
        ms=4,
        color=colour,
        ecolor=colour,
        elinewidth=1,
        capsize=2,
        label=_legend_label(name),
        zorder=3,
    )


def _change_point(ax: Axes, p: Mapping[str, Any]) -> None:
    """A change point: a dashed line, a diamond on the run, and its ratio where it has one."""
    x = _when(p)
    ax.axvline(x, color=CHANGE_COLOUR, linestyle="--", linewidth=1, zorder=1)  # type: ignore[arg-type]
    ax.plot([x], [p["value"]], marker="D", ms=8, mfc="none", mec=CHANGE_COLOUR, mew=1.6, zorder=4)  # type: ignore[arg-type]
    ratio = (p.get("change") or {}).get("ratio")
    if ratio is not None:
        ax.annotate(
            f"change ×{number(ratio, Style.CHART)}",
            (x, p["value"]),
            xytext=(5, 8),
            textcoords="offset points",
            color=CHANGE_COLOUR,
            fontsize=9,
        )


def _time_axis(ax: Axes, times: list[datetime]) -> None:
    """At least MIN_TIME_SPAN wide, 3 to 6 ticks, the finest labels clock times."""
    first, last = min(times), max(times)
    if last - first < MIN_TIME_SPAN:
        middle = first + (last - first) / 2
        ax.set_xlim(middle - MIN_TIME_SPAN / 2, middle + MIN_TIME_SPAN / 2)  # type: ignore[arg-type]
    from matplotlib import dates as mdates  # loaded already, as in _time_locator

    locator = _time_locator()
    ax.xaxis.set_major_locator(locator)
    formatter = mdates.ConciseDateFormatter(locator)  # type: ignore[no-untyped-call]  # unannotated, as above
    formatter.formats[-1] = "%H:%M:%S"  # seconds ticks as clock times, not "%S.%f" (the other levels as given)
    ax.xaxis.set_major_formatter(formatter)


def history_software_chart(history: Mapping[str, Any]) -> str | None:
    """Headline per software version (in order of first appearance): geometric mean of its runs with the 95%
    interval over runs (none with fewer than 3)."""
    groups = [g for g in history.get("software") or [] if g.get("value") is not None]
    if not groups:
        return None
    labels = [_group_label(g) for g in groups]
    with rc_context({**STYLE, **FONT}):
        fig = new_figure(figsize=(SIZE[0], 0.9 + 0.45 * sum(1 + lab.count("\n") for lab in labels)))
        ax = fig.add_subplot()
        ys = list(range(len(groups)))[::-1]
        for y, g in zip(ys, groups, strict=True):
            _software_group(ax, y, g)
        ax.set_yticks(ys, labels)
        ax.grid(axis="y", visible=False)
        top = max(max(g["value"], g.get("ci_high") or 0) for g in groups)
        ax.set_xlim(0, top * 1.25)
        ax.set_ylim(-0.6, len(groups) - 0.4)
        ax.set_xlabel("\n".join(textwrap.wrap(_axis_label(history), 40)))
        return svg(fig, "histsoft", [history.get("run"), groups])


def _group_label(g: Mapping[str, Any]) -> str:
    """A software version's tick label with its number of runs, wrapped."""
    return "\n".join(textwrap.wrap(f"{g['software']} ({len(g['runs'])} run{'s' if len(g['runs']) != 1 else ''})", 22))


def _software_group(ax: Axes, y: int, g: Mapping[str, Any]) -> None:
    """One software version's value: with its interval where it has one, else a hollow point; the value beside."""
    v, lo, hi = g["value"], g.get("ci_low"), g.get("ci_high")
    if lo is not None and hi is not None:
        ax.errorbar(
            v,
            y,
            xerr=[[max(v - lo, 0)], [max(hi - v, 0)]],
            fmt="o",
            color=PALETTE[0],
            ms=5,
            elinewidth=1.2,
            capsize=3,
            zorder=3,
        )
    else:
        ax.plot([v], [y], marker="o", mfc="white", mec=PALETTE[0], ms=5, zorder=3)
    _value_beside(ax, hi if hi is not None else v, y, v)


def _value_beside(ax: Axes, x: float, y: int, v: float) -> None:
    ax.annotate(number(v, HEADLINE_STYLE), (x, y), xytext=(5, 0), textcoords="offset points", va="center", fontsize=9)
