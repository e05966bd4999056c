"""Statistics the runners report: percentile distributions and the steady-state verdict.

Percentiles are nearest-rank (numpy's `inverted_cdf`: the ceil(n*p)-th smallest sample), computed by
protocol.percentiles.quantile like every percentile in benchreg. MLPerf LoadGen takes the sample at 0-based
index floor(n*p) instead: the same sample unless n*p is whole, where LoadGen's is the next one up
(docs/measurement.md, section 6). A tail percentile is omitted, never estimated, when the sample count is
below the protocol's minimum (`protocol.rules.MIN_SAMPLES_FOR_PERCENTILE`).

The steady-state verdict follows Kalibera & Jones ("Rigorous benchmarking in reasonable time", 2013):
look at the series in time order, not only at its summary. The series is cut into consecutive blocks;
a run is steady when the block medians agree (their spread is small, or a Kruskal-Wallis test finds the
blocks indistinguishable: noise alone spreads the medians of short blocks), when they show no monotone
trend that is both statistically and practically significant (Mann-Kendall z on the block medians, and
the relative change of the Theil-Sen line across the window), when the dispersion (IQR / median) is
bounded, and when there is no intermittent slow path: a second mode of iterations far above the median
(a bimodal series has steady blocks and a steady median, yet its tail measures another code path).
The rates are checked on seeded series in tests/runners/test_stats.py (docs/measurement.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from protocol import rules
from protocol.percentiles import NUMPY_METHOD, quantile

PERCENTILE_METHOD = "nearest-rank"
_NUMPY_METHOD: Final = NUMPY_METHOD[PERCENTILE_METHOD]  # inverted_cdf: the smallest x with F(x) >= q


def _round(value: float) -> float:
    # Six significant digits: far below timer resolution and monotone, so rounding keeps p50 <= p90 <= ...
    return float(f"{value:.6g}")


def distribution(values: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """A protocol distribution (count, method, unit, min, mean, stdev, percentiles, max) of values in ms.

    Percentiles whose minimum sample count the protocol does not meet are left out.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("a distribution needs at least one sample")
    out: dict[str, Any] = {
        "count": int(data.size),
        "method": PERCENTILE_METHOD,
        "unit": "ms",
        "min": _round(float(data.min())),
        "mean": _round(float(data.mean())),
    }
    if data.size > 1:
        out["stdev"] = _round(float(data.std(ddof=1)))
    for key in (k for k in rules.PERCENTILES if rules.percentile_allowed(k, int(data.size))):
        out[key] = _round(float(quantile(data, rules.PERCENTILES[key] / 100.0, _NUMPY_METHOD)))
    out["max"] = _round(float(data.max()))
    # The mean is rounded on its own; clamp so rounding can never put it outside [min, max].
    out["mean"] = min(max(out["mean"], out["min"]), out["max"])
    return out


@dataclass(frozen=True)
class SteadyCriteria:
    """Thresholds of the steady-state verdict (docs/measurement.md explains each choice)."""

    blocks: int = 10  # blocks the measured series is cut into, in time order
    block_spread_max: float = 0.05  # (max - min) of block medians over the overall median
    trend_z_max: float = 2.5  # |Mann-Kendall z| on the block medians above which a trend is real
    trend_change_max: float = 0.05  # ... and the Theil-Sen change across the window that makes it matter
    iqr_over_median_max: float = 0.5  # dispersion above which the median itself is not a stable summary
    min_block_size: int = 5  # fewer samples per block and block medians mean nothing
    block_test_alpha: float = 0.01  # Kruskal-Wallis p-value below which block differences are not noise
    slow_factor: float = 2.0  # an iteration this many times the median is on a slow path ...
    slow_share_max: float | None = 0.03  # ... and more than this share of them is a slow path (None: off)


@dataclass(frozen=True)
class SteadyVerdict:
    """The outcome of a steady-state assessment, in the protocol's `conditions.steady_state` terms."""

    reached: bool
    block_spread: float | None
    trend_statistic: float | None
    iqr_over_median: float | None
    reasons: tuple[str, ...] = field(default=())

    def as_document(self, extra_reasons: Sequence[str] = ()) -> dict[str, Any]:
        """The `conditions.steady_state` section; extra reasons (e.g. an unsettled warm-up) unset reached."""
        reasons = [*self.reasons, *extra_reasons]
        out: dict[str, Any] = {
            "method": "block-medians",
            "reached": self.reached and not extra_reasons,
            "block_spread": self.block_spread,
            "trend_statistic": self.trend_statistic,
            "iqr_over_median": self.iqr_over_median,
        }
        if reasons:
            out["reasons"] = reasons
        return out


def block_medians(values: np.ndarray, blocks: int) -> np.ndarray:
    """Medians of `blocks` consecutive, near-equal blocks of the series (time order kept)."""
    return np.array([float(np.median(b)) for b in np.array_split(values, blocks)])


