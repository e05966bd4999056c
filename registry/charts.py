"""Server-rendered SVG charts of comparisons and runs, shared by the decision-report PDF and the web UI.

Contract of every public function: it returns SVG markup as `str`, or None when there is nothing to plot. The
markup is safe to inline in HTML: no XML declaration or DOCTYPE, no scripts, no external references (text is drawn
as paths, so no font is fetched), and every id is prefixed with a per-chart prefix derived from the chart's kind
and data, so several charts on one page never share an id. Output is deterministic for the same input.

matplotlib is used through its object API (`Figure` + the SVG canvas), never pyplot: no global state, safe in
threads and Celery workers, no display needed.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import statistics
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before anything else of matplotlib: never a GUI backend on a server

from matplotlib import rc_context
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

from protocol.rules import percentile_allowed

PERCENTILES = ("p50", "p90", "p95", "p99")
LATENCY_METRICS = ("latency_ms", "ttft_ms", "tpot_ms", "step_time_ms")
METRIC_WORDS = {
    "latency_ms": "request latency",
    "ttft_ms": "time to first token",
    "tpot_ms": "time per output token",
    "step_time_ms": "step time",
    "throughput": "throughput",
    "goodput": "goodput",
    "request_rate": "request rate",
    "time_to_quality": "time to quality",
}
# Sober, colour-blind-safe (Okabe-Ito) colours; the first is the registry's ink blue.
PALETTE = ("#1f4e79", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#0072b2", "#999999")
WIDTH_IN = 6.6
STYLE: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 8.5,
    "axes.titlesize": 9.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 8.5,
    "axes.edgecolor": "#555555",
    "axes.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.5,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "svg.fonttype": "none",
    "svg.hashsalt": "benchreg",
    "figure.dpi": 72,
    # Submitter text (names with `$`, backslashes) is drawn as written, never parsed as mathtext or TeX.
    "text.parse_math": False,
    "text.usetex": False,
}
LABEL_WIDTH = 34  # characters per line of a bar label; longer labels wrap (never truncated to identical text)
_ID = re.compile(r'\bid="([^"]+)"')


# ------------------------------------------------------------------------------------------ public charts


def throughput_chart(result: Mapping[str, Any]) -> str | None:
    """Each arm's headline estimate as a horizontal bar with its confidence interval (when there is one)."""
    arms = _estimated_arms(result)
    if not arms:
        return None
    est0 = arms[0]["estimate"]
    labels = arm_labels(arms)
    values = [float(a["estimate"]["value"]) for a in arms]
    lows = [_number(a["estimate"].get("ci_low")) for a in arms]
    highs = [_number(a["estimate"].get("ci_high")) for a in arms]
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 0.9 + 0.3 * sum(1 + label.count("\n") for label in labels) + 0.12 * len(arms)))
        ax = fig.add_subplot()
        ys = list(range(len(arms)))[::-1]
        ax.barh(ys, values, color=[PALETTE[i % len(PALETTE)] for i in range(len(arms))], height=0.6, zorder=2)
        for y, v, lo, hi in zip(ys, values, lows, highs, strict=True):
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
            _value_label(ax, hi if hi is not None else v, y, v)
        ax.set_yticks(ys, labels)
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, max(max(values), max((h for h in highs if h is not None), default=0)) * 1.22)
        direction = "lower is better" if est0.get("lower_is_better") else "higher is better"
        ax.set_xlabel(f"{_metric_words(est0.get('metric'))} ({est0.get('unit') or 'no unit'}), {direction}")
        _title(ax, "Headline result per configuration (bars: 95% interval)")
        return _svg(fig, "throughput", result.get("arms"))


