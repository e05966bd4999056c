"""Server-rendered SVG chart of a scaling plan: global throughput against devices with the ideal line (n × the
1-device throughput), and efficiency against devices with its intervals and the ideal at 1.

Same contract as registry/presentation/charts.py: inline-safe SVG or None, deterministic, ids scoped per chart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol import scaling
from protocol.numbers import Style, number
from protocol.statistics import CONFIDENCE, geometric_mean
from registry.presentation.chart_style import PALETTE, STYLE, WIDTH_IN, new_figure, rc_context, svg, title

IDEAL = "#777777"


def scaling_chart(plan: scaling.Plan, efficiency: Sequence[scaling.Efficiency] | None) -> str | None:
    """Two panels: throughput (geometric mean of each size's values) with the ideal linear line from the 1-device
    mean, and efficiency with its interval where there is one. None when the plan has no size to draw; the efficiency
    panel and the ideal line are left out without 1-device runs (nothing to scale from)."""
    if not plan.sizes:
        return None
    devices = [s.devices for s in plan.sizes]
    means = [geometric_mean(s.values) for s in plan.sizes]
    with rc_context(STYLE):
        fig = new_figure(figsize=(WIDTH_IN, 5.6 if efficiency else 3.0))
        axes = fig.subplots(2 if efficiency else 1, 1, squeeze=False)[:, 0]
        _throughput(axes[0], plan, devices, means)
        if efficiency:
            _efficiency(axes[1], efficiency)
        data = [plan.id, plan.mode, devices, means, [(e.efficiency, e.low, e.high) for e in efficiency or []]]
        return svg(fig, "scaling", data)


def _devices_axis(ax: Any, devices: Sequence[int]) -> None:
    """Devices on a log2 axis (1, 2, 4, … equally spaced), ticked at the measured counts."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(devices), [str(n) for n in devices])
    ax.minorticks_off()
    ax.set_xlabel("devices")


def _throughput(ax: Any, plan: scaling.Plan, devices: Sequence[int], means: Sequence[float]) -> None:
    reference = next((m for n, m in zip(devices, means, strict=True) if n == 1), None)
    if reference is not None:
        ax.plot(
            devices,
            [reference * n for n in devices],
            color=IDEAL,
            linestyle="--",
            linewidth=1,
            label="ideal: n × 1 device",
        )
    ax.plot(devices, means, color=PALETTE[0], marker="o", linewidth=1.2, label="measured (geometric mean)", zorder=3)
    _devices_axis(ax, devices)
    if len(devices) > 1:  # on log-log axes the ideal is a straight line of slope 1
        ax.set_yscale("log", base=2)
        # plain figures, not powers of 2 (mathtext is off: submitter text is never parsed as TeX)
        ax.yaxis.set_major_formatter(lambda v, _: number(v, Style.SIGNIFICANT))
        ax.yaxis.set_minor_formatter(lambda v, _: "")
    ax.set_ylabel("samples/s (all devices)")
    ax.legend(loc="upper left", fontsize=7.5)
    title(ax, f"Throughput against devices, {plan.mode} scaling")


def _efficiency(ax: Any, rows: Sequence[scaling.Efficiency]) -> None:
    devices = [r.devices for r in rows]
    ax.axhline(1.0, color=IDEAL, linestyle="--", linewidth=1, label="ideal: 1")
    ax.plot(devices, [r.efficiency for r in rows], color=PALETTE[1], marker="o", linewidth=1.2, label="efficiency")
    with_ci = [r for r in rows if r.low is not None and r.high is not None]
    if with_ci:
        ys = [r.efficiency for r in with_ci]
        err = [[r.efficiency - (r.low or 0.0) for r in with_ci], [(r.high or 0.0) - r.efficiency for r in with_ci]]
        ax.errorbar(
            [r.devices for r in with_ci],
            ys,
            yerr=err,
            fmt="none",
            ecolor=PALETTE[1],
            capsize=3,
            label=f"{CONFIDENCE:.0%} interval",
        )
    _devices_axis(ax, devices)
    top = max([1.0, *(r.high or r.efficiency for r in rows)])
    ax.set_ylim(0, top * 1.1)
    ax.set_ylabel("efficiency (speedup ÷ devices)")
    ax.legend(loc="lower left", fontsize=7.5)
    title(ax, "Efficiency against the 1-device runs")
