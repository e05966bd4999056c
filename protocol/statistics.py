"""Honest numbers for comparisons: each headline with a calibrated 95% interval, and ratios between them.

Contract of this module (docs/statistics.md explains it and shows the calibration evidence):
- The unit of evidence is the *independent value*: one value of the headline statistic per repetition
  (computed from that repetition's raw samples) or, for runs without raw samples, one value per run.
  Samples inside one repetition are not independent evidence about the configuration: between-run
  variation is what makes a 3-repetition bootstrap over-confident, so intervals never resample them.
- A headline's point value is the geometric mean of its independent values; its interval is a Student t
  interval on their logarithms (k - 1 degrees of freedom). A ratio's interval is Welch's t interval on the
  difference of mean logs. Both are exact for log-normal between-run variation and, as the seeded
  simulation suite (tests/protocol/test_calibration.py) checks, cover the truth 93-97% of the time at 3, 5
  and 10 repetitions under drift, heavy tails and bimodality.
- Fewer than MIN_VALUES independent values is "not enough evidence": a point value, no interval, and the
  reason in words (`Estimate.evidence`). No verdict is formed from it.
- A tail percentile is estimated per repetition only when each repetition meets the protocol's sample
  minimum for it; otherwise the pooled percentile is shown without an interval, and said so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from . import rules
from .canonical import digest
from .percentiles import NUMPY_METHOD, quantile
from .summary import headline

Array = npt.NDArray[np.float64]

CONFIDENCE = 0.95
RESAMPLES = 0  # no resampling any more: kept so callers passing `resamples=` still work (it is ignored)
MIN_VALUES = 3  # fewest independent values an interval (and so a verdict) is formed on: calibrated from 3
OLYMPIC_MIN_RUNS = 5
THROUGHPUT_AGREEMENT = 0.05  # throughput from raw times must match the reported value this closely

UNIT_NOUN = {
    "samples/s": "sample",
    "tokens/s": "token",
    "requests/s": "request",
    "queries/s": "query",
    "images/s": "image",
}


# Every statistical method a comparison may use, in words: stored with each comparison and printed in reports.
METHODS = {
    "confidence": f"{CONFIDENCE:.0%} two-sided intervals",
    "independent_values": "one value of the headline statistic per repetition, from that repetition's raw "
    "samples; a run without raw samples counts as one value",
    "estimate": "geometric mean of the independent values; interval: Student t on their logarithms "
    "(k - 1 degrees of freedom)",
    "tail_percentile": "a tail percentile is computed per repetition (each must meet the protocol's sample "
    "minimum); otherwise the pooled percentile is shown without an interval",
    "repetitions": "runs repeating one configuration contribute all their repetitions (raw samples) or, "
    "without raw samples, one headline value each",
    "not_enough_evidence": f"fewer than {MIN_VALUES} independent values: a point value, no interval and no verdict",
    "time_to_quality": "geometric mean of the runs' times with a t interval on logs; MLPerf's olympic mean "
    "(fastest and slowest of >= 5 runs dropped) is stated alongside",
    "ratio": "subject ÷ baseline; Welch t interval on the difference of mean logarithms; with more than one "
    "comparison against the baseline the intervals are Bonferroni-adjusted (simultaneous 95%)",
    "distinguishable": "a difference is distinguishable from noise when the ratio's interval excludes 1.0",
    "calibration": "checked by a seeded simulation (docs/statistics.md): coverage 93-97% at 3, 5 and 10 "
    "repetitions; equal configurations called distinguishable in at most 5% of cases",
}


@dataclass(frozen=True)
class Caveat:
    """Something a reader must know before trusting a run's number. `code` is stable; `message` is words."""

    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


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


@dataclass(frozen=True)
class Ratio:
    """subject ÷ baseline with its interval. `distinguishable` is None when no interval could be formed.

    `evidence` is None when the interval is calibrated, else why there is no verdict.
    """

    value: float | None
    ci_low: float | None
    ci_high: float | None
    distinguishable: bool | None
    outcome: str  # "better", "worse", "indistinguishable" (from noise) or "unknown"
    method: str
    confidence: float | None = None
    evidence: str | None = None


