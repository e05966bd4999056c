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
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before anything else of matplotlib: never a GUI backend on a server

from matplotlib import rc_context
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

PERCENTILES = ("p50", "p90", "p95", "p99")
LATENCY_METRICS = ("latency_ms", "ttft_ms", "tpot_ms", "step_time_ms")
METRIC_WORDS = {"latency_ms": "request latency", "ttft_ms": "time to first token", "tpot_ms": "time per output token",
                "step_time_ms": "step time", "throughput": "throughput", "goodput": "goodput",
                "request_rate": "request rate", "time_to_quality": "time to quality"}
# Sober, colour-blind-safe (Okabe-Ito) colours; the first is the registry's ink blue.
PALETTE = ("#1f4e79", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#0072b2", "#999999")
WIDTH_IN = 6.6
STYLE = {"font.family": "DejaVu Sans", "font.size": 8.5, "axes.titlesize": 9.5, "axes.titleweight": "bold",
         "axes.labelsize": 8.5, "axes.edgecolor": "#555555", "axes.linewidth": 0.6, "axes.spines.top": False,
         "axes.spines.right": False, "axes.grid": True, "grid.color": "#dddddd", "grid.linewidth": 0.5,
         "xtick.labelsize": 8, "ytick.labelsize": 8, "legend.fontsize": 8, "legend.frameon": False,
         "svg.fonttype": "none", "svg.hashsalt": "benchreg", "figure.dpi": 72}
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
        fig = Figure(figsize=(WIDTH_IN, 0.9 + 0.42 * len(arms)))
        ax = fig.add_subplot()
        ys = list(range(len(arms)))[::-1]
        ax.barh(ys, values, color=[PALETTE[i % len(PALETTE)] for i in range(len(arms))], height=0.6, zorder=2)
        for y, v, lo, hi in zip(ys, values, lows, highs, strict=True):
            if lo is not None and hi is not None:
                ax.errorbar(v, y, xerr=[[max(v - lo, 0)], [max(hi - v, 0)]], fmt="none", ecolor="#222222",
                            elinewidth=1, capsize=3, zorder=3)
            _value_label(ax, hi if hi is not None else v, y, v)
        ax.set_yticks(ys, labels)
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, max(max(values), max((h for h in highs if h is not None), default=0)) * 1.22)
        direction = "lower is better" if est0.get("lower_is_better") else "higher is better"
        ax.set_xlabel(f"{_metric_words(est0.get('metric'))} ({est0.get('unit') or 'no unit'}), {direction}")
        ax.set_title("Headline result per configuration (bars: 95% interval)", loc="left")
        return _svg(fig, "throughput", result.get("arms"))


def latency_percentiles_chart(runs: Sequence[Mapping[str, Any]]) -> str | None:
    """p50/p90/p95/p99 of each run's latency distribution (ms), grouped by run; one panel per latency metric."""
    metrics = _latency_metrics(runs)
    if not metrics:
        return None
    labels = _run_labels(runs)
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 1.2 + 0.34 * len(runs) * len(metrics) + 0.5 * len(metrics)))
        axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
        for ax, metric in zip(axes, metrics, strict=True):
            _percentile_panel(ax, runs, labels, metric)
        axes[0].legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=4, handlelength=1.2, borderaxespad=0.2)
        fig.tight_layout(h_pad=1.2)
        return _svg(fig, "latency", [(labels, [_percentiles(r, m) for r in runs for m in metrics])])


def latency_distribution_chart(document: Mapping[str, Any]) -> str | None:
    """Histogram of one run's raw latency samples (all repetitions pooled), with p50 and p99 marked."""
    samples = document.get("samples") or {}
    metric = next((m for m in LATENCY_METRICS if (samples.get(m) or {}).get("repetitions")), None)
    if metric is None:
        return None
    values = [float(v) for rep in samples[metric]["repetitions"] for v in rep if _number(v) is not None]
    if len(values) < 2:
        return None
    values.sort()
    unit = samples[metric].get("unit") or "ms"
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 2.4))
        ax = fig.add_subplot()
        ax.hist(values, bins=min(60, max(10, int(math.sqrt(len(values))))), color=PALETTE[0], zorder=2)
        for name, q, colour in (("p50", 0.50, PALETTE[1]), ("p99", 0.99, PALETTE[5])):
            x = values[min(len(values) - 1, math.ceil(q * len(values)) - 1)]
            ax.axvline(x, color=colour, linewidth=1.2, zorder=3, label=f"{name} = {_fmt(x)} {unit}")
        ax.set_xlabel(f"{_metric_words(metric)} ({unit})")
        ax.set_ylabel("requests (count)")
        ax.set_title(f"Distribution of {_metric_words(metric)}: {_short(_system(document))}, "
                     f"{len(values):,} samples", loc="left")
        ax.legend(loc="upper right")
        return _svg(fig, "distribution", [metric, len(values), values[0], values[-1], _system(document)])


