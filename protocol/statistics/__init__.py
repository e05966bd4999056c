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

Where each part lives: intervals.py (the t interval on logs, from values or from sums, and Welch's for ratios),
estimates.py (a run's headline estimate and the estimate of repeated runs), ratios.py (subject ÷ baseline and
its verdict), caveats.py (what a reader must know), methods.py (the methods in words, stored with comparisons).
"""

from __future__ import annotations

from ..percentiles import NUMPY_METHOD
from .caveats import Caveat, caveats
from .estimates import (
    RESAMPLES,
    THROUGHPUT_AGREEMENT,
    UNIT_NOUN,
    Estimate,
    aggregate,
    declared_method,
    from_values,
    headline_estimate,
    raw_series,
    repetition_statistic,
    rounded,
    throughput_per_repetition,
)
from .intervals import (
    CONFIDENCE,
    MIN_VALUES,
    OLYMPIC_MIN_RUNS,
    Array,
    geometric_mean,
    log_ratio_interval,
    log_sums_interval,
    log_t_bounds,
    log_t_interval,
    olympic_mean,
    t_quantile,
)
from .methods import METHODS
from .ratios import Ratio, ratio

__all__ = [
    "CONFIDENCE",
    "METHODS",
    "MIN_VALUES",
    "NUMPY_METHOD",  # the percentile methods repetition_statistic computes, by their declared names
    "OLYMPIC_MIN_RUNS",
    "RESAMPLES",
    "THROUGHPUT_AGREEMENT",
    "UNIT_NOUN",
    "Array",
    "Caveat",
    "Estimate",
    "Ratio",
    "aggregate",
    "caveats",
    "declared_method",
    "from_values",
    "geometric_mean",
    "headline_estimate",
    "log_ratio_interval",
    "log_sums_interval",
    "log_t_bounds",
    "log_t_interval",
    "olympic_mean",
    "ratio",
    "raw_series",
    "repetition_statistic",
    "rounded",
    "t_quantile",
    "throughput_per_repetition",
]
