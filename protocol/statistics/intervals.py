"""The interval formulas every number in benchreg rests on: one Student t interval on logarithms, from values or from
their sums, and Welch's t interval for a ratio of geometric means.

The headline estimates (estimates.py), the decisions' per-run intervals (protocol.decisions) and the overview
matrix (which adds up n, Σ ln x and Σ (ln x)² in the database) all call these, so one formula gives every
interval a reader sees.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

CONFIDENCE = 0.95
MIN_VALUES = 3  # fewest independent values an interval (and so a verdict) is formed on: calibrated from 3
OLYMPIC_MIN_RUNS = 5


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The two-sided Student t quantile for `confidence` at `df` degrees of freedom.

    Cached: scipy's ppf costs ~0.1 ms a call, and a page asks for the same few degrees of freedom hundreds of times.
    """
    return _t_quantile(df, confidence)  # one cache key whether `confidence` was given or defaulted


@functools.lru_cache(maxsize=1024)
def _t_quantile(df: int, confidence: float) -> float:
    from scipy import stats as sps  # here, not at the top: importing scipy.stats costs ~1 s of every process's start

    return float(sps.t.ppf(0.5 + confidence / 2, df))


def log_t_bounds(centre: Any, sd: Any, k: int, confidence: float = CONFIDENCE) -> tuple[Any, Any, Any]:
    """(point, low, high) = exp(centre), exp(centre ∓ t(k - 1) · sd ÷ √k): the Student t interval on logarithms.

    `centre` and `sd` are the mean and standard deviation (k - 1 in the denominator) of k logarithms; arrays
    broadcast. The one formula behind `log_t_interval` and `log_sums_interval`.
    """
    half = t_quantile(k - 1, confidence) * sd / math.sqrt(k)
    return np.exp(centre), np.exp(centre - half), np.exp(centre + half)


def log_t_interval(values: Array, confidence: float = CONFIDENCE) -> tuple[Array, Array, Array]:
    """(point, low, high): geometric mean of the last axis with a Student t interval on the logs.

    Needs at least 2 positive values per row; callers refuse fewer than MIN_VALUES before asking.
    """
    logs = np.log(np.asarray(values, dtype=np.float64))
    return log_t_bounds(logs.mean(axis=-1), logs.std(axis=-1, ddof=1), logs.shape[-1], confidence)


def log_sums_interval(
    n: int, log_sum: float, log_sq_sum: float, confidence: float = CONFIDENCE
) -> tuple[float | None, float | None, float | None]:
    """(point, low, high) of n positive values known only by n, Σ ln x and Σ (ln x)², as a database adds them up.

    The point is the geometric mean; the interval is `log_t_interval`'s, and None below MIN_VALUES values (the
    point alone, as `estimates.from_values` gives it). No values: (None, None, None).
    """
    if n < 1:
        return None, None, None
    mean = log_sum / n
    if n < MIN_VALUES:
        return math.exp(mean), None, None
    variance = max(0.0, (log_sq_sum - n * mean * mean) / (n - 1))  # rounding can take it a hair below zero
    point, low, high = log_t_bounds(mean, math.sqrt(variance), n, confidence)
    return float(point), float(low), float(high)


def log_ratio_interval(subject: Array, baseline: Array, confidence: float = CONFIDENCE) -> tuple[Array, Array, Array]:
    """(ratio, low, high) of geometric means, subject ÷ baseline: Welch's t interval on the mean logs.

    Last axes hold each arm's independent values (their lengths may differ); leading axes broadcast.
    """
    from scipy import stats as sps  # on first use, as in t_quantile

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


def geometric_mean(values: Sequence[float] | Array) -> float:
    """exp(mean(ln x)) of positive values: the point value when there are too few for an interval."""
    return float(np.exp(np.log(np.asarray(values, dtype=np.float64)).mean()))


def olympic_mean(values: Sequence[float]) -> float:
    """MLPerf training's olympic mean: drop the fastest and the slowest run, average the rest (>= 5 runs)."""
    if len(values) < OLYMPIC_MIN_RUNS:
        raise ValueError(f"the olympic mean needs at least {OLYMPIC_MIN_RUNS} runs, got {len(values)}")
    ordered = sorted(float(v) for v in values)
    return float(np.mean(ordered[1:-1]))