def latency_percentiles_chart(runs: Sequence[Mapping[str, Any]], result: Mapping[str, Any] | None = None) -> str | None:
    """p50/p90/p95/p99 latency (ms), one panel per latency metric. With the comparison `result`, one row per
    configuration (the median of its runs' values); without it, one row per run. A percentile is drawn only from
    runs with enough samples for it (protocol.rules), and a percentile no row has gets no legend entry either."""
    metrics = _latency_metrics(runs)
    if not metrics:
        return None
    rows = _percentile_rows(runs, result)
    per = "configuration" if result is not None else "run"
    with rc_context(STYLE):
        heights = [len(rows) * (1 + max(0, max(lab.count("\n") for lab, _ in rows))) for _ in metrics]
        # Per panel: its rows, plus a title, tick labels and an axis label (about 1.3 in), or they overlap.
        fig = Figure(figsize=(WIDTH_IN, 0.4 + sum(0.3 * h + 1.3 for h in heights)))
        axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
        for ax, metric in zip(axes, metrics, strict=True):
            shown = _percentile_panel(ax, rows, metric, runs, per)
            if shown:  # below the axis label: a legend above would run into the title
                ax.legend(
                    loc="upper right",
                    bbox_to_anchor=(1.0, -0.16 - 0.6 / max(1, len(rows))),
                    ncols=len(shown),
                    handlelength=1.2,
                    borderaxespad=0.2,
                )
        fig.tight_layout(h_pad=1.2)
        # The id prefix is seeded by what is drawn, not by the runs' documents (raw samples can be megabytes).
        drawn = [[label, [[_row_percentile(r, m, n) for n in PERCENTILES] for m in metrics]] for label, r in rows]
        return _svg(fig, "latency", [drawn, metrics])


def latency_distribution_chart(document: Mapping[str, Any], label: str | None = None) -> str | None:
    """Histogram of one run's raw latency samples (all repetitions pooled), with p50 marked, and p99 where the
    samples are enough for it (protocol.rules). `label` names the run (run id and configuration)."""
    samples = document.get("samples") or {}
    metric = next((m for m in LATENCY_METRICS if (samples.get(m) or {}).get("repetitions")), None)
    if metric is None:
        return None
    values = [float(v) for rep in samples[metric]["repetitions"] for v in rep if _number(v) is not None]
    if len(values) < 2:
        return None
    values.sort()
    unit = samples[metric].get("unit") or "ms"
    words = metric_words(metric, document)
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 2.4))
        ax = fig.add_subplot()
        ax.hist(values, bins=min(60, max(10, int(math.sqrt(len(values))))), color=PALETTE[0], zorder=2)
        for name, q, colour in (("p50", 0.50, PALETTE[1]), ("p99", 0.99, PALETTE[5])):
            if not percentile_allowed(name, len(values)):
                continue
            x = values[min(len(values) - 1, math.ceil(q * len(values)) - 1)]
            ax.axvline(x, color=colour, linewidth=1.2, zorder=3, label=f"{name} = {_fmt(x)} {unit}")
        # Why p99 is missing goes under the axis label (the legend holds the top right corner).
        missing = (
            ""
            if percentile_allowed("p99", len(values))
            else f"\np99 not marked: {len(values):,} samples, fewer than the {_min_samples('p99'):,} it needs"
        )
        ax.set_xlabel(f"{words} ({unit}){missing}")
        ax.set_ylabel("requests (count)" if "request" in words else "observations (count)")
        _title(ax, f"Distribution of {words}: {label or _system(document)}, {len(values):,} samples")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right")
        return _svg(fig, "distribution", [metric, len(values), values[0], values[-1], _system(document), label])


def latency_vs_load_chart(runs: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None) -> str | None:
    """p99 latency against offered load, one line per configuration (`labels`, one per run; else the system
    name); only when some configuration was measured at 2+ loads, and only from runs with enough samples for p99."""
    metric, series = _load_series(runs, labels)
    if not series:
        return None
    words = metric_words(metric, runs[0])
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 2.6))
        ax = fig.add_subplot()
        for i, (name, pts) in enumerate(sorted(series.items())):
            pts.sort()
            ax.plot(
                [x for x, _ in pts],
                [y for _, y in pts],
                marker="o",
                markersize=4,
                linewidth=1.4,
                color=PALETTE[i % len(PALETTE)],
                label=_wrap(name),
            )
        ax.set_xlabel("offered load (requests/s)")
        ax.set_ylabel(f"p99 {words} (ms)")
        ax.set_ylim(bottom=0)
        _title(ax, f"p99 {words} against offered load")
        ax.legend(loc="upper left")
        return _svg(fig, "load", sorted(series.items()))


