"""Figures per accelerator in readers' words: each value with its unit "per accelerator" and its label (derived;
for MLPerf results "derived, not an MLPerf metric"), or the reason it is absent. The figures themselves are
protocol.per_accelerator's; lists read them from the run's stored columns (no document), a run page from its
document."""

from __future__ import annotations

from typing import Any

from protocol.numbers import number
from protocol.per_accelerator import FIGURE_WORDS, FIGURES, PerAccelerator, from_columns

from .words import HEADLINE_STYLE


def run_figures(run: Any) -> PerAccelerator:
    """The figures of a stored run (a Submission, or a row with its columns), read from its summary columns."""
    return from_columns(
        accelerators=int(getattr(run, "accelerator_count", 0) or 0),
        phase=str(getattr(run, "phase", "")),
        origin_kind=str(getattr(run, "origin_kind", "") or ""),
        throughput=getattr(run, "per_accelerator_throughput", None),
        unit=str(getattr(run, "per_accelerator_unit", "") or ""),
        output_tokens=getattr(run, "per_accelerator_output_tokens", None),
        total_tokens=getattr(run, "per_accelerator_total_tokens", None),
    )


def per_accelerator_text(value: Any, unit: Any) -> str:
    """'34.06 tokens/s per accelerator' in the headline's style; '—' without a value."""
    if value is None:
        return "—"
    return f"{number(value, HEADLINE_STYLE)} {unit} per accelerator" if unit else number(value, HEADLINE_STYLE)


def figure_rows(figures: PerAccelerator) -> list[dict[str, str]]:
    """One row per figure for a page or a report: what it is, the value in words (or '—'), and why it is absent."""
    units = {"throughput": figures.unit, "output_tokens": "tokens/s", "total_tokens": "tokens/s"}
    return [
        {
            "name": name,
            "what": FIGURE_WORDS[name],
            "text": per_accelerator_text(getattr(figures, name), units[name]),
            "absent": figures.absent.get(name, ""),
            "label": figures.label,
        }
        for name in FIGURES
    ]
