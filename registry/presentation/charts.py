"""Server-rendered SVG charts of comparisons and runs, shared by the decision-report PDF and the web UI.

Contract of every public function: it returns SVG markup as `str`, or None when there is nothing to plot. The
markup is safe to inline in HTML: no XML declaration or DOCTYPE, no scripts, no external references (text is drawn
as paths, so no font is fetched), and every id is prefixed with a per-chart prefix derived from the chart's kind
and data, so several charts on one page never share an id. Output is deterministic for the same input. The house
style and the SVG writer are in chart_style; a decision's chart in charts_decision; a history's in charts_series.
"""

from __future__ import annotations

import math
import statistics
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from protocol.numbers import Style, number
from protocol.rules import MIN_SAMPLES_FOR_PERCENTILE, percentile_allowed
from registry.presentation.chart_style import (
    PALETTE,
    STYLE,
    WIDTH_IN,
    finite,
    new_figure,
    page_parts,
    rc_context,
    svg,
    title,
    value_label,
)
from registry.presentation.words import metric_label

PERCENTILES = ("p50", "p90", "p95", "p99")
LATENCY_METRICS = ("latency_ms", "ttft_ms", "tpot_ms", "step_time_ms")
LABEL_WIDTH = 34  # characters per line of a bar label; longer labels wrap (never truncated to identical text)


# ------------------------------------------------------------------------------------------ public charts


def throughput_chart(result: Mapping[str, Any]) -> str | None:
    """Each arm's headline estimate as a horizontal bar with its confidence interval (when there is one)."""
    rows, xmax = _throughput_rows(result)
    return _throughput_svg(result, rows, xmax) if rows else None


def throughput_charts(result: Mapping[str, Any]) -> list[str]:
    """throughput_chart in as many parts as keep each whole on a report's page (chart_style.page_parts), every
    part on one scale; [] when no arm has an estimate."""
    rows, xmax = _throughput_rows(result)
    return page_parts(lambda part: _throughput_svg(result, part, xmax), rows)


def _throughput_rows(result: Mapping[str, Any]) -> tuple[list[tuple[str, Mapping[str, Any]]], float]:
    """(bar label, arm) of each arm with an estimate, and the value axis's end: room for every bar, interval
    and value label."""
    arms = _estimated_arms(result)
    if not arms:
        return [], 0.0
    values, _, highs = _estimates(arms)
    return list(zip(arm_labels(arms), arms, strict=True)), max(max(values), max(h or 0 for h in highs)) * 1.22


def _throughput_svg(result: Mapping[str, Any], rows: Sequence[tuple[str, Mapping[str, Any]]], xmax: float) -> str:
    labels = [label for label, _ in rows]
    arms = [arm for _, arm in rows]
    values, lows, highs = _estimates(arms)
    with rc_context(STYLE):
        fig = new_figure(
            figsize=(WIDTH_IN, 0.9 + 0.3 * sum(1 + label.count("\n") for label in labels) + 0.12 * len(arms))
        )
        ax = fig.add_subplot()
        ys = list(range(len(arms)))[::-1]
        ax.barh(ys, values, color=[PALETTE[i % len(PALETTE)] for i in range(len(arms))], height=0.6, zorder=2)
        for y, v, lo, hi in zip(ys, values, lows, highs, strict=True):
            _interval_and_value(ax, y, v, lo, hi)
        ax.set_yticks(ys, labels)
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, xmax)
        ax.set_xlabel(_headline_label(arms[0]["estimate"]))
        title(ax, "Headline result per configuration (bars: 95% interval)")
        whole = len(arms) == len(_estimated_arms(result))
        return svg(fig, "throughput", result.get("arms") if whole else [labels, values, lows, highs])


def _estimates(arms: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float | None], list[float | None]]:
    """Each arm's headline value, and its interval's low and high bounds (None where it has none)."""
    values = [float(a["estimate"]["value"]) for a in arms]
    lows = [finite(a["estimate"].get("ci_low")) for a in arms]
    highs = [finite(a["estimate"].get("ci_high")) for a in arms]
    return values, lows, highs


def _headline_label(est: Mapping[str, Any]) -> str:
    direction = "lower is better" if est.get("lower_is_better") else "higher is better"
    return f"{metric_label(est.get('metric'))} ({est.get('unit') or 'no unit'}), {direction}"


