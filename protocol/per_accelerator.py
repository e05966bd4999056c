"""Throughput per accelerator (per GPU): a run's rates divided by the accelerators of its system.

Buyers read serving results per GPU (InferenceMAX plots tokens/s per GPU), so the registry states three figures
per accelerator, each derived from what the run measured and labelled so (shared/DECISIONS.md, "Inputs"):

- **throughput**: the run's throughput metric (`metrics.throughput`, in its own unit: samples/s, tokens/s,
  queries/s ...) ÷ accelerators. For a training run, its training throughput where it states one.
- **output tokens/s**: the run's output tokens per second (`metrics.tokens_per_second`, or a throughput in
  tokens/s) ÷ accelerators; inference only (a training run's tokens are inputs).
- **input+output tokens/s**, as InferenceMAX plots it (its `tput_per_gpu`): (output tokens/s + input tokens ÷ the
  measurement window) ÷ accelerators, where the run states its input tokens (`metrics.token_counts.input_total`)
  and its window (`conditions.window.seconds`).

MLPerf results are published per system: MLPerf's rules forbid presenting a figure per accelerator as an MLPerf
result, so for a run whose provenance says MLPerf each figure is labelled "derived, not an MLPerf metric".

Nothing is guessed: a run without accelerators (a CPU-only system, or one whose count is not stated), one whose
system mixes accelerator models, or one that lacks the rate has no figure, and `absent` says why for each.
Plain functions of the document: they read it defensively, so they can be asked of any stored document.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LABEL = "derived"
MLPERF_LABEL = "derived, not an MLPerf metric"
MLPERF_KINDS = frozenset({"mlperf-inference", "mlperf-training"})
FIGURES = ("throughput", "output_tokens", "total_tokens")
# What each figure is, as a heading reads it (its unit is the figure's own, "per accelerator").
# Why a figure is absent.
NO_COUNT = "the run states no accelerator count (a CPU-only system, or the count is not stated)"
MIXED = "the system holds more than one accelerator model; a figure per accelerator would mix them"
NO_OUTPUT_TOKENS = "the run states no output tokens per second"
TRAINING_TOKENS = "a training run produces no output tokens"
NO_INPUTS = (
    "the run does not state its input tokens and measurement window "
    "(metrics.token_counts.input_total, conditions.window.seconds)"
)
FIGURE_WORDS = {
    "throughput": "throughput per accelerator",
    "output_tokens": "output tokens/s per accelerator",
    "total_tokens": "input+output tokens/s per accelerator (as InferenceMAX plots it)",
}


@dataclass(frozen=True)
class PerAccelerator:
    """A run's figures per accelerator, each None with its reason in `absent` when the run cannot give it."""

    accelerators: int  # the count divided by; 0 when the run states none
    throughput: float | None
    unit: str  # the throughput's unit ("samples/s"); "" without a throughput
    output_tokens: float | None
    total_tokens: float | None
    mlperf: bool
    absent: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return label_for(self.mlperf)

    def as_dict(self) -> dict[str, Any]:
        """The figures as an answer or an API states them: value, unit and label each, or the reason it is absent."""
        units = {"throughput": self.unit, "output_tokens": "tokens/s", "total_tokens": "tokens/s"}
        return {
            "accelerators": self.accelerators or None,
            "label": self.label,
            **{
                name: {
                    "value": getattr(self, name),
                    "unit": f"{units[name]} per accelerator" if getattr(self, name) is not None else None,
                    "what": FIGURE_WORDS[name],
                    "absent": self.absent.get(name),
                }
                for name in FIGURES
            },
        }


def label_for(mlperf: bool) -> str:
    """How a figure per accelerator is labelled: MLPerf's rules forbid presenting it as an MLPerf result."""
    return MLPERF_LABEL if mlperf else LABEL


def is_mlperf(origin_kind: Any) -> bool:
    """Whether `provenance.origin.kind` says the run is an MLPerf result."""
    return origin_kind in MLPERF_KINDS


