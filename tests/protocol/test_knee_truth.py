"""The knee walk against known truth (STYLE.md habit 16): seeded sweeps whose true knee is set by a latency law,
each level measured from a finite number of requests, some too few to state the objective's percentile.

DECISIONS.md, Inference: the knee is the highest load measured before an objective failed, and a level too short
to state an objective's percentile neither holds nor fails: the walk passes it. So the knee the walk must find is
the highest level at or below the true knee whose sample states the percentile. The law (tests/protocol/
serving_law.py): the population's TTFT p90 at concurrency c is 80 × (1 + c/4) ms; the objective, p90 ≤ 600 ms,
lies between concurrency 16 (400 ms) and 32 (720 ms), so the true knee is 16. Each request's TTFT is lognormal
(σ = 0.5) around that p90; a level with fewer than 64 requests states no p90 (protocol/rules.py), as the importers
leave it out.
"""

from __future__ import annotations

import math

import numpy as np

from protocol import rules, serving, sizing
from protocol.serving.frontier import judge
from tests.protocol.serving_law import sweep_docs

LOADS = (1, 2, 4, 8, 16, 32, 64)
TRUE_KNEE = 16
OBJECTIVE = sizing.LatencyObjective("ttft_ms", "p90", 600.0)
SIGMA = 0.5
Z90 = 1.2815515655446004  # the standard normal's 0.9 quantile
SWEEPS = 400


def _true_p90(c: int) -> float:
    return 80.0 * (1.0 + c / 4.0)


def _measured_sweep(rng: np.random.Generator) -> tuple[list[serving.Level], dict[int, int]]:
    """One sweep: each level's request count drawn from 30 to 400 (so about one level in ten is too short for a
    p90), its p90 computed from that many lognormal TTFTs (linear, as aiperf's), absent below 64 requests."""
    docs = sweep_docs(LOADS, sweep="truth")
    counts = {}
    for doc in docs:
        c = int(doc["scenario"]["concurrency"])
        n = int(rng.integers(30, 401))
        counts[c] = n
        median = _true_p90(c) / math.exp(Z90 * SIGMA)
        sample = median * np.exp(SIGMA * rng.standard_normal(n))
        stated = n >= rules.MIN_SAMPLES_FOR_PERCENTILE["p90"]
        doc["metrics"]["ttft_ms"].update(
            {"count": n, "p90": float(np.percentile(sample, 90)) if stated else None, "p95": None, "p99": None}
        )
    return serving.levels(docs), counts


def _expected_knee(counts: dict[int, int]) -> int | None:
    """The highest level at or below the true knee that states a p90: what the walk must find."""
    judged = [c for c in LOADS if c <= TRUE_KNEE and counts[c] >= rules.MIN_SAMPLES_FOR_PERCENTILE["p90"]]
    return max(judged, default=None)


def test_the_walk_finds_the_true_knee_past_short_levels_at_least_97_percent_of_the_time() -> None:
    rng = np.random.default_rng(20261202)
    target = serving.Target(objectives=(OBJECTIVE,))
    right = short_below_knee = 0
    for _ in range(SWEEPS):
        levels, counts = _measured_sweep(rng)
        found = serving.knee(levels, target)
        expected = _expected_knee(counts)
        got = int(found.level.load) if found.level else None
        right += got == expected
        if any(counts[c] < 64 for c in LOADS if c < TRUE_KNEE):
            short_below_knee += 1
            # A passed level is named with its reason: the walk says so.
            assert found.passed and "not stated" in found.words
    # The margins are -33% and +20% of the objective at 16 and 32. A p90 from n lognormal values (σ 0.5) has a
    # relative spread of about 0.5 × √(0.09 ÷ n) ÷ 0.1755: 11% at 64 requests, so 32 is judged wrongly about 3% of
    # the time at the fewest requests and far less on average; 97% leaves room for it.
    assert right / SWEEPS >= 0.97, f"{right} of {SWEEPS}"  # 394 of 400 with this seed
    # The draw puts a short level below the knee in a good share of the sweeps: the old walk, which stopped at the
    # first short level, would have answered these with a lower knee or "not enough evidence".
    assert short_below_knee >= 0.2 * SWEEPS


def test_a_walk_that_stopped_at_short_levels_would_fail_this_truth() -> None:
    """The same sweeps read as the walk read them before (stopping at the first level it cannot judge): it misses the
    true knee whenever a short level lies below it, so the rate above is not one any walk would reach."""
    rng = np.random.default_rng(20261202)
    target = serving.Target(objectives=(OBJECTIVE,))
    stopped_right = 0
    for _ in range(SWEEPS):
        levels, counts = _measured_sweep(rng)
        last = None
        for lv in levels:
            verdict, _ = judge(lv, target)
            if verdict != "meets":
                break
            last = int(lv.load)
        stopped_right += last == _expected_knee(counts)
    assert stopped_right / SWEEPS < 0.85  # 273 of 400 with this seed