def _interval_and_value(ax: Any, y: int, v: float, lo: float | None, hi: float | None) -> None:
    """A bar's interval whisker (when it has both bounds) and its value printed beyond it."""
    if lo is not None and hi is not None:
        ax.errorbar(
            v,
            y,
            xerr=[[max(v - lo, 0)], [max(hi - v, 0)]],
            fmt="none",
            ecolor="#222222",
            elinewidth=1,
            capsize=3,
            zorder=3,
        )
    value_label(ax, hi if hi is not None else v, y, v)


def latency_percentiles_chart(runs: Sequence[Mapping[str, Any]], result: Mapping[str, Any] | None = None) -> str | None:
    """p50/p90/p95/p99 latency (ms), one panel per latency metric. With the comparison `result`, one row per
    configuration (the median of its runs' values); without it, one row per run. A percentile is drawn only from
    runs with enough samples for it (protocol.rules), and a percentile no row has gets no legend entry either."""
    metrics = _latency_metrics(runs)
    if not metrics:
        return None
    return _percentiles_svg(_percentile_rows(runs, result), metrics, runs, result is not None)


def latency_percentiles_charts(runs: Sequence[Mapping[str, Any]], result: Mapping[str, Any] | None = None) -> list[str]:
    """latency_percentiles_chart in as many parts (of fewer configurations each, every panel in each part) as keep
    each whole on a report's page (chart_style.page_parts); each metric on one scale in every part."""
    metrics = _latency_metrics(runs)
    if not metrics:
        return []
    rows = _percentile_rows(runs, result)
    ends = {
        m: max((_row_percentile(r, m, n) or 0.0 for _, r in rows for n in PERCENTILES), default=0.0) for m in metrics
    }
    return page_parts(lambda part: _percentiles_svg(part, metrics, runs, result is not None, ends), rows)


def _percentiles_svg(
    rows: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    metrics: Sequence[str],
    runs: Sequence[Mapping[str, Any]],
    per_configuration: bool,
    ends: Mapping[str, float] | None = None,
) -> str:
    """The percentile panels of `rows`; `ends`: each metric's largest value over every part (one scale for all)."""
    per = "configuration" if per_configuration else "run"
    with rc_context(STYLE):
        heights = [len(rows) * (1 + max(0, max(lab.count("\n") for lab, _ in rows))) for _ in metrics]
        # Per panel: its rows, plus a title, tick labels and an axis label (about 1.3 in), or they overlap.
        fig = new_figure(figsize=(WIDTH_IN, 0.4 + sum(0.3 * h + 1.3 for h in heights)))
        axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
        for ax, metric in zip(axes, metrics, strict=True):
            shown = _percentile_panel(ax, rows, metric, runs, per)
            if ends and ends.get(metric):
                ax.set_xlim(0, ends[metric] * 1.05)
            if shown:  # below the axis label: a legend above would run into the title
                _legend_below(ax, len(rows), len(shown))
        fig.tight_layout(h_pad=1.2)
        # The id prefix is seeded by what is drawn, not by the runs' documents (raw samples can be megabytes).
        drawn = [[label, [[_row_percentile(r, m, n) for n in PERCENTILES] for m in metrics]] for label, r in rows]
        return svg(fig, "latency", [drawn, metrics])


def _legend_below(ax: Any, rows: int, entries: int) -> None:
    ax.legend(
        loc="upper right",
        bbox_to_anchor=(1.0, -0.16 - 0.6 / max(1, rows)),
        ncols=entries,
        handlelength=1.2,
        borderaxespad=0.2,
    )


def latency_distribution_chart(document: Mapping[str, Any], label: str | None = None) -> str | None:
    """Histogram of one run's raw latency samples (all repetitions pooled), with p50 marked, and p99 where the
    samples are enough for it (protocol.rules). `label` names the run (run id and configuration)."""
    metric, values = _latency_samples(document)
    if metric is None or len(values) < 2:
        return None
    values.sort()
    unit = document["samples"][metric].get("unit") or "ms"
    words = metric_label(metric, document)
    with rc_context(STYLE):
        fig = new_figure(figsize=(WIDTH_IN, 2.4))
        ax = fig.add_subplot()
        ax.hist(values, bins=min(60, max(10, int(math.sqrt(len(values))))), color=PALETTE[0], zorder=2)
        _percentile_marks(ax, values, unit)
        ax.set_xlabel(f"{words} ({unit}){_missing_p99(len(values))}")
        ax.set_ylabel("requests (count)" if "request" in words else "observations (count)")
        title(ax, f"Distribution of {words}: {label or _system(document)}, {len(values):,} samples")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right")
        return svg(fig, "distribution", [metric, len(values), values[0], values[-1], _system(document), label])


