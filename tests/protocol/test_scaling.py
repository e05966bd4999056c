"""Scaling efficiency against a hidden scaling law: step times generated from known compute and communication times
per device count, with log-normal run-to-run noise; the efficiency the plan's documents give must be the law's, and
its 95% interval must cover the law's value about 95% of the time (seeded, so the rate is the same on every run)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import protocol
from protocol import scaling
from tests.protocol.test_protocol_versions import put

RUN = json.loads((Path(__file__).parent / "data" / "distributed_training_ddp_2.json").read_text())
COMPUTE_MS, PER_DOUBLING_MS = 40.0, 6.0  # the hidden law: step = compute + communication growing with log2(n)


def step_ms(n: int, mode: str) -> float:
    """The law: weak scaling keeps each device's work; strong scaling splits a fixed global batch n ways."""
    compute = COMPUTE_MS if mode == "weak" else COMPUTE_MS / n
    return compute + PER_DOUBLING_MS * math.log2(n)


def law_efficiency(n: int, mode: str) -> float:
    return step_ms(1, mode) / step_ms(n, mode) if mode == "weak" else step_ms(1, mode) / (n * step_ms(n, mode))


def plan_documents(
    rng: np.random.Generator, mode: str, devices: list[int], reps: int = 3, noise: float = 0.03
) -> list[dict[str, Any]]:
    """Minimal documents of one plan: each repetition's step times share one log-normal run-to-run factor."""
    docs = []
    for index, n in enumerate(devices):
        per_device = 16 if mode == "weak" else 64 // n
        factors = np.exp(rng.normal(0.0, noise, reps))
        repetitions = [list(step_ms(n, mode) * f * (1 + rng.normal(0, 0.002, 20))) for f in factors]
        layout = {"world_size": n, "scaling": {"id": "plan", "mode": mode, "index": index, "devices": devices}}
        docs.append(
            {
                "workload": {"shape": {"batch_size": per_device * n}},
                "scenario": {"distributed": layout},
                "samples": {"step_time_ms": {"unit": "ms", "repetitions": repetitions}},
            }
        )
    return docs


@pytest.mark.parametrize("mode", ["weak", "strong"])
def test_efficiency_is_the_hidden_laws(mode: str) -> None:
    rng = np.random.default_rng(43)
    (plan,) = scaling.points(plan_documents(rng, mode, [1, 2, 4, 8], noise=0.005))
    rows = scaling.efficiency(plan)
    assert [r.devices for r in rows] == [1, 2, 4, 8] and plan.mode == mode
    for r in rows[1:]:
        assert r.efficiency == pytest.approx(law_efficiency(r.devices, mode), rel=0.02)
        assert r.low is not None and r.high is not None and r.low <= r.efficiency <= r.high
    assert (rows[0].efficiency, rows[0].low, rows[0].evidence) == (1.0, None, "the reference: 1 by definition")


@pytest.mark.slow
def test_the_interval_covers_the_laws_efficiency_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(2026)
    trials, covered = 400, 0
    for _ in range(trials):
        (plan,) = scaling.points(plan_documents(rng, "weak", [1, 4], noise=0.05))
        row = scaling.efficiency(plan)[1]
        assert row.low is not None and row.high is not None
        covered += row.low <= law_efficiency(4, "weak") <= row.high
    assert 0.92 <= covered / trials <= 0.98


def test_two_runs_of_one_plan_pool_their_repetitions() -> None:
    rng = np.random.default_rng(7)
    docs = plan_documents(rng, "weak", [1, 2]) + plan_documents(rng, "weak", [1, 2])
    (plan,) = scaling.points(docs)
    assert [(s.devices, s.runs, len(s.values)) for s in plan.sizes] == [(1, 2, 6), (2, 2, 6)]


def test_too_few_values_give_the_point_without_an_interval() -> None:
    rng = np.random.default_rng(8)
    (plan,) = scaling.points(plan_documents(rng, "weak", [1, 2], reps=2))
    row = scaling.efficiency(plan)[1]
    assert row.low is None and row.high is None and "no interval" in row.evidence
    assert "no interval" in scaling.table(plan, scaling.efficiency(plan))


def test_a_plan_without_its_1_device_runs_is_refused() -> None:
    rng = np.random.default_rng(9)
    docs = plan_documents(rng, "weak", [2, 4])
    for doc in docs:
        doc["scenario"]["distributed"]["scaling"]["devices"] = [2, 4]
    (plan,) = scaling.points(docs)
    with pytest.raises(scaling.ScalingError, match="no 1-device runs"):
        scaling.efficiency(plan)


def test_runs_that_are_not_sizes_of_one_plan_are_refused_with_a_pointer() -> None:
    with pytest.raises(scaling.ScalingError) as caught:
        scaling.points([RUN])
    assert caught.value.pointer == "/0/scenario/distributed/scaling"
    rng = np.random.default_rng(10)
    docs = plan_documents(rng, "weak", [1, 2])
    docs[1]["scenario"]["distributed"]["scaling"]["mode"] = "strong"
    with pytest.raises(scaling.ScalingError, match="is weak scaling, not strong"):
        scaling.points(docs)


def test_a_checked_run_reads_its_repetitions() -> None:
    doc = put(RUN, "/scenario/distributed/scaling", {"id": "p", "mode": "weak", "index": 1, "devices": [1, 2]})
    assert protocol.errors(doc) == []
    values = scaling.throughput_values(doc)
    assert len(values) == len(RUN["samples"]["step_time_ms"]["repetitions"]) == 3
    assert min(values) <= RUN["metrics"]["throughput"]["value"] * 1.05