def derived_chart(result: Mapping[str, Any]) -> str | None:
    """Energy per output and cost per million outputs per arm (derived numbers), one panel each where available."""
    arms = result.get("arms") or []
    panels = _derived_panels(result)
    if not panels:
        return None
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 0.9 + 0.36 * len(arms) * len(panels) + 0.45 * len(panels)))
        axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
        for ax, (name, points) in zip(axes, panels, strict=True):
            _derived_panel(ax, name, points)
        fig.tight_layout(h_pad=1.2)
        return _svg(fig, "derived", panels)


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
    return [a for a in result.get("arms") or [] if _number((a.get("estimate") or {}).get("value")) is not None]


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
            if d.get("name") == name and _number(d.get("value")) is not None
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
        pos = [y + offset * height for y, v in zip(ys, values[name], strict=True) if v is not None]
        ax.barh(
            pos,
            [v for v in values[name] if v is not None],
            height=height * 0.92,
            color=PALETTE[PERCENTILES.index(name)],
            label=name,
            zorder=2,
        )
    ax.set_yticks(ys, [label for label, _ in rows])
    ax.grid(axis="y", visible=False)
    words = metric_words(metric, runs[0] if runs else {})
    ax.set_xlabel(f"{words} (ms), lower is better")
    _title(
        ax, f"{words.capitalize()} percentiles per {per}{' (median over its runs)' if per == 'configuration' else ''}"
    )
    return shown


def _row_percentile(runs: Sequence[Mapping[str, Any]], metric: str, name: str) -> float | None:
    """The median over `runs` of their `name` percentile, from runs with enough samples for it only."""
    found = []
    for run in runs:
        block = (run.get("metrics") or {}).get(metric) or {}
        count = _number(block.get("count")) if isinstance(block, Mapping) else None
        value = _percentiles(run, metric).get(name)
        if value is not None and (name == "p50" or (count is not None and percentile_allowed(name, int(count)))):
            found.append(value)
    return statistics.median(found) if found else None


def _min_samples(name: str) -> int:
    from protocol.rules import MIN_SAMPLES_FOR_PERCENTILE

    return MIN_SAMPLES_FOR_PERCENTILE.get(name, 0)


def _derived_panel(ax: Any, name: str, points: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    ys = list(range(len(points)))[::-1]
    values = [float(d["value"]) for _, d in points]
    ax.barh(ys, values, color=PALETTE[2] if name == "energy_per_output" else PALETTE[1], height=0.6, zorder=2)
    for y, v in zip(ys, values, strict=True):
        _value_label(ax, v, y, v)
    ax.set_yticks(ys, [label for label, _ in points])
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, max(values) * 1.25)
    unit = points[0][1].get("unit") or ""
    words = "Energy per output" if name == "energy_per_output" else "Cost per million outputs"
    ax.set_xlabel(f"{unit}, lower is better")
    _title(ax, f"{words} (derived{': measured rate and stated price' if 'cost' in name else ''})")


CRITERION_AXES = {
    "cost": ("cost_per_million", "cost per million outputs"),
    "latency": ("latency_ms", "latency at the first objective (ms)"),
    "energy": ("energy_per_output", "energy per output"),
}