def _latency_samples(document: Mapping[str, Any]) -> tuple[str | None, list[float]]:
    """The first latency metric with raw samples, and its samples over all repetitions (None, [] without one)."""
    samples = document.get("samples") or {}
    metric = next((m for m in LATENCY_METRICS if (samples.get(m) or {}).get("repetitions")), None)
    if metric is None:
        return None, []
    return metric, [float(v) for rep in samples[metric]["repetitions"] for v in rep if finite(v) is not None]


def _percentile_marks(ax: Any, values: Sequence[float], unit: str) -> None:
    """p50, and p99 where the samples are enough for it, as vertical lines over the sorted `values`."""
    for name, q, colour in (("p50", 0.50, PALETTE[1]), ("p99", 0.99, PALETTE[5])):
        if not percentile_allowed(name, len(values)):
            continue
        x = values[min(len(values) - 1, math.ceil(q * len(values)) - 1)]
        ax.axvline(x, color=colour, linewidth=1.2, zorder=3, label=f"{name} = {number(x, Style.CHART)} {unit}")


def _missing_p99(count: int) -> str:
    """Why p99 is missing, a line under the axis label (the legend holds the top right corner); "" when it is not."""
    if percentile_allowed("p99", count):
        return ""
    return f"\np99 not marked: {count:,} samples, fewer than the {_min_samples('p99'):,} it needs"