def per_accelerator(doc: Mapping[str, Any]) -> PerAccelerator:
    """The run's throughput, output tokens/s and input+output tokens/s per accelerator, or why each is absent."""
    mlperf = is_mlperf(_at(doc, "provenance", "origin", "kind"))
    count, why_not = _accelerators(doc)
    if why_not:
        return PerAccelerator(0, None, "", None, None, mlperf, dict.fromkeys(FIGURES, why_not))
    training = doc.get("phase") == "training"
    rate, unit = _rate(doc, "throughput")
    output, output_why = _output_tokens(doc, training)
    total, total_why = _total_tokens(doc, output, output_why)
    absent = {
        "throughput": "" if rate is not None else _no_throughput(training, mlperf),
        "output_tokens": output_why,
        "total_tokens": total_why,
    }
    return PerAccelerator(
        accelerators=count,
        throughput=_divided(rate, count),
        unit=unit if rate is not None else "",
        output_tokens=_divided(output, count),
        total_tokens=_divided(total, count),
        mlperf=mlperf,
        absent={name: why for name, why in absent.items() if why},
    )


def _accelerators(doc: Mapping[str, Any]) -> tuple[int, str]:
    """(count, "") or (0, why there is no figure per accelerator)."""
    listed = _at(doc, "system", "accelerators")
    listed = [a for a in listed if isinstance(a, Mapping)] if isinstance(listed, list) else []
    counts = [a.get("count") for a in listed]
    if not listed or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in counts):
        return 0, NO_COUNT
    if len({(a.get("vendor"), a.get("model")) for a in listed}) > 1:
        return 0, MIXED
    return sum(counts), ""


def _rate(doc: Mapping[str, Any], name: str) -> tuple[float | None, str]:
    """metrics.<name> as (value, unit), (None, "") when absent or not a finite number above zero."""
    metric = _at(doc, "metrics", name)
    if not isinstance(metric, Mapping):
        return None, ""
    value = metric.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        return None, ""
    return float(value), str(metric.get("unit") or "")


def _output_tokens(doc: Mapping[str, Any], training: bool) -> tuple[float | None, str]:
    if training:
        return None, TRAINING_TOKENS
    tokens, _ = _rate(doc, "tokens_per_second")
    if tokens is not None:
        return tokens, ""
    rate, unit = _rate(doc, "throughput")
    if rate is not None and unit == "tokens/s":
        return rate, ""
    return None, NO_OUTPUT_TOKENS


def _total_tokens(doc: Mapping[str, Any], output: float | None, output_why: str) -> tuple[float | None, str]:
    """Output tokens/s + input tokens ÷ window, as InferenceMAX's total_tput_tps (input_tput + output_tput)."""
    if output is None:
        return None, output_why
    inputs = _at(doc, "metrics", "token_counts", "input_total")
    window = _at(doc, "conditions", "window", "seconds")
    usable = [isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (inputs, window)]
    if not all(usable) or inputs < 0 or window <= 0:
        return None, NO_INPUTS
    return output + float(inputs) / float(window), ""


def _no_throughput(training: bool, mlperf: bool) -> str:
    if training and mlperf:
        return "MLPerf Training publishes the time to train, not a throughput"
    if training:
        return "the run states no training throughput (metrics.throughput)"
    return "the run states no throughput (metrics.throughput)"


def _divided(value: float | None, count: int) -> float | None:
    return value / count if value is not None else None


def _at(doc: Mapping[str, Any], *path: str) -> Any:
    found: Any = doc
    for key in path:
        found = found.get(key) if isinstance(found, Mapping) else None
    return found


def from_columns(
    *,
    accelerators: int,
    phase: str,
    origin_kind: str,
    throughput: float | None,
    unit: str,
    output_tokens: float | None,
    total_tokens: float | None,
) -> PerAccelerator:
    """The figures as a run's stored columns hold them (protocol.summary), with the reasons for what is absent, for
    lists that do not read documents. The reasons follow `per_accelerator`'s but for one case the columns cannot
    tell: a system of mixed accelerator models has a count but no figure, and is said to state no rate."""
    mlperf = is_mlperf(origin_kind)
    if accelerators <= 0:
        return PerAccelerator(0, None, "", None, None, mlperf, dict.fromkeys(FIGURES, NO_COUNT))
    training = phase == "training"
    output_why = TRAINING_TOKENS if training else NO_OUTPUT_TOKENS
    absent = {
        "throughput": "" if throughput is not None else _no_throughput(training, mlperf),
        "output_tokens": "" if output_tokens is not None else output_why,
        "total_tokens": "" if total_tokens is not None else output_why if output_tokens is None else NO_INPUTS,
    }
    return PerAccelerator(
        accelerators, throughput, unit, output_tokens, total_tokens, mlperf, {k: v for k, v in absent.items() if v}
    )