def rounded(value: float | None, digits: int = 6) -> float | None:
    """`value` to `digits` significant figures; None for None or non-finite (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    if value == 0:
        return 0.0
    return round(float(value), digits - 1 - math.floor(math.log10(abs(value))))


# -------------------------------------------------------------------------------- the calibrated core
# These work on arrays whose last axis holds one configuration's independent values, so the simulation
# suite runs thousands of comparisons through exactly the code the product uses.


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


def log_t_interval(values: Array, confidence: float = CONFIDENCE) -> tuple[Array, Array, Array]:
    """(point, low, high): geometric mean of the last axis with a Student t interval on the logs.

    Needs at least 2 positive values per row; callers refuse fewer than MIN_VALUES before asking.
    """
    logs = np.log(np.asarray(values, dtype=np.float64))
    k = logs.shape[-1]
    centre = logs.mean(axis=-1)
    half = float(sps.t.ppf(0.5 + confidence / 2, k - 1)) * logs.std(axis=-1, ddof=1) / math.sqrt(k)
    return np.exp(centre), np.exp(centre - half), np.exp(centre + half)


def log_ratio_interval(subject: Array, baseline: Array, confidence: float = CONFIDENCE) -> tuple[Array, Array, Array]:
    """(ratio, low, high) of geometric means, subject ÷ baseline: Welch's t interval on the mean logs.

    Last axes hold each arm's independent values (their lengths may differ); leading axes broadcast.
    """
    ls, lb = np.log(np.asarray(subject, dtype=np.float64)), np.log(np.asarray(baseline, dtype=np.float64))
    ks, kb = ls.shape[-1], lb.shape[-1]
    vs, vb = ls.var(axis=-1, ddof=1) / ks, lb.var(axis=-1, ddof=1) / kb
    se2 = vs + vb
    with np.errstate(divide="ignore", invalid="ignore"):
        df = se2**2 / (vs**2 / (ks - 1) + vb**2 / (kb - 1))
    df = np.where(np.isfinite(df) & (df > 0), df, min(ks, kb) - 1)  # zero variance: the smaller arm's df
    half = sps.t.ppf(0.5 + confidence / 2, df) * np.sqrt(se2)
    d = ls.mean(axis=-1) - lb.mean(axis=-1)
    return np.exp(d), np.exp(d - half), np.exp(d + half)


def olympic_mean(values: Sequence[float]) -> float:
    """MLPerf training's olympic mean: drop the fastest and the slowest run, average the rest (>= 5 runs)."""
    if len(values) < OLYMPIC_MIN_RUNS:
        raise ValueError(f"the olympic mean needs at least {OLYMPIC_MIN_RUNS} runs, got {len(values)}")
    ordered = sorted(float(v) for v in values)
    return float(np.mean(ordered[1:-1]))


