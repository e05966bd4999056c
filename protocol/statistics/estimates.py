"""A run's headline value with its interval, and one estimate from runs that repeat a configuration.

The contract (independent values, geometric means, t intervals on logs) is in this package's docstring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import rules
from ..canonical import digest
from ..derivation import derivation_of, is_derived
from ..percentiles import NUMPY_METHOD, quantile
from ..summary import Headline, headline
from .intervals import (
    CONFIDENCE,
    MIN_VALUES,
    OLYMPIC_MIN_RUNS,
    Array,
    geometric_mean,
    log_t_interval,
    olympic_mean,
)

RESAMPLES = 0  # no resampling any more: kept so callers passing `resamples=` still work (it is ignored)
THROUGHPUT_AGREEMENT = 0.05  # throughput from raw times must match the reported value this closely

UNIT_NOUN = {
    "samples/s": "sample",
    "tokens/s": "token",
    "requests/s": "request",
    "queries/s": "query",
    "images/s": "image",
}


@dataclass(frozen=True)
class Estimate:
    """A headline value with its interval.

    `values` are the independent values (per repetition, or per run) the interval rests on; `evidence` is
    None when the interval is calibrated, else the reason there is none ("not enough evidence").
    """

    metric: str
    value: float | None
    unit: str | None
    lower_is_better: bool
    method: str
    interval_method: str
    n: int  # raw samples behind the value (1 for a summary value)
    source: str  # "raw samples", "summary" or "runs"
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    reported: float | None = None  # the summary value the run itself reported, for audit
    evidence: str | None = None
    values: Array | None = field(default=None, repr=False, compare=False)
    value_unit: str = "repetition"  # what one independent value is: a "repetition" or a "run"

    @property
    def independent_values(self) -> int:
        return 0 if self.values is None else len(self.values)

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "value": rounded(self.value),
            "unit": self.unit,
            "lower_is_better": self.lower_is_better,
            "ci_low": rounded(self.ci_low),
            "ci_high": rounded(self.ci_high),
            "confidence": self.confidence,
            "method": self.method,
            "interval_method": self.interval_method,
            "n": self.n,
            "source": self.source,
            "reported": rounded(self.reported),
            "independent_values": self.independent_values,
            "value_unit": self.value_unit,
            "enough_evidence": self.evidence is None,
            "evidence": self.evidence,
        }


def rounded(value: float | None, digits: int = 6) -> float | None:
    """`value` to `digits` significant figures; None for None or non-finite (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    if value == 0:
        return 0.0
    return round(float(value), digits - 1 - math.floor(math.log10(abs(value))))


# -------------------------------------------------------------------------------- per-repetition values
# These work on arrays whose last axis holds one configuration's repetitions, so the simulation suite runs
# thousands of comparisons through exactly the code the product uses.


def repetition_statistic(samples: Array, stat: str, method: str = "linear") -> Array:
    """The statistic `stat` ("p50", "value", "mean", "p99", ...) of each repetition: (..., n) -> (...)."""
    a = np.asarray(samples, dtype=np.float64)
    if stat == "mean":
        return np.asarray(a.mean(axis=-1), dtype=np.float64)
    q = 0.5 if stat in ("p50", "value") else rules.PERCENTILES[stat] / 100.0
    return quantile(a, q, method)


def throughput_per_repetition(times_ms: Array, batch_size: int) -> Array:
    """Each repetition's throughput from its per-batch times: batch_size × 1000 ÷ mean time (ms). (..., n) -> (...)."""
    return np.asarray(
        float(batch_size) * 1000.0 / np.asarray(times_ms, dtype=np.float64).mean(axis=-1), dtype=np.float64
    )


def from_values(base: Estimate, values: Sequence[float], words: str, confidence: float = CONFIDENCE) -> Estimate:
    """`base` completed from its independent values: a calibrated interval, or why there is none."""
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if x.size == 0:
        return replace(base, method=words, interval_method="none", evidence="no values", values=None)
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        return replace(
            base,
            value=float(np.median(x)),
            method=f"median: {words}",
            values=None,
            interval_method="none: a value is zero or negative, so no ratio interval applies",
            evidence=f"a {base.value_unit} value is zero or negative",
        )
    if x.size < MIN_VALUES:
        return _too_few_values(base, x, words)
    return _calibrated(base, x, words, confidence)


def _too_few_values(base: Estimate, x: Array, words: str) -> Estimate:
    single = geometric_mean(x)
    why = (
        f"{x.size} independent value{'s' if x.size > 1 else ''} ({base.value_unit}s); a calibrated interval "
        f"needs at least {MIN_VALUES}"
    )
    return replace(
        base,
        value=single,
        method=f"geometric mean of {words}",
        values=x,
        interval_method="none: not enough evidence",
        evidence=why,
    )


def _calibrated(base: Estimate, x: Array, words: str, confidence: float) -> Estimate:
    point, low, high = log_t_interval(x, confidence)
    return replace(
        base,
        value=float(point),
        ci_low=float(low),
        ci_high=float(high),
        confidence=confidence,
        method=f"geometric mean of {words}",
        values=x,
        evidence=None,
        interval_method=f"Student t interval on the logs of {x.size} {base.value_unit} values "
        f"({x.size - 1} degrees of freedom)",
    )


# ---------------------------------------------------------------------------------------- per-run estimates


def raw_series(doc: dict[str, Any], name: str) -> list[Array] | None:
    """The raw repetitions of metric `name`, or None when absent or not in the metric's unit."""
    series = (doc.get("samples") or {}).get(name)
    metric = (doc.get("metrics") or {}).get(name)
    if not isinstance(series, dict) or not isinstance(metric, dict):
        return None
    if series.get("unit") != metric.get("unit"):
        return None  # samples in another unit would silently change the headline's meaning
    reps = [np.asarray(r, dtype=np.float64) for r in series.get("repetitions") or [] if r]
    return reps or None


def declared_method(doc: dict[str, Any], name: str) -> tuple[str, str]:
    """(declared percentile method, numpy's name for it) of metric `name`."""
    declared = ((doc.get("metrics") or {}).get(name) or {}).get("method", "linear")
    return str(declared), NUMPY_METHOD.get(str(declared), "linear")


def _raw_base(head: Headline, n: int, lower_is_better: bool) -> Estimate:
    return Estimate(
        metric=head.metric,
        value=None,
        unit=head.unit,
        lower_is_better=lower_is_better,
        method="",
        interval_method="none",
        n=n,
        source="raw samples",
        reported=head.value,
    )


def _from_raw(doc: dict[str, Any], reps: list[Array], confidence: float) -> Estimate:
    head = headline(doc)
    name, _, stat = head.metric.partition(".")
    stat = stat or ("p50" if name in rules.DISTRIBUTION_METRICS else "value")
    declared, method = declared_method(doc, name)
    total = sum(len(r) for r in reps)
    base = _raw_base(head, total, head.lower_is_better)
    shape = f"{len(reps)} repetition(s), {total} samples"
    need = rules.MIN_SAMPLES_FOR_PERCENTILE.get(stat, 0)
    if total < need:
        return replace(
            base,
            method=f"{stat} not estimated: {shape}, needs {need}",
            evidence=f"{stat} needs at least {need} samples; this run has {total}",
        )
    if any(len(r) < need for r in reps):
        return _pooled_samples(base, reps, stat, (declared, method), shape, need)
    values = [float(repetition_statistic(r, stat, method)) for r in reps]
    what = "medians" if stat in ("p50", "value") else "means" if stat == "mean" else f"{stat} values"
    return from_values(base, values, f"per-repetition {what} ({shape}; percentile method {declared})", confidence)


def _pooled_samples(
    base: Estimate, reps: list[Array], stat: str, methods: tuple[str, str], shape: str, need: int
) -> Estimate:
    """The statistic of all samples pooled, without an interval: a repetition is too short for its own."""
    declared, method = methods
    pooled = float(repetition_statistic(np.concatenate(reps), stat, method))
    return replace(
        base,
        value=pooled,
        method=f"{stat} of pooled samples ({shape}; computed as {method} for declared '{declared}')",
        interval_method="none: not enough evidence",
        evidence=f"a per-repetition {stat} needs {need} samples in every repetition; the "
        f"shortest has {min(len(r) for r in reps)}",
    )


def _throughput_from_times(doc: dict[str, Any], confidence: float) -> Estimate | None:
    """Throughput per repetition from raw per-batch times, when that reproduces the reported throughput.

    Offline and fixed-step runs time one batch per iteration, so a repetition's throughput is
    batch_size × 1000 ÷ mean time (ms). Used only for samples/s and only when it agrees with the reported
    value within THROUGHPUT_AGREEMENT; otherwise the run keeps its summary.
    """
    head = headline(doc)
    found = _timed_batches(doc, head)
    if found is None:
        return None
    reps, batch, source, reported = found
    values = [float(throughput_per_repetition(r, batch)) for r in reps]
    pooled = float(batch) * 1000.0 * sum(len(r) for r in reps) / float(sum(r.sum() for r in reps))
    if abs(pooled - reported) > THROUGHPUT_AGREEMENT * reported:
        return None
    base = _raw_base(head, sum(len(r) for r in reps), False)
    return from_values(
        base,
        values,
        f"per-repetition throughput, batch_size × 1000 ÷ mean {source} "
        f"({len(reps)} repetition(s), {base.n} timed batches)",
        confidence,
    )


def _timed_batches(doc: dict[str, Any], head: Headline) -> tuple[list[Array], int, str, float] | None:
    """(per-batch times of each repetition, batch size, their metric, reported throughput) when the headline is
    an offline or fixed-step throughput in samples/s with raw batch times; None otherwise."""
    kind = (doc.get("scenario") or {}).get("kind")
    batch = ((doc.get("workload") or {}).get("shape") or {}).get("batch_size")
    source = "step_time_ms" if doc.get("phase") == "training" else "latency_ms"
    reps = raw_series(doc, source)
    if (
        head.metric not in ("throughput", "throughput.value")
        or head.unit != "samples/s"
        or reps is None
        or kind not in ("offline", "fixed-steps")
        or not isinstance(batch, int)
        or head.value is None
    ):
        return None
    return reps, batch, source, head.value


def _from_summary(doc: dict[str, Any]) -> Estimate:
    head = headline(doc)
    name = head.metric.partition(".")[0]
    dist = (doc.get("metrics") or {}).get(name)
    count = dist.get("count", 1) if isinstance(dist, dict) else 1
    base = _summary_base(head, int(count) if isinstance(count, int) else 1)
    if head.value is None:
        return replace(base, evidence="the run reports no headline value")
    return replace(
        base,
        values=np.asarray([float(head.value)]),
        evidence="one summary value without raw samples: it says nothing about run-to-run variation",
    )


def _summary_base(head: Headline, n: int) -> Estimate:
    return Estimate(
        metric=head.metric,
        value=head.value,
        unit=head.unit,
        lower_is_better=head.lower_is_better,
        method="reported summary value",
        interval_method="none: single summary value",
        n=n,
        source="summary",
        reported=head.value,
        value_unit="run",
    )


def headline_estimate(doc: dict[str, Any], *, resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Estimate:
    """The run's headline (metrics.primary) with a `confidence` interval over its repetitions.

    A derived run (protocol.derivation) keeps its point value but has no independent value: it repeats another
    run's measurement. `resamples` is ignored (intervals are no longer bootstrapped); it is accepted for old callers.
    """
    name = headline(doc).metric.partition(".")[0]
    reps = raw_series(doc, name)
    if reps is not None:
        found = _from_raw(doc, reps, confidence)
    else:
        found = _throughput_from_times(doc, confidence) or _from_summary(doc)
    derivation = derivation_of(doc)
    if derivation is None:
        return found
    return replace(
        found,
        values=None,
        interval_method="none: a derived result",
        evidence=f"not a measurement but {derivation.words()}, so it is not independent evidence",
    )


def aggregate(
    docs: Sequence[dict[str, Any]],
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    estimates: Sequence[Estimate] | None = None,
    keys: Sequence[str] | None = None,
) -> Estimate:
    """One estimate from runs that repeat the same configuration.

    With per-repetition values on every run, all repetitions of all runs are the independent values;
    otherwise each run contributes one value (its own estimate). Time to quality: one value per run, with
    MLPerf's olympic mean stated alongside when there are >= 5 runs. One run is its own estimate. Derived runs
    (protocol.derivation) contribute nothing: the measured runs alone are aggregated, and the method says how many
    were left out; with none measured, the point value stands without independent values.
    `estimates` (each run's `headline_estimate`) and `keys` (their digests) save recomputing them when the
    caller has them.
    """
    if not docs:
        raise ValueError("aggregate needs at least one run")
    ordered = _ordered_estimates(docs, confidence, estimates, keys)
    if len(docs) == 1:
        return ordered[0][1]
    measured = [e for d, e in ordered if not is_derived(d)]
    left_out = len(ordered) - len(measured)
    if not measured:
        return _only_derived([e for _, e in ordered])
    found = measured[0] if len(measured) == 1 else _aggregate_measured(measured, confidence)
    if not left_out:
        return found
    noun = "result" if left_out == 1 else "results"
    return replace(found, method=f"{found.method}; {left_out} derived {noun} not counted (not independent evidence)")


def _aggregate_measured(ests: Sequence[Estimate], confidence: float) -> Estimate:
    base = replace(ests[0], value=None, ci_low=None, ci_high=None, confidence=None, reported=None, evidence=None)
    base = replace(base, values=None, n=sum(e.n for e in ests))
    if all(e.source == "raw samples" and e.values is not None and e.value_unit == "repetition" for e in ests):
        return _pooled_repetitions(base, ests, len(ests), confidence)
    return _one_value_per_run(base, ests, len(ests), confidence)


def _only_derived(ests: Sequence[Estimate]) -> Estimate:
    """Runs that are all derived: the geometric mean of their values as a point, with no independent value."""
    values = [e.value for e in ests if e.value is not None and math.isfinite(e.value) and e.value > 0]
    return replace(
        ests[0],
        value=geometric_mean(values) if values else None,
        ci_low=None,
        ci_high=None,
        confidence=None,
        reported=None,
        values=None,
        value_unit="run",
        source="runs",
        n=sum(e.n for e in ests),
        method=f"geometric mean of the headline values of {len(ests)} derived results",
        interval_method="none: derived results only",
        evidence=f"all {len(ests)} runs are derived from other runs, none measured: no independent evidence",
    )


def _ordered_estimates(
    docs: Sequence[dict[str, Any]], confidence: float, estimates: Sequence[Estimate] | None, keys: Sequence[str] | None
) -> list[tuple[dict[str, Any], Estimate]]:
    """Each run with its estimate, in the order of the runs' digests when there are several."""
    ests = list(estimates) if estimates is not None else [headline_estimate(d, confidence=confidence) for d in docs]
    pairs = list(zip(docs, ests, strict=True))
    if len(docs) > 1:  # same runs, same estimate, whatever order they are listed in
        order = list(keys) if keys is not None else [digest(d) for d in docs]
        pairs = [pair for _, pair in sorted(zip(order, pairs, strict=True), key=lambda item: item[0])]
    return pairs


def _pooled_repetitions(base: Estimate, ests: Sequence[Estimate], runs: int, confidence: float) -> Estimate:
    values = np.concatenate([e.values for e in ests if e.values is not None])
    return from_values(
        base,
        values.tolist(),
        f"{len(values)} repetitions of {runs} runs pooled as "
        f"repetitions: {ests[0].method.removeprefix('geometric mean of ')}",
        confidence,
    )


def _one_value_per_run(base: Estimate, ests: Sequence[Estimate], runs: int, confidence: float) -> Estimate:
    per_run = [e.value for e in ests]
    words = f"the headline values of {runs} runs (one value per run)"
    if base.metric.partition(".")[0] == "time_to_quality" and len(per_run) >= OLYMPIC_MIN_RUNS:
        olympic = olympic_mean([v for v in per_run if v is not None])
        words += f"; MLPerf olympic mean {olympic:.6g} s"
    source = "runs" if any(e.source != "raw samples" for e in ests) else "raw samples"
    return from_values(
        replace(base, value_unit="run", source=source), [v for v in per_run if v is not None], words, confidence
    )
