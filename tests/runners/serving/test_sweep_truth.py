"""An automatic sweep against the simulated endpoint stops where the law says it must: the knee is checked.

The law (4 slots, TTFT 200 ms and 7 gaps of 20 ms, lognormal sigma 0.1) completes ~11.7 requests/s. The sweep
offers 2.5, 7.5 and 22.5 requests/s (start 2.5, ×3) with a TTFT p99 objective of 700 ms. The law's prediction
for each level is simulated here from the very arrival schedule the runner sends (same seed) with fresh service
draws, 400 times: the test first checks that the prediction is decisive (a level passes or fails in at least
99% of the simulations), then that the measured sweep passes the levels the law passes and stops at the level
the law fails, naming the objective: its knee is where the law puts it.
"""

from __future__ import annotations

import json

import numpy as np

from protocol.percentiles import NUMPY_METHOD, quantile
from runners import stats
from runners.cli import main
from runners.serving.loadgen import arrivals
from runners.serving.simulated import Delay, Law, queue_ttft_ms
from tests.runners.serving.test_cli import DEPLOYMENT

LAW = Law(Delay(200.0, 0.1), Delay(20.0, 0.1), capacity=4, seed=11)
TOKENS, OBJECTIVE_MS, SEED = 8, 700.0, 1234
RATES, DURATION_S, MIN_REQUESTS = (2.5, 7.5, 22.5), 3.0, 10


def _count(rate: float) -> int:
    return max(MIN_REQUESTS, int(np.ceil(rate * DURATION_S)))


def _predicted_p99(rate: float, index: int, trials: int = 400) -> np.ndarray:
    """TTFT p99 (ms) of the level under the law, over `trials` service draws, on the runner's own schedule."""
    count = _count(rate)
    schedule = arrivals(rate, count, SEED + index) * 1e3
    method = NUMPY_METHOD[stats.PERCENTILE_METHOD]
    return np.asarray(
        [quantile(queue_ttft_ms(LAW, rate, TOKENS, count, t, schedule), 0.99, method) for t in range(trials)]
    )


def test_the_automatic_sweep_stops_at_the_level_where_the_law_fails_the_objective(endpoint, tmp_path):
    fails = [float(np.mean(_predicted_p99(rate, i) > OBJECTIVE_MS)) for i, rate in enumerate(RATES)]
    assert fails[0] < 0.01 and fails[1] < 0.01 and fails[2] > 0.99, fails  # the law is decisive at each level
    url = endpoint("--ttft-ms", "200", "--ttft-sigma", "0.1", "--itl-ms", "20", "--itl-sigma", "0.1",
                   "--capacity", "4", "--seed", str(LAW.seed))  # fmt: skip
    args = ["run", "serving", "--endpoint", url, "--model", "simulated", "--api", "completions",
            "--input-tokens", "16", "--output-tokens", str(TOKENS), "--auto", "--auto-start", str(RATES[0]),
            "--auto-factor", "3", "--ttft-slo-ms", str(OBJECTIVE_MS), "--duration", str(DURATION_S),
            "--min-requests", str(MIN_REQUESTS), "--seed", str(SEED), "--out", str(tmp_path)]  # fmt: skip
    assert main([*args, *DEPLOYMENT]) == 0
    docs = sorted(
        (json.loads(p.read_text()) for p in tmp_path.iterdir()), key=lambda d: d["scenario"]["sweep"]["index"]
    )
    assert [d["scenario"]["target_qps"] for d in docs] == list(RATES)
    assert [d["metrics"]["requests"]["sent"] for d in docs] == [_count(r) for r in RATES]
    stop = docs[-1]["scenario"]["sweep"]["stop_reason"]
    assert stop.startswith("ttft_ms p99 objective failed"), stop
    assert all(d["scenario"]["sweep"].get("stop_reason") is None for d in docs[:-1])  # the knee: 7.5 req/s
