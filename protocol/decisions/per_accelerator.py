"""A candidate's figures per accelerator (protocol.per_accelerator) in a decision's answer: each figure of the runs
the candidate is read at (a sweep's level at its knee: the same level as its capacity, systems and cost), combined
as every rate of the answer is (geometric mean, 95% interval from 3 runs), derived and labelled so ("derived, not an
MLPerf metric" for MLPerf results, whose rules forbid presenting a figure per accelerator as theirs), or absent with
the reason. A figure some of the runs cannot give is absent for the candidate: never guessed from the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ..per_accelerator import FIGURE_WORDS, FIGURES, label_for, per_accelerator


class _Interval(Protocol):
    def as_dict(self, unit: str | None = None) -> dict[str, Any]: ...


def candidate_per_accelerator(
    docs: Sequence[Mapping[str, Any]], interval: Callable[[Sequence[float]], _Interval]
) -> dict[str, Any]:
    """{"label", "accelerators", "throughput", "output_tokens", "total_tokens"}: each figure as an interval's dict
    (value, ci_low, ci_high, unit "... per accelerator") with what it is and, when absent, why. `interval` is the
    answer's own (protocol.decisions.candidate.interval), passed in so this module does not import the candidate's."""
    figures = [per_accelerator(d) for d in docs]
    counts = sorted({f.accelerators for f in figures})
    out: dict[str, Any] = {
        "label": label_for(any(f.mlperf for f in figures)),
        "accelerators": counts[0] if len(counts) == 1 and counts[0] else None,
    }
    units = {f.unit for f in figures}
    throughput_unit = next(iter(units)) if len(units) == 1 else ""
    for name in FIGURES:
        values = [getattr(f, name) for f in figures]
        absent = next((f.absent[name] for f in figures if name in f.absent), "")
        unit = throughput_unit if name == "throughput" else "tokens/s"
        if not absent and name == "throughput" and not unit:
            absent = "the runs state their throughput in different units"
        if absent or not values:
            out[name] = {"value": None, "unit": None, "what": FIGURE_WORDS[name], "absent": absent or "no runs"}
            continue
        found = interval([float(v) for v in values if v is not None]).as_dict(f"{unit} per accelerator")
        out[name] = {**found, "what": FIGURE_WORDS[name], "absent": None}
    return out


def no_per_accelerator(reason: str) -> dict[str, Any]:
    """The same fields as candidate_per_accelerator, every figure absent for `reason` (a sweep with no level shown
    to meet the question has no level to read them at: DECISIONS.md, every figure from the one level named)."""
    out: dict[str, Any] = {"label": label_for(False), "accelerators": None}
    for name in FIGURES:
        out[name] = {"value": None, "unit": None, "what": FIGURE_WORDS[name], "absent": reason}
    return out