def latency_vs_load_chart(runs: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str | None:
    """p99 latency against offered load, one line per configuration (`labels`, one per run; else the system
    name); only when some configuration was measured at 2+ loads, and only from runs with enough samples for p99."""
    metric, series = _load_series(runs, labels)
    if not series:
        return None
    return _load_svg(metric_label(metric, runs[0]), sorted(series.items()))


def latency_vs_load_charts(runs: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> list[str]:
    """latency_vs_load_chart in as many parts (of fewer configurations each, on the same axes) as keep each whole
    on a report's page, its legend included (chart_style.page_parts)."""
    metric, series = _load_series(runs, labels)
    if not series:
        return []
    points = [p for pts in series.values() for p in pts]
    limits = (min(x for x, _ in points), max(x for x, _ in points), max(y for _, y in points))
    return page_parts(lambda part: _load_svg(metric_label(metric, runs[0]), part, limits), sorted(series.items()))


def _load_svg(
    words: str,
    series: Sequence[tuple[str, list[tuple[float, float]]]],
    limits: tuple[float, float, float] | None = None,
) -> str:
    """One line per configuration; `limits` (lowest and highest load, highest latency over every part): the axes
    that every part shares."""
    # Up to four lines of legend sit inside the axes; more would cover the lines, so they go below, in room of
    # their own (constrained layout keeps the axes' height and adds the legend's).
    entries = sum(1 + _wrap(name).count("\n") for name, _ in series)
    below = entries > 4
    with rc_context(STYLE):
        height = 2.6 + (0.17 * entries if below else 0)
        fig = new_figure(figsize=(WIDTH_IN, height), layout="constrained" if below else None)
        ax = fig.add_subplot()
        for i, (name, pts) in enumerate(series):
            _load_line(ax, name, sorted(pts), PALETTE[i % len(PALETTE)])
        ax.set_xlabel("offered load (requests/s)")
        ax.set_ylabel(f"p99 {words} (ms)")
        ax.set_ylim(bottom=0)
        if limits is not None:
            low, high, top = limits
            pad = (high - low) * 0.05 or 0.5
            ax.set_xlim(low - pad, high + pad)
            ax.set_ylim(0, top * 1.08)
        title(ax, f"p99 {words} against offered load")
        if below:
            fig.legend(*ax.get_legend_handles_labels(), loc="outside lower left")
        else:
            ax.legend(loc="upper left")
        return svg(fig, "load", list(series))


def _load_line(ax: Any, name: str, pts: Sequence[tuple[float, float]], colour: str) -> None:
    ax.plot(
        [x for x, _ in pts],
        [y for _, y in pts],
        marker="o",
        markersize=4,
        linewidth=1.4,
        color=colour,
        label=_wrap(name),
    )


def derived_chart(result: Mapping[str, Any]) -> str | None:
    """Energy per output and cost per million outputs per arm (derived numbers), one panel each where available."""
    panels = _derived_panels(result)
    return _derived_svg(panels) if panels else None


def derived_charts(result: Mapping[str, Any]) -> list[str]:
    """derived_chart in as many parts (of fewer configurations each, each panel on one scale in every part) as
    keep each whole on a report's page (chart_style.page_parts)."""
    panels = _derived_panels(result)
    labels = list(dict.fromkeys(label for _, points in panels for label, _ in points))
    ends = {name: max(float(d["value"]) for _, d in points) for name, points in panels}

    def draw(part: Sequence[str]) -> str | None:
        kept = [(name, [(label, d) for label, d in points if label in part]) for name, points in panels]
        kept = [(name, points) for name, points in kept if points]
        return _derived_svg(kept, ends) if kept else None

    return page_parts(draw, labels)


def _derived_svg(
    panels: Sequence[tuple[str, Sequence[tuple[str, Mapping[str, Any]]]]], ends: Mapping[str, float] | None = None
) -> str:
    rows = max(len(points) for _, points in panels)
    with rc_context(STYLE):
        fig = new_figure(figsize=(WIDTH_IN, 0.9 + 0.36 * rows * len(panels) + 0.45 * len(panels)))
        axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
        for ax, (name, points) in zip(axes, panels, strict=True):
            _derived_panel(ax, name, points, (ends or {}).get(name))
        fig.tight_layout(h_pad=1.2)
        return svg(fig, "derived", panels)


def comparison_charts(result: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the comparison charts that have something to plot, in page order, without drawing any.

    Lets a page link to each chart (drawn on its own request) instead of drawing them all before answering.
    """
    drawn = {
        "throughput_chart": bool(_estimated_arms(result)),
        "latency_percentiles_chart": bool(_latency_metrics(runs)),
        "latency_vs_load_chart": bool(_load_series(runs)[1]),
        "derived_chart": bool(_derived_panels(result)),
    }
    return [name for name, has_data in drawn.items() if has_data]


# ------------------------------------------------------------------------------------------ what is plotted


def _estimated_arms(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [a for a in result.get("arms") or [] if finite((a.get("estimate") or {}).get("value")) is not None]


def _latency_metrics(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    return [m for m in LATENCY_METRICS if any(_percentiles(r, m) for r in runs)][:2]


def _load_series(
    runs: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None
) -> tuple[str, dict[str, list[tuple[float, float]]]]:
    """(latency metric, {configuration: [(load, p99)]}); no series unless one was measured at 2+ loads."""
    metric = next((m for m in LATENCY_METRICS[:3] if any(_percentiles(r, m).get("p99") for r in runs)), None)
    if metric is None:
        return "", {}
    series: dict[str, list[tuple[float, float]]] = {}
    for i, run in enumerate(runs):
        load, p99 = _load(run), _percentiles(run, metric).get("p99")
        if load is not None and p99 is not None:
            series.setdefault(labels[i] if labels else _system(run), []).append((load, p99))
    if not any(len({x for x, _ in pts}) >= 2 for pts in series.values()):
        return metric, {}
    return metric, series


def _derived_panels(result: Mapping[str, Any]) -> list[tuple[str, list[tuple[str, Mapping[str, Any]]]]]:
    arms = result.get("arms") or []
    panels = []
    for name in ("energy_per_output", "cost_per_million_outputs"):
        points = [
            (label, d)
            for a, label in zip(arms, arm_labels(arms), strict=True)
            for d in a.get("derived") or []
            if d.get("name") == name and finite(d.get("value")) is not None
        ]
        if points:
            panels.append((name, points))
    return panels


# ------------------------------------------------------------------------------------------ panels


def _percentile_rows(
    runs: Sequence[Mapping[str, Any]], result: Mapping[str, Any] | None
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """(label, its runs): one row per configuration of `result`, else one per run."""
    arms = [a for a in (result or {}).get("arms") or [] if a.get("runs")]
    if arms:
        return [
            (label, [runs[i] for i in arm["runs"] if i < len(runs)])
            for arm, label in zip(arms, arm_labels(arms), strict=True)
        ]
    return [(label, [run]) for label, run in zip(_run_labels(runs), runs, strict=True)]


def _percentile_panel(
    ax: Any,
    rows: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    metric: str,
    runs: Sequence[Mapping[str, Any]],
    per: str,
) -> list[str]:
    """Bars of each percentile per row; returns the percentiles drawn (only those get a legend entry)."""
    values = {name: [_row_percentile(row_runs, metric, name) for _, row_runs in rows] for name in PERCENTILES}
    shown = [name for name in PERCENTILES if any(v is not None for v in values[name])]
    height = 0.8 / max(1, len(shown))
    ys = list(range(len(rows)))[::-1]
    for k, name in enumerate(shown):
        offset = (len(shown) - 1) / 2 - k
        _percentile_bars(ax, name, [(y + offset * height, v) for y, v in zip(ys, values[name], strict=True)], height)
    ax.set_yticks(ys, [label for label, _ in rows])
    ax.grid(axis="y", visible=False)
    words = metric_label(metric, runs[0] if runs else {})
    ax.set_xlabel(f"{words} (ms), lower is better")
    title(ax, _percentile_title(words, per))
    return shown


def _percentile_title(words: str, per: str) -> str:
    return f"{words.capitalize()} percentiles per {per}{' (median over its runs)' if per == 'configuration' else ''}"


def _percentile_bars(ax: Any, name: str, at: Sequence[tuple[float, float | None]], height: float) -> None:
    """One percentile's bars at their positions, skipping the rows without it."""
    ax.barh(
        [pos for pos, v in at if v is not None],
        [v for _, v in at if v is not None],
        height=height * 0.92,
        color=PALETTE[PERCENTILES.index(name)],
        label=name,
        zorder=2,
    )


def _row_percentile(runs: Sequence[Mapping[str, Any]], metric: str, name: str) -> float | None:
    """The median over `runs` of their `name` percentile, from runs with enough samples for it only."""
    found = []
    for run in runs:
        block = (run.get("metrics") or {}).get(metric) or {}
        count = finite(block.get("count")) if isinstance(block, Mapping) else None
        value = _percentiles(run, metric).get(name)
        if value is not None and (name == "p50" or (count is not None and percentile_allowed(name, int(count)))):
            found.append(value)
    return statistics.median(found) if found else None


def _min_samples(name: str) -> int:
    return MIN_SAMPLES_FOR_PERCENTILE.get(name, 0)


def _derived_panel(ax: Any, name: str, points: Sequence[tuple[str, Mapping[str, Any]]], end: float | None) -> None:
    ys = list(range(len(points)))[::-1]
    values = [float(d["value"]) for _, d in points]
    ax.barh(ys, values, color=PALETTE[2] if name == "energy_per_output" else PALETTE[1], height=0.6, zorder=2)
    for y, v in zip(ys, values, strict=True):
        value_label(ax, v, y, v)
    ax.set_yticks(ys, [label for label, _ in points])
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, (end or max(values)) * 1.25)  # `end`: the largest value over every part of a chart
    unit = points[0][1].get("unit") or ""
    words = "Energy per output" if name == "energy_per_output" else "Cost per million outputs"
    ax.set_xlabel(f"{unit}, lower is better")
    title(ax, f"{words} (derived{': measured rate and stated price' if 'cost' in name else ''})")


# ------------------------------------------------------------------------------------------ labels


def arm_labels(arms: Sequence[Mapping[str, Any]]) -> list[str]:
    """Bar labels of arms: each configuration's own label, wrapped onto lines (never cut), unique."""
    return unique_labels([str(a.get("label") or f"configuration {a.get('index')}") for a in arms])


def unique_labels(labels: Sequence[str]) -> list[str]:
    """`labels` wrapped to LABEL_WIDTH (at most three lines, the rest elided in the middle of the last); where two
    still read the same, each gets its position, so no two bars share a label."""
    out = [_wrap(label) for label in labels]
    return [f"{text} [{i + 1}]" if out.count(text) > 1 else text for i, text in enumerate(out)]


def _wrap(text: str) -> str:
    lines = textwrap.wrap(text, LABEL_WIDTH, break_long_words=True, break_on_hyphens=False) or [text]
    if len(lines) > 3:
        lines = [*lines[:2], "… " + lines[-1][-(LABEL_WIDTH - 2) :]]
    return "\n".join(lines)


def _percentiles(doc: Mapping[str, Any], metric: str) -> dict[str, float]:
    block = ((doc.get("metrics") or {}).get(metric)) or {}
    if not isinstance(block, Mapping):
        return {}
    return {p: float(block[p]) for p in PERCENTILES if finite(block.get(p)) is not None}


def _load(doc: Mapping[str, Any]) -> float | None:
    """The offered load of a serving run: the scenario's target rate, else the measured request rate."""
    target = finite((doc.get("scenario") or {}).get("target_qps"))
    if target is not None:
        return target
    rate = (doc.get("metrics") or {}).get("request_rate") or {}
    return finite(rate.get("value")) if isinstance(rate, Mapping) else None


def _system(doc: Mapping[str, Any]) -> str:
    return str((doc.get("system") or {}).get("name") or "unnamed system")


def _run_labels(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    return unique_labels(
        [
            f"{_system(r)} (run {i + 1})" if [_system(x) for x in runs].count(_system(r)) > 1 else _system(r)
            for i, r in enumerate(runs)
        ]
    )
