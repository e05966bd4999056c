"""Honest numbers for comparisons: each run's headline with a 95% interval, aggregation of repetitions, ratios.

Contract of this module:
- Raw samples (`samples.<metric>.repetitions`) are used in preference to summaries whenever they exist and
  are in the metric's unit. A median headline is the median of per-repetition medians; a tail percentile
  is the percentile of the pooled samples, computed with the percentile method the run declared.
- Intervals are percentile bootstraps drawn with numpy's Generator from a seed fixed by the data itself,
  so the same evidence always gives the same interval, whatever order runs are listed in.
- Every Estimate names its method and its interval method in words; "no interval" is said, not hidden.
- Time-to-quality runs aggregate with MLPerf's olympic mean (drop fastest and slowest of >= 5 runs).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from . import rules
from .canonical import digest
from .summary import headline

Array = npt.NDArray[np.float64]
Statistic = Callable[[Array], Array]  # maps an (m, n) array of resamples to m values (axis 1)

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20261120  # fixed base seed; each data set adds its own digest (see _rng)
MAX_BOOTSTRAP_ELEMENTS = 400_000_000  # cap on resampled values per estimate; above it B is reduced, and said
CHUNK_ELEMENTS = 4_000_000  # resamples are drawn in chunks of about this many values to bound memory
OLYMPIC_MIN_RUNS = 5
THROUGHPUT_AGREEMENT = 0.05  # throughput from raw times must match the reported value this closely
FEW_VALUES = 5  # below this many independent values a bootstrap interval is shown with a caveat

# PROTOCOL.md percentile methods -> numpy's names. "nearest-rank" is the inverse of the empirical CDF.
# MLPerf loadgen takes the sorted sample at index floor(n·p); numpy's "higher" is the closest named match.
NUMPY_METHOD = {
    "nearest-rank": "inverted_cdf", "linear": "linear", "lower": "lower", "higher": "higher",
    "midpoint": "midpoint", "hazen": "hazen", "weibull": "weibull", "median-unbiased": "median_unbiased",
    "normal-unbiased": "normal_unbiased", "loadgen": "higher",
}
UNIT_NOUN = {"samples/s": "sample", "tokens/s": "token", "requests/s": "request", "queries/s": "query",
             "images/s": "image"}


# Every statistical method a comparison may use, in words: stored with each comparison and printed in reports.
METHODS = {
    "confidence": f"{CONFIDENCE:.0%} two-sided intervals",
    "median": "median of per-repetition medians (the field's way to aggregate repetitions)",
    "tail_percentile": "percentile of the pooled raw samples, with the percentile method the run declared",
    "bootstrap": (f"percentile bootstrap, {RESAMPLES} resamples, numpy Generator (PCG64) seeded with "
                  f"{SEED} and the SHA-256 of the data resampled"),
    "summary_only": "a run without raw samples keeps its reported value; no interval unless the summary "
                    "has mean, stdev and count (Student t)",
    "repetitions": "runs repeating one configuration are pooled as repetitions (raw samples) or, without "
                   "raw samples, summarised by the median of their headline values, bootstrapped over runs",
    "time_to_quality": "MLPerf olympic mean: the fastest and slowest of >= 5 runs dropped, the rest averaged",
    "ratio": "subject ÷ baseline; interval from the ratio of independent bootstrap replicates",
    "distinguishable": "a difference is distinguishable from noise when the ratio's interval excludes 1.0",
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
    """A headline value with its interval. `replicates` (bootstrap values) feed ratio intervals; never shown."""

    metric: str
    value: float | None
    unit: str | None
    lower_is_better: bool
    method: str
    interval_method: str
    n: int
    source: str  # "raw samples", "summary" or "runs"
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float | None = None
    reported: float | None = None  # the summary value the run itself reported, for audit
    replicates: Array | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric, "value": rounded(self.value), "unit": self.unit,
            "lower_is_better": self.lower_is_better, "ci_low": rounded(self.ci_low),
            "ci_high": rounded(self.ci_high), "confidence": self.confidence, "method": self.method,
            "interval_method": self.interval_method, "n": self.n, "source": self.source,
            "reported": rounded(self.reported),
        }


@dataclass(frozen=True)
class Ratio:
    """subject ÷ baseline with its interval. `distinguishable` is None when no interval could be formed."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    distinguishable: bool | None
    outcome: str  # "better", "worse", "indistinguishable" (from noise) or "unknown"
    method: str