def latency_vs_load_chart(runs: Sequence[Mapping[str, Any]]) -> str | None:
    """p99 latency against offered load, one line per system; only when some system was measured at 2+ loads."""
    metric, series = _load_series(runs)
    if not series:
        return None
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 2.6))
        ax = fig.add_subplot()
        for i, (system, pts) in enumerate(sorted(series.items())):
            pts.sort()
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", markersize=4, linewidth=1.4,
                    color=PALETTE[i % len(PALETTE)], label=_short(system))
        ax.set_xlabel("offered load (requests/s)")
        ax.set_ylabel(f"p99 {_metric_words(metric)} (ms)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"p99 {_metric_words(metric)} against offered load", loc="left")
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


def _load_series(runs: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, list[tuple[float, float]]]]:
    """(latency metric, {system: [(load, p99)]}); no series unless some system was measured at 2+ loads."""
    metric = next((m for m in LATENCY_METRICS[:3] if any(_percentiles(r, m).get("p99") for r in runs)), None)
    if metric is None:
        return "", {}
    series: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        load, p99 = _load(run), _percentiles(run, metric).get("p99")
        if load is not None and p99 is not None:
            series.setdefault(_system(run), []).append((load, p99))
    if not any(len({x for x, _ in pts}) >= 2 for pts in series.values()):
        return metric, {}
    return metric, series


def _derived_panels(result: Mapping[str, Any]) -> list[tuple[str, list[tuple[str, Mapping[str, Any]]]]]:
    arms = result.get("arms") or []
    panels = []
    for name in ("energy_per_output", "cost_per_million_outputs"):
        points = [(label, d) for a, label in zip(arms, arm_labels(arms), strict=True) for d in a.get("derived") or []
                  if d.get("name") == name and _number(d.get("value")) is not None]
        if points:
            panels.append((name, points))
    return panels


# ------------------------------------------------------------------------------------------ panels

def _percentile_panel(ax: Any, runs: Sequence[Mapping[str, Any]], labels: Sequence[str], metric: str) -> None:
    height = 0.8 / len(PERCENTILES)
    ys = list(range(len(runs)))[::-1]
    for k, name in enumerate(PERCENTILES):
        vals = [_percentiles(r, metric).get(name) for r in runs]
        pos = [y + (1.5 - k) * height for y, v in zip(ys, vals, strict=True) if v is not None]
        ax.barh(pos, [v for v in vals if v is not None], height=height * 0.92, color=PALETTE[k], label=name,
                zorder=2)
    ax.set_yticks(ys, labels)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(f"{_metric_words(metric)} (ms), lower is better")
    ax.set_title(f"{_metric_words(metric).capitalize()} percentiles per run", loc="left")


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
    ax.set_title(f"{words} (derived{': measured rate and stated price' if 'cost' in name else ''})", loc="left")


# ------------------------------------------------------------------------------------------ helpers

def _value_label(ax: Any, x: float, y: float, value: float) -> None:
    """The value printed just right of x (an offset in points: SVG text would collapse leading spaces)."""
    ax.annotate(_fmt(value), (x, y), xytext=(4, 0), textcoords="offset points", va="center", ha="left",
                fontsize=8, zorder=4)


def _svg(fig: Figure, kind: str, data: Any) -> str:
    """The figure as inline-safe SVG with ids scoped by a prefix unique to this chart's kind and data."""
    if not fig.get_tight_layout() and not fig.get_constrained_layout():
        fig.tight_layout()
    buffer = io.StringIO()
    FigureCanvasSVG(fig).print_svg(buffer, metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]  # drop the XML declaration and DOCTYPE: inline HTML has neither
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
    return re.sub(r"#([A-Za-z_][\w.\-]*)", lambda m: f"#{prefix}-{m.group(1)}" if m.group(1) in ids else m.group(0),
                  svg)


def arm_labels(arms: Sequence[Mapping[str, Any]]) -> list[str]:
    """Short labels for arms: the part before " (" (the system name) when that alone tells them apart."""
    full = [str(a.get("label") or f"arm {a.get('index')}") for a in arms]
    short = [label.split(" (")[0] for label in full]
    return [_short(x) for x in (short if len(set(short)) == len(short) else full)]


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
    names = [_short(_system(r), 28) for r in runs]
    return [f"{n} (run {i + 1})" if names.count(n) > 1 else n for i, n in enumerate(names)]


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _metric_words(metric: Any) -> str:
    family, _, part = str(metric or "value").partition(".")
    words = METRIC_WORDS.get(family, family.replace("_", " "))
    return f"{part} {words}" if part else words


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:,.1f}"
    return f"{value:.3g}"