def pareto_chart(answer: Mapping[str, Any]) -> str | None:
    """A decision's candidates on the first two criteria of its Pareto frontier (lower is better on both): frontier
    members filled and joined, the rest hollow, candidates that miss the objectives left out (as in the frontier).
    Intervals where the answer has them. None when the frontier uses fewer than two criteria."""
    front = answer.get("frontier") or {}
    criteria = list(front.get("criteria") or [])[:2]
    if len(criteria) < 2:
        return None
    members = set(front.get("members") or [])
    points = []
    for i, cand in enumerate(answer.get("candidates") or []):
        if cand.get("meets") == "misses":
            continue
        xy = [_criterion_point(cand, c) for c in criteria]
        if all(p is not None for p in xy):
            points.append((i, cand, xy))
    if not points:
        return None
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 3.6))
        ax = fig.add_subplot()
        for n, (i, cand, ((x, xlo, xhi), (y, ylo, yhi))) in enumerate(points):
            on = i in members
            colour = PALETTE[n % len(PALETTE)]
            xerr = None if xlo is None or xhi is None else [[max(x - xlo, 0)], [max(xhi - x, 0)]]
            yerr = None if ylo is None or yhi is None else [[max(y - ylo, 0)], [max(yhi - y, 0)]]
            if xerr is not None or yerr is not None:
                ax.errorbar(
                    x, y, xerr=xerr, yerr=yerr, fmt="none", ecolor="#777777", elinewidth=0.8, capsize=2, zorder=2
                )
            ax.scatter(
                [x],
                [y],
                s=46,
                zorder=3,
                color=colour if on else "white",
                edgecolors=colour,
                linewidths=1.5,
                label=("\n".join(textwrap.wrap(str(cand.get("label")), LABEL_WIDTH)) or str(cand.get("label")))
                + ("  (frontier)" if on else ""),
            )
        frontier_xy = sorted((xy[0][0], xy[1][0]) for i, _, xy in points if i in members)
        if len(frontier_xy) > 1:
            ax.plot(
                [p[0] for p in frontier_xy],
                [p[1] for p in frontier_xy],
                color="#444444",
                linewidth=1,
                linestyle="--",
                zorder=1,
            )
        unit_of = {c: _criterion_unit(points[0][1], c) for c in criteria}
        ax.set_xlabel(f"{CRITERION_AXES[criteria[0]][1]}{unit_of[criteria[0]]}, lower is better")
        ax.set_ylabel("\n".join(textwrap.wrap(f"{CRITERION_AXES[criteria[1]][1]}{unit_of[criteria[1]]}", 30)))
        highest = [
            max((v for v in (xy[k][0], xy[k][2]) if v is not None), default=0.0) for k in (0, 1) for _, _, xy in points
        ]
        half = len(points)
        ax.set_xlim(0, max(highest[:half]) * 1.08 or 1.0)  # room for the outermost point and its whisker
        ax.set_ylim(0, max(highest[half:]) * 1.1 or 1.0)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=7)
        _title(ax, "Candidates that meet or may meet the objectives: filled points are the Pareto frontier")
        return _svg(fig, "pareto", [criteria, [[i, xy] for i, _, xy in points], sorted(members)])


def _criterion_point(cand: Mapping[str, Any], criterion: str) -> tuple[float, float | None, float | None] | None:
    block = cand.get(CRITERION_AXES[criterion][0])
    if isinstance(block, Mapping):
        value = _number(block.get("value"))
        return None if value is None else (value, _number(block.get("ci_low")), _number(block.get("ci_high")))
    value = _number(block)
    return None if value is None else (value, None, None)


def _criterion_unit(cand: Mapping[str, Any], criterion: str) -> str:
    block = cand.get(CRITERION_AXES[criterion][0])
    unit = block.get("unit") if isinstance(block, Mapping) else None
    return f" ({unit})" if unit and criterion != "cost" else f" ({unit.split(' per ')[0]})" if unit else ""


# ------------------------------------------------------------------------------------------ helpers


def _title(ax: Any, text: str) -> None:
    """A panel title wrapped to the figure's width (long configuration names never run off the edge)."""
    ax.set_title("\n".join(textwrap.wrap(text, 48, break_long_words=True)) or text, loc="left")