def from_values(base: Estimate, values: Sequence[float], words: str, confidence: float = CONFIDENCE) -> Estimate:
    """`base` completed from its independent values: a calibrated interval, or why there is none."""
    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    noun = base.value_unit
    if x.size == 0:
        return replace(base, method=words, interval_method="none", evidence="no values", values=None)
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        return replace(
            base,
            value=float(np.median(x)),
            method=f"median: {words}",
            values=None,
            interval_method="none: a value is zero or negative, so no ratio interval applies",
            evidence=f"a {noun} value is zero or negative",
        )
    if x.size < MIN_VALUES:
        single = float(np.exp(np.log(x).mean()))
        why = (
            f"{x.size} independent value{'s' if x.size > 1 else ''} ({noun}s); a calibrated interval "
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
        interval_method=f"Student t interval on the logs of {x.size} {noun} values ({x.size - 1} degrees of freedom)",
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


def _from_raw(doc: dict[str, Any], reps: list[Array], confidence: float) -> Estimate:
    head = headline(doc)
    name, _, stat = head.metric.partition(".")
    stat = stat or ("p50" if name in rules.DISTRIBUTION_METRICS else "value")
    declared, method = declared_method(doc, name)
    total = sum(len(r) for r in reps)
    base = Estimate(
        metric=head.metric,
        value=None,
        unit=head.unit,
        lower_is_better=head.lower_is_better,
        method="",
        interval_method="none",
        n=total,
        source="raw samples",
        reported=head.value,
    )
    shape = f"{len(reps)} repetition(s), {total} samples"
    need = rules.MIN_SAMPLES_FOR_PERCENTILE.get(stat, 0)
    if total < need:
        return replace(
            base,
            method=f"{stat} not estimated: {shape}, needs {need}",
            evidence=f"{stat} needs at least {need} samples; this run has {total}",
        )
    if any(len(r) < need for r in reps):
        pooled = float(repetition_statistic(np.concatenate(reps), stat, method))
        return replace(
            base,
            value=pooled,
            method=f"{stat} of pooled samples ({shape}; computed as {method} for declared '{declared}')",
            interval_method="none: not enough evidence",
            evidence=f"a per-repetition {stat} needs {need} samples in every repetition; the "
            f"shortest has {min(len(r) for r in reps)}",
        )
    values = [float(repetition_statistic(r, stat, method)) for r in reps]
    what = "medians" if stat in ("p50", "value") else "means" if stat == "mean" else f"{stat} values"
    return from_values(base, values, f"per-repetition {what} ({shape}; percentile method {declared})", confidence)


def _throughput_from_times(doc: dict[str, Any], confidence: float) -> Estimate | None:
    """Throughput per repetition from raw per-batch times, when that reproduces the reported throughput.

    Offline and fixed-step runs time one batch per iteration, so a repetition's throughput is
    batch_size × 1000 ÷ mean time (ms). Used only for samples/s and only when it agrees with the reported
    value within THROUGHPUT_AGREEMENT; otherwise the run keeps its summary.
    """
    head = headline(doc)
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
    values = [float(throughput_per_repetition(r, batch)) for r in reps]
    pooled = float(batch) * 1000.0 * sum(len(r) for r in reps) / float(sum(r.sum() for r in reps))
    if abs(pooled - head.value) > THROUGHPUT_AGREEMENT * head.value:
        return None
    base = Estimate(
        metric=head.metric,
        value=None,
        unit=head.unit,
        lower_is_better=False,
        method="",
        interval_method="none",
        n=sum(len(r) for r in reps),
        source="raw samples",
        reported=head.value,
    )
    return from_values(
        base,
        values,
        f"per-repetition throughput, batch_size × 1000 ÷ mean {source} "
        f"({len(reps)} repetition(s), {base.n} timed batches)",
        confidence,
    )


def _from_summary(doc: dict[str, Any]) -> Estimate:
    head = headline(doc)
    name = head.metric.partition(".")[0]
    dist = (doc.get("metrics") or {}).get(name)
    count = dist.get("count", 1) if isinstance(dist, dict) else 1
    base = Estimate(
        metric=head.metric,
        value=head.value,
        unit=head.unit,
        lower_is_better=head.lower_is_better,
        method="reported summary value",
        interval_method="none: single summary value",
        n=int(count) if isinstance(count, int) else 1,
        source="summary",
        reported=head.value,
        value_unit="run",
    )
    if head.value is None:
        return replace(base, evidence="the run reports no headline value")
    return replace(
        base,
        values=np.asarray([float(head.value)]),
        evidence="one summary value without raw samples: it says nothing about run-to-run variation",
    )


def headline_estimate(doc: dict[str, Any], *, resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> Estimate:
    """The run's headline (metrics.primary) with a `confidence` interval over its repetitions.

    `resamples` is ignored (intervals are no longer bootstrapped); it is accepted for old callers.
    """
    name = headline(doc).metric.partition(".")[0]
    reps = raw_series(doc, name)
    if reps is not None:
        return _from_raw(doc, reps, confidence)
    return _throughput_from_times(doc, confidence) or _from_summary(doc)


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
    MLPerf's olympic mean stated alongside when there are >= 5 runs. One run is its own estimate.
    `estimates` (each run's `headline_estimate`) and `keys` (their digests) save recomputing them when the
    caller has them.
    """
    if not docs:
        raise ValueError("aggregate needs at least one run")
    ests = list(estimates) if estimates is not None else [headline_estimate(d, confidence=confidence) for d in docs]
    if len(docs) > 1:  # same runs, same estimate, whatever order they are listed in
        order = list(keys) if keys is not None else [digest(d) for d in docs]
        ests = [e for _, e in sorted(zip(order, ests, strict=True), key=lambda pair: pair[0])]
    if len(docs) == 1:
        return ests[0]
    head = ests[0]
    base = replace(
        head,
        value=None,
        ci_low=None,
        ci_high=None,
        confidence=None,
        reported=None,
        evidence=None,
        values=None,
        n=sum(e.n for e in ests),
    )
    if all(e.source == "raw samples" and e.values is not None and e.value_unit == "repetition" for e in ests):
        values = np.concatenate([e.values for e in ests if e.values is not None])
        return from_values(
            base,
            values.tolist(),
            f"{len(values)} repetitions of {len(docs)} runs pooled as "
            f"repetitions: {ests[0].method.removeprefix('geometric mean of ')}",
            confidence,
        )
    per_run = [e.value for e in ests]
    words = f"the headline values of {len(docs)} runs (one value per run)"
    if head.metric.partition(".")[0] == "time_to_quality" and len(per_run) >= OLYMPIC_MIN_RUNS:
        olympic = olympic_mean([v for v in per_run if v is not None])
        words += f"; MLPerf olympic mean {olympic:.6g} s"
    source = "runs" if any(e.source != "raw samples" for e in ests) else "raw samples"
    return from_values(
        replace(base, value_unit="run", source=source), [v for v in per_run if v is not None], words, confidence
    )


def ratio(subject: Estimate, baseline: Estimate, *, confidence: float = CONFIDENCE) -> Ratio:
    """subject ÷ baseline, with Welch's t interval on the logs of both arms' independent values.

    `distinguishable` is True when the interval excludes 1.0; None, with the reason in `evidence`, when an
    arm has too little evidence. Better/worse follow the metric's direction (lower-is-better: below 1).
    """
    if subject.value is None or baseline.value is None or baseline.value <= 0:
        return Ratio(
            None,
            None,
            None,
            None,
            "unknown",
            "no ratio: a headline value is missing or zero",
            evidence="a headline value is missing or zero",
        )
    value = subject.value / baseline.value
    why = "; ".join(
        f"{who}: {e.evidence}" for who, e in (("subject", subject), ("baseline", baseline)) if e.evidence is not None
    )
    if why or subject.values is None or baseline.values is None:
        return Ratio(
            value,
            None,
            None,
            None,
            "unknown",
            "ratio of point values; no interval: not enough evidence",
            evidence=why or "no independent values",
        )
    point, low, high = (float(v) for v in log_ratio_interval(subject.values, baseline.values, confidence))
    distinguishable = low > 1.0 or high < 1.0
    improved = point < 1.0 if subject.lower_is_better else point > 1.0
    outcome = ("better" if improved else "worse") if distinguishable else "indistinguishable"
    return Ratio(
        point,
        low,
        high,
        distinguishable,
        outcome,
        f"Welch t interval on the difference of mean logs ({len(subject.values)} and "
        f"{len(baseline.values)} independent values), {confidence:.4g} confidence",
        confidence,
    )


# ------------------------------------------------------------------------------------------------ caveats


def caveats(doc: dict[str, Any], estimate: Estimate | None = None) -> list[Caveat]:
    """What a reader of this run's number must know: conditions, validity, and limits of the statistics."""
    out = _condition_caveats(doc)
    est = estimate or headline_estimate(doc)
    out.extend(_statistics_caveats(doc, est))
    return out


def _condition_caveats(doc: dict[str, Any]) -> list[Caveat]:
    cond = doc.get("conditions") or {}
    out: list[Caveat] = []
    steady = cond.get("steady_state") or {}
    if steady.get("reached") is False:
        reasons = "; ".join(steady.get("reasons") or []) or "no reason given"
        out.append(Caveat("steady-state-not-reached", f"steady state was not reached: {reasons}"))
    elif steady.get("reached") is None:
        out.append(Caveat("steady-state-not-assessed", "whether steady state was reached was not assessed"))
    thermal = cond.get("thermal") or {}
    if thermal.get("throttled"):
        why = ", ".join(thermal.get("throttle_reasons") or []) or "reason not recorded"
        out.append(Caveat("thermal-throttling", f"the accelerator throttled during the run ({why})"))
    if cond.get("isolation") == "shared":
        out.append(
            Caveat("shared-machine", "the machine was shared with other work: noisy neighbours may have slowed it")
        )
    validity = cond.get("validity") or {}
    if validity.get("valid") is False:
        failed = [k for k, ok in (validity.get("checks") or {}).items() if not ok]
        out.append(
            Caveat(
                "invalid-result", "the result failed its validity checks" + (f": {', '.join(failed)}" if failed else "")
            )
        )
    return out


def _statistics_caveats(doc: dict[str, Any], est: Estimate) -> list[Caveat]:
    out: list[Caveat] = []
    name, _, stat = est.metric.partition(".")
    if est.source != "raw samples":
        out.append(
            Caveat(
                "no-raw-samples",
                f"no raw samples for {name}: no interval, since one summary value "
                "says nothing about run-to-run variation",
            )
        )
    if stat in rules.MIN_SAMPLES_FOR_PERCENTILE and est.value is None:
        out.append(
            Caveat(
                "too-few-samples-for-percentile",
                f"{est.metric} needs at least {rules.MIN_SAMPLES_FOR_PERCENTILE[stat]} samples; this run has {est.n}",
            )
        )
    dist = (doc.get("metrics") or {}).get(name)
    if name in rules.DISTRIBUTION_METRICS and isinstance(dist, dict):
        missing = [k for k in ("p90", "p95", "p99") if dist.get(k) is None]
        if missing:
            out.append(
                Caveat(
                    "tail-percentile-absent",
                    f"{name} has no {', '.join(missing)}: {dist.get('count', 0)} samples are too few to claim them",
                )
            )
    if est.evidence is not None and est.value is not None and est.source == "raw samples":
        # (a summary-only run is already told: "no raw samples … no interval")
        out.append(Caveat("not-enough-evidence", f"no calibrated interval: {est.evidence}"))
    return out