def mann_kendall_z(series: np.ndarray) -> float:
    """Mann-Kendall trend statistic: Kendall's tau against time, expressed as a z score (no tie correction)."""
    n = series.size
    if n < 3:
        return 0.0
    s = sum(float(np.sign(series[j] - series[i])) for i in range(n - 1) for j in range(i + 1, n))
    variance = n * (n - 1) * (2 * n + 5) / 18.0
    # Continuity correction, as in the textbook test.
    return 0.0 if s == 0 else (s - math.copysign(1.0, s)) / math.sqrt(variance)


def _relative_change(medians: np.ndarray, overall: float) -> float:
    from scipy import stats as sps  # on first use: importing scipy.stats costs ~1 s of a process's start

    slope = float(sps.theilslopes(medians).slope)
    return abs(slope * (medians.size - 1)) / overall if overall > 0 else 0.0


def assess(values: Sequence[float] | np.ndarray, criteria: SteadyCriteria = SteadyCriteria()) -> SteadyVerdict:
    """Steady-state verdict on a series of per-iteration times in time order."""
    data = np.asarray(values, dtype=np.float64)
    blocks = min(criteria.blocks, data.size // criteria.min_block_size)
    if blocks < 3:
        too_few = f"too few samples ({data.size}) to assess steady state in blocks"
        return SteadyVerdict(False, None, None, None, (too_few,))
    overall = float(np.median(data))
    medians = block_medians(data, blocks)
    spread = float((medians.max() - medians.min()) / overall) if overall > 0 else 0.0
    z = mann_kendall_z(medians)
    change = _relative_change(medians, overall)
    iqr = _iqr_over_median(data, overall)
    candidates = (
        _spread_reason(data, blocks, spread, criteria),
        _drift_reason(z, change, criteria),
        _dispersion_reason(iqr, criteria),
        slow_path(data, overall, criteria),
    )
    reasons = [reason for reason in candidates if reason is not None]
    return SteadyVerdict(not reasons, round(spread, 4), round(z, 3), round(iqr, 4), tuple(reasons))


def _iqr_over_median(data: np.ndarray, overall: float) -> float:
    q75, q25 = quantile(data, 0.75, _NUMPY_METHOD), quantile(data, 0.25, _NUMPY_METHOD)
    return float((q75 - q25) / overall) if overall > 0 else 0.0


def _spread_reason(data: np.ndarray, blocks: int, spread: float, criteria: SteadyCriteria) -> str | None:
    if spread > criteria.block_spread_max:
        p = _blocks_differ(data, blocks)
        if p < criteria.block_test_alpha:
            return (
                f"block medians disagree: spread {spread:.3f} > {criteria.block_spread_max} (Kruskal-Wallis p {p:.2g})"
            )
    return None


def _drift_reason(z: float, change: float, criteria: SteadyCriteria) -> str | None:
    if abs(z) > criteria.trend_z_max and change > criteria.trend_change_max:
        return (
            f"drift: Mann-Kendall z {z:.2f} (limit {criteria.trend_z_max}) with a "
            f"{change:.1%} change across the window (limit {criteria.trend_change_max:.0%})"
        )
    return None


def _dispersion_reason(iqr: float, criteria: SteadyCriteria) -> str | None:
    if iqr > criteria.iqr_over_median_max:
        return f"dispersion: IQR/median {iqr:.3f} > {criteria.iqr_over_median_max}"
    return None


def _blocks_differ(data: np.ndarray, blocks: int) -> float:
    """Kruskal-Wallis p-value that the consecutive blocks come from one distribution."""
    from scipy import stats as sps  # on first use, as in _relative_change

    parts = np.array_split(data, blocks)
    if all(np.ptp(p) == 0 for p in parts) and np.ptp(data) == 0:
        return 1.0
    return float(sps.kruskal(*parts).pvalue)


def slow_path(data: np.ndarray, overall: float, criteria: SteadyCriteria) -> str | None:
    """The reason naming an intermittent slow path, or None: too many iterations far above the median."""
    if criteria.slow_share_max is None or overall <= 0:
        return None
    slow = data[data > criteria.slow_factor * overall]
    share = slow.size / data.size
    if share <= criteria.slow_share_max:
        return None
    return (
        f"slow path: {share:.1%} of iterations took more than {criteria.slow_factor:g}× the median "
        f"(about {float(np.median(slow)) / overall:.1f}× it; limit {criteria.slow_share_max:.0%}), so the "
        "median and the tail measure different behaviours"
    )


def medians_agree(medians: Sequence[float], tolerance: float) -> bool:
    """Whether consecutive block medians agree within `tolerance` of their median (the warm-up test)."""
    arr = np.asarray(medians, dtype=np.float64)
    centre = float(np.median(arr))
    return centre > 0 and float(arr.max() - arr.min()) / centre <= tolerance