def _value_label(ax: Any, x: float, y: float, value: float) -> None:
    """The value printed just right of x (an offset in points: SVG text would collapse leading spaces)."""
    ax.annotate(
        _fmt(value), (x, y), xytext=(4, 0), textcoords="offset points", va="center", ha="left", fontsize=8, zorder=4
    )


def _svg(fig: Figure, kind: str, data: Any) -> str:
    """The figure as inline-safe SVG with ids scoped by a prefix unique to this chart's kind and data."""
    if not fig.get_tight_layout() and not fig.get_constrained_layout():
        fig.tight_layout()
    buffer = io.StringIO()
    # bbox_inches="tight": a legend placed below its axes (outside them) is saved whole, never cut at the edge.
    FigureCanvasSVG(fig).print_figure(
        buffer, format="svg", bbox_inches="tight", pad_inches=0.05, metadata={"Date": None, "Creator": None}
    )
    text = buffer.getvalue()
    text = text[text.index("<svg") :]  # drop the XML declaration and DOCTYPE: inline HTML has neither
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)  # matplotlib's comments repeat label text; not needed
    seed = json.dumps(data, sort_keys=True, default=str).encode()
    prefix = f"c{kind[:4]}{hashlib.sha256(seed).hexdigest()[:8]}"
    # matplotlib's <style> says `*{...}`, which inline in HTML would style the whole page: scope it to this chart.
    text = text.replace("<svg ", f'<svg class="benchreg-chart {prefix}" ', 1).replace("*{", f".{prefix} *{{")
    return _scope_ids(text, prefix)


def _scope_ids(svg: str, prefix: str) -> str:
    ids = set(_ID.findall(svg))
    if not ids:
        return svg

    def rename(match: re.Match[str]) -> str:
        whole, name = match.group(0), match.group(1)
        return whole.replace(name, f"{prefix}-{name}") if name in ids else whole

    svg = _ID.sub(rename, svg)
    return re.sub(
        r"#([A-Za-z_][\w.\-]*)", lambda m: f"#{prefix}-{m.group(1)}" if m.group(1) in ids else m.group(0), svg
    )


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


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _percentiles(doc: Mapping[str, Any], metric: str) -> dict[str, float]:
    block = ((doc.get("metrics") or {}).get(metric)) or {}
    if not isinstance(block, Mapping):
        return {}
    return {p: float(block[p]) for p in PERCENTILES if _number(block.get(p)) is not None}


def _load(doc: Mapping[str, Any]) -> float | None:
    """The offered load of a serving run: the scenario's target rate, else the measured request rate."""
    target = _number((doc.get("scenario") or {}).get("target_qps"))
    if target is not None:
        return target
    rate = (doc.get("metrics") or {}).get("request_rate") or {}
    return _number(rate.get("value")) if isinstance(rate, Mapping) else None


def _system(doc: Mapping[str, Any]) -> str:
    return str((doc.get("system") or {}).get("name") or "unnamed system")


def _run_labels(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    return unique_labels(
        [
            f"{_system(r)} (run {i + 1})" if [_system(x) for x in runs].count(_system(r)) > 1 else _system(r)
            for i, r in enumerate(runs)
        ]
    )


def _metric_words(metric: Any) -> str:
    family, _, part = str(metric or "value").partition(".")
    words = METRIC_WORDS.get(family, family.replace("_", " "))
    return f"{part} {words}" if part else words


def metric_words(metric: Any, document: Mapping[str, Any]) -> str:
    """The metric in words for this run's scenario: an offline run times batches, not requests."""
    words = _metric_words(metric)
    if str(metric).split(".")[0] == "latency_ms" and (document.get("scenario") or {}).get("kind") == "offline":
        return words.replace("request latency", "batch latency")
    return words


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e15:  # beyond any plausible figure: written in full it runs off the chart
        return f"{value:.4g}"
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:,.1f}"
    return f"{value:.3g}"
