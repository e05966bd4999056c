"""Every statistical method a comparison may use, in words.

The keys are stored with each comparison and printed in reports: never rename them.
"""

from __future__ import annotations

from .intervals import CONFIDENCE, MIN_VALUES

METHODS = {
    "confidence": f"{CONFIDENCE:.0%} two-sided intervals",
    "independent_values": "one value of the headline statistic per repetition, from that repetition's raw "
    "samples; a run without raw samples counts as one value",
    "estimate": "geometric mean of the independent values; interval: Student t on their logarithms "
    "(k - 1 degrees of freedom)",
    "tail_percentile": "a tail percentile is computed per repetition (each must meet the protocol's sample "
    "minimum); otherwise the pooled percentile is shown without an interval",
    "repetitions": "runs repeating one configuration contribute all their repetitions (raw samples) or, "
    "without raw samples, one headline value each; one configuration (an arm) is what the axis compares plus the "
    "software stack and settings, whatever the machine's name: runs whose settings differ are never pooled",
    "derived_results": "a result derived from another run by the publisher's rule (MLPerf's inferred results) "
    "is shown at face value but counts as no independent value, so it never forms a verdict",
    "not_enough_evidence": f"fewer than {MIN_VALUES} independent values: a point value, no interval and no verdict",
    "time_to_quality": "geometric mean of the runs' times with a t interval on logs; MLPerf's olympic mean "
    "(fastest and slowest of >= 5 runs dropped) is stated alongside",
    "ratio": "subject ÷ baseline; Welch t interval on the difference of mean logarithms; with more than one "
    "comparison against the baseline the intervals are Bonferroni-adjusted (simultaneous 95%)",
    "distinguishable": "a difference is distinguishable from noise when the ratio's interval excludes 1.0",
    "calibration": "checked by a seeded simulation (docs/statistics.md): coverage 93-97% at 3, 5 and 10 "
    "repetitions; equal configurations called distinguishable in at most 5% of cases",
}