def rounded(value: float | None, digits: int = 6) -> float | None:
    """`value` to `digits` significant figures; None for None or non-finite (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    if value == 0:
        return 0.0
    return round(float(value), digits - 1 - math.floor(math.log10(abs(value))))


def _rng(*parts: Array | str) -> np.random.Generator:
    """A generator seeded by SEED and the data it will resample: reproducible and order-independent."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else np.ascontiguousarray(part, np.float64).tobytes())
        h.update(b"\x00")
    words = np.frombuffer(h.digest(), dtype=np.uint32).tolist()
    return np.random.default_rng(np.random.SeedSequence([SEED, *words]))


def _effective_resamples(resamples: int, total_values: int) -> int:
    return max(200, min(resamples, MAX_BOOTSTRAP_ELEMENTS // max(total_values, 1)))


def _interval(replicates: Array, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    low, high = np.quantile(replicates, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def _resample_within(x: Array, statistic: Statistic, rng: np.random.Generator, b: int) -> Array:
    """`b` bootstrap values of `statistic` over resamples of x (with replacement, same size), in chunks."""
    n = len(x)
    out = np.empty(b)
    step = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, b, step):
        m = min(step, b - start)
        out[start:start + m] = statistic(x[rng.integers(0, n, size=(m, n))])
    return out


def _quantile_stat(q: float, method: str) -> Statistic:
    def stat(a: Array) -> Array:
        return np.asarray(np.quantile(a, q, axis=1, method=method), dtype=np.float64)  # type: ignore[call-overload]
    return stat


def _mean_stat(a: Array) -> Array:
    return np.asarray(a.mean(axis=1), dtype=np.float64)


def two_stage(reps: Sequence[Array], within: Statistic, *, resamples: int = RESAMPLES, tag: str = ""
              ) -> tuple[float, Array, int]:
    """Median over repetitions of a per-repetition statistic, with two-stage bootstrap replicates.

    The bootstrap resamples repetitions (between-run variation), then samples within each chosen repetition
    (within-run variation): with one repetition it is the ordinary bootstrap. Returns (point, replicates,
    resamples used).
    """
    reps = [np.asarray(r, dtype=np.float64) for r in reps]
    point = float(np.median([within(r[None, :])[0] for r in reps]))
    rng = _rng(tag, "two-stage", *reps)
    b = _effective_resamples(resamples, sum(len(r) for r in reps))
    per_rep = np.stack([_resample_within(r, within, rng, b) for r in reps])  # (k, b)
    k = len(reps)
    chosen = rng.integers(0, k, size=(b, k))
    # A random permutation per position keeps a repetition drawn twice from reusing one within-resample.
    columns = np.stack([rng.permutation(b) for _ in range(k)], axis=1)
    return point, np.median(per_rep[chosen, columns], axis=1), b


def median_of_medians(reps: Sequence[Array], *, method: str = "linear", resamples: int = RESAMPLES,
                      tag: str = "") -> tuple[float, Array, int]:
    """The field's aggregate of repetitions: median of per-repetition medians, two-stage bootstrap."""
    return two_stage(reps, _quantile_stat(0.5, method), resamples=resamples, tag=tag + method)


def pooled_statistic(reps: Sequence[Array], statistic: Statistic, *, resamples: int = RESAMPLES,
                     tag: str = "") -> tuple[float, Array, int]:
    """A statistic of all samples pooled, with a bootstrap stratified by repetition (each keeps its size)."""
    reps = [np.asarray(r, dtype=np.float64) for r in reps]
    pooled = np.concatenate(reps)
    point = float(statistic(pooled[None, :])[0])
    rng = _rng(tag, "pooled", *reps)
    b = _effective_resamples(resamples, len(pooled))
    out = np.empty(b)
    step = max(1, CHUNK_ELEMENTS // len(pooled))
    for start in range(0, b, step):
        m = min(step, b - start)
        parts = [r[rng.integers(0, len(r), size=(m, len(r)))] for r in reps]
        out[start:start + m] = statistic(np.concatenate(parts, axis=1))
    return point, out, b


def olympic_mean(values: Sequence[float]) -> float:
    """MLPerf training's olympic mean: drop the fastest and the slowest run, average the rest (>= 5 runs)."""
    if len(values) < OLYMPIC_MIN_RUNS:
        raise ValueError(f"the olympic mean needs at least {OLYMPIC_MIN_RUNS} runs, got {len(values)}")
    ordered = sorted(float(v) for v in values)
    return float(np.mean(ordered[1:-1]))


def bootstrap_over(values: Sequence[float], statistic: Callable[[Array], float], *,
                   resamples: int = RESAMPLES, tag: str = "") -> Array:
    """Bootstrap replicates of a statistic of a handful of values (e.g. one headline per run)."""
    x = np.asarray(values, dtype=np.float64)
    rng = _rng(tag, "over-runs", x)
    idx = rng.integers(0, len(x), size=(resamples, len(x)))
    return np.asarray([statistic(row) for row in x[idx]], dtype=np.float64)


def _olympic_stat(row: Array) -> float:
    return olympic_mean(row.tolist())


def _median_stat(row: Array) -> float:
    return float(np.median(row))


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


def _from_raw(doc: dict[str, Any], reps: list[Array], resamples: int, confidence: float) -> Estimate:
    head = headline(doc)
    name, _, stat = head.metric.partition(".")
    stat = stat or ("p50" if name in rules.DISTRIBUTION_METRICS else "value")
    declared = ((doc.get("metrics") or {}).get(name) or {}).get("method", "linear")
    method = NUMPY_METHOD.get(declared, "linear")
    total = sum(len(r) for r in reps)
    base = Estimate(metric=head.metric, value=None, unit=head.unit, lower_is_better=head.lower_is_better,
                    method="", interval_method="none", n=total, source="raw samples", reported=head.value)
    shape = f"{len(reps)} repetition(s), {total} samples"
    if stat in rules.MIN_SAMPLES_FOR_PERCENTILE and not rules.percentile_allowed(stat, total):
        return replace(base, method=f"{stat} not estimated: {shape}, needs {rules.MIN_SAMPLES_FOR_PERCENTILE[stat]}")
    if stat in ("p50", "value"):
        point, reps_b, b = median_of_medians(reps, method=method, resamples=resamples, tag=head.metric)
        words = f"median of per-repetition medians ({shape}; percentile method {declared})"
        interval = f"two-stage percentile bootstrap (repetitions, then samples within), {b} resamples"
    elif stat == "mean":
        point, reps_b, b = pooled_statistic(reps, _mean_stat, resamples=resamples, tag=head.metric)
        words, interval = f"mean of pooled samples ({shape})", f"stratified percentile bootstrap, {b} resamples"
    else:
        q = rules.PERCENTILES[stat] / 100.0
        point, reps_b, b = pooled_statistic(reps, _quantile_stat(q, method), resamples=resamples,
                                            tag=head.metric)
        words = f"{stat} of pooled samples ({shape}; numpy method {method} for declared '{declared}')"
        interval = f"stratified percentile bootstrap (resampling within each repetition), {b} resamples"
    low, high = _interval(reps_b, confidence)
    return replace(base, value=point, method=words, interval_method=interval, ci_low=low, ci_high=high,
                   confidence=confidence, replicates=reps_b)


def _from_summary(doc: dict[str, Any], confidence: float) -> Estimate:
    head = headline(doc)
    name, _, stat = head.metric.partition(".")
    dist = (doc.get("metrics") or {}).get(name)
    base = Estimate(metric=head.metric, value=head.value, unit=head.unit, lower_is_better=head.lower_is_better,
                    method="reported summary value", interval_method="none: single summary value", n=1,
                    source="summary", reported=head.value)
    if (stat == "mean" and isinstance(dist, dict) and isinstance(dist.get("stdev"), int | float)
            and isinstance(dist.get("count"), int) and dist["count"] >= 2 and head.value is not None):
        n = dist["count"]
        low, high = sps.t.interval(confidence, n - 1, loc=head.value, scale=dist["stdev"] / math.sqrt(n))
        return replace(base, method="reported mean", n=n, ci_low=float(low), ci_high=float(high),
                       confidence=confidence, interval_method="Student t interval from the reported mean, "
                       "stdev and count (assumes independent samples)")
    return replace(base, n=int(dist.get("count", 1)) if isinstance(dist, dict) else 1)


def _throughput_from_times(doc: dict[str, Any], resamples: int, confidence: float) -> Estimate | None:
    """Throughput per repetition from raw per-batch times, when that reproduces the reported throughput.

    Offline and fixed-step runs time one batch per iteration, so a repetition's throughput is
    batch_size × 1000 ÷ mean time (ms). Used only for samples/s and only when it agrees with the reported
    value within THROUGHPUT_AGREEMENT; otherwise the run keeps its summary (no interval).
    """
    head = headline(doc)
    kind = (doc.get("scenario") or {}).get("kind")
    batch = ((doc.get("workload") or {}).get("shape") or {}).get("batch_size")
    source = "step_time_ms" if doc.get("phase") == "training" else "latency_ms"
    reps = raw_series(doc, source)
    if (head.metric not in ("throughput", "throughput.value") or head.unit != "samples/s" or reps is None
            or kind not in ("offline", "fixed-steps") or not isinstance(batch, int) or head.value is None):
        return None
    factor = float(batch) * 1000.0

    def per_rep(a: Array) -> Array:
        return np.asarray(factor / a.mean(axis=1), dtype=np.float64)

    point, replicates, b = two_stage(reps, per_rep, resamples=resamples, tag="throughput-from-times")
    if abs(point - head.value) > THROUGHPUT_AGREEMENT * head.value:
        return None
    low, high = _interval(replicates, confidence)
    return Estimate(metric=head.metric, value=point, unit=head.unit, lower_is_better=False,
                    method=f"median of per-repetition throughput, batch_size × 1000 ÷ mean {source} per "
                    f"repetition ({len(reps)} repetition(s), {sum(len(r) for r in reps)} timed batches)",
                    interval_method=f"two-stage percentile bootstrap (repetitions, then batches within), {b} "
                    "resamples", n=sum(len(r) for r in reps), source="raw samples", ci_low=low, ci_high=high,
                    confidence=confidence, reported=head.value, replicates=replicates)


def headline_estimate(doc: dict[str, Any], *, resamples: int = RESAMPLES,
                      confidence: float = CONFIDENCE) -> Estimate:
    """The run's headline (metrics.primary) with a `confidence` interval, from raw samples when it has them."""
    name = headline(doc).metric.partition(".")[0]
    reps = raw_series(doc, name)
    if reps is not None:
        return _from_raw(doc, reps, resamples, confidence)
    return _throughput_from_times(doc, resamples, confidence) or _from_summary(doc, confidence)


def aggregate(docs: Sequence[dict[str, Any]], *, resamples: int = RESAMPLES,
              confidence: float = CONFIDENCE) -> Estimate:
    """One estimate from runs that repeat the same configuration on the same system.

    Time-to-quality: olympic mean (MLPerf) of >= 5 runs, plain mean below that (and said so). With raw samples
    on every run, their repetitions are pooled as repetitions of one configuration. Otherwise the median of
    the runs' headline values, bootstrapped over runs. One run is simply its own estimate.
    """
    if not docs:
        raise ValueError("aggregate needs at least one run")
    docs = sorted(docs, key=digest)  # seeds follow the data, so order the data: same runs, same interval
    head = headline(docs[0])
    if head.metric.partition(".")[0] == "time_to_quality":
        return _aggregate_time_to_quality(docs, resamples, confidence)
    if len(docs) == 1:
        return headline_estimate(docs[0], resamples=resamples, confidence=confidence)
    pooled = headline_estimate(_pooled(docs), resamples=resamples, confidence=confidence)
    if pooled.source == "raw samples" and all(headline_estimate(d, resamples=200).source == "raw samples"
                                              for d in docs):
        return replace(pooled, method=f"{len(docs)} runs pooled as repetitions: {pooled.method}", reported=None)
    values = [headline_estimate(d, resamples=resamples, confidence=confidence).value for d in docs]
    return _over_runs(head.metric, [v for v in values if v is not None], _median_stat,
                      "median of per-run headline values", head.unit, head.lower_is_better, resamples,
                      confidence)


def _pooled(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The first run with every run's raw repetitions of each series they all have in one unit."""
    names = set.intersection(*(set(d.get("samples") or {}) for d in docs))
    merged = {}
    for name in sorted(names):
        series = [d["samples"][name] for d in docs]
        if len({s.get("unit") for s in series}) == 1:
            merged[name] = {"unit": series[0]["unit"], "repetitions": [r for s in series for r in s["repetitions"]]}
    return dict(docs[0], samples=merged)


def _over_runs(metric: str, values: list[float], stat: Callable[[Array], float], words: str,
               unit: str | None, lower: bool, resamples: int, confidence: float) -> Estimate:
    if not values:
        return Estimate(metric=metric, value=None, unit=unit, lower_is_better=lower, method=words,
                        interval_method="none: no values", n=0, source="runs")
    point = stat(np.asarray(values, dtype=np.float64))
    if len(values) < 2:
        return Estimate(metric=metric, value=point, unit=unit, lower_is_better=lower, method=words, n=1,
                        interval_method="none: single summary value", source="runs")
    reps = bootstrap_over(values, stat, resamples=resamples, tag=metric + words)
    low, high = _interval(reps, confidence)
    return Estimate(metric=metric, value=point, unit=unit, lower_is_better=lower,
                    method=f"{words} ({len(values)} runs)", n=len(values), source="runs",
                    interval_method=f"percentile bootstrap over runs, {resamples} resamples", ci_low=low,
                    ci_high=high, confidence=confidence, replicates=reps)


def _aggregate_time_to_quality(docs: Sequence[dict[str, Any]], resamples: int, confidence: float) -> Estimate:
    head = headline(docs[0])
    values = [v for v in (headline(d).value for d in docs) if v is not None]
    if len(docs) == 1:
        return _from_summary(docs[0], confidence)
    if len(values) >= OLYMPIC_MIN_RUNS:
        return _over_runs(head.metric, values, _olympic_stat, "olympic mean (MLPerf: fastest and slowest "
                          "runs dropped, the rest averaged)", "s", True, resamples, confidence)
    return _over_runs(head.metric, values, lambda row: float(np.mean(row)),
                      f"plain mean: the olympic mean needs {OLYMPIC_MIN_RUNS} runs", "s", True, resamples,
                      confidence)


def ratio(subject: Estimate, baseline: Estimate, *, confidence: float = CONFIDENCE) -> Ratio:
    """subject ÷ baseline, with a percentile interval from the ratio of independent bootstrap replicates.

    `distinguishable` is True when the interval excludes 1.0. Better/worse follow the metric's direction:
    for lower-is-better metrics a ratio below 1 is better.
    """
    if subject.value is None or baseline.value is None or baseline.value <= 0:
        return Ratio(None, None, None, None, "unknown", "no ratio: a headline value is missing or zero")
    value = subject.value / baseline.value
    if subject.replicates is None or baseline.replicates is None:
        return Ratio(value, None, None, None, "unknown",
                     "ratio of point values; no interval: a run has a single summary value")
    m = min(len(subject.replicates), len(baseline.replicates))
    s, b = subject.replicates[:m], baseline.replicates[:m]
    keep = b > 0
    low, high = _interval(s[keep] / b[keep], confidence)
    distinguishable = low > 1.0 or high < 1.0
    improved = value < 1.0 if subject.lower_is_better else value > 1.0
    outcome = ("better" if improved else "worse") if distinguishable else "indistinguishable"
    return Ratio(value, low, high, distinguishable, outcome,
                 f"percentile interval of the ratio of independent bootstrap replicates ({m} resamples)")


# ------------------------------------------------------------------------------------------------ caveats

def caveats(doc: dict[str, Any], estimate: Estimate | None = None) -> list[Caveat]:
    """What a reader of this run's number must know: conditions, validity, and limits of the statistics."""
    out = _condition_caveats(doc)
    est = estimate or headline_estimate(doc, resamples=200)
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
        out.append(Caveat("shared-machine", "the machine was shared with other work: noisy neighbours may "
                                            "have slowed it"))
    validity = cond.get("validity") or {}
    if validity.get("valid") is False:
        failed = [k for k, ok in (validity.get("checks") or {}).items() if not ok]
        out.append(Caveat("invalid-result", "the result failed its validity checks"
                          + (f": {', '.join(failed)}" if failed else "")))
    return out


def _statistics_caveats(doc: dict[str, Any], est: Estimate) -> list[Caveat]:
    out: list[Caveat] = []
    name, _, stat = est.metric.partition(".")
    if est.source != "raw samples":
        how = "interval from the summary only" if est.ci_low is not None else "no interval"
        out.append(Caveat("no-raw-samples", f"no raw samples for {name}: {how}"))
    if stat in rules.MIN_SAMPLES_FOR_PERCENTILE and est.value is None:
        out.append(Caveat("too-few-samples-for-percentile", f"{est.metric} needs at least "
                          f"{rules.MIN_SAMPLES_FOR_PERCENTILE[stat]} samples; this run has {est.n}"))
    dist = (doc.get("metrics") or {}).get(name)
    if name in rules.DISTRIBUTION_METRICS and isinstance(dist, dict):
        missing = [k for k in ("p90", "p95", "p99") if dist.get(k) is None]
        if missing:
            out.append(Caveat("tail-percentile-absent", f"{name} has no {', '.join(missing)}: "
                              f"{dist.get('count', 0)} samples are too few to claim them"))
    reps = raw_series(doc, name)
    if reps is not None and all(len(r) == 1 for r in reps) and len(reps) < FEW_VALUES:
        out.append(Caveat("few-repetitions", f"the interval rests on {len(reps)} repetition value(s); "
                          "with fewer than 5 it is rough"))
    return out
