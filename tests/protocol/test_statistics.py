"""Statistics against known distributions, caveats, derived metrics and capacity sizing."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from protocol import comparability as cmp
from protocol import sizing
from protocol import statistics as stats

EXAMPLES = Path(__file__).resolve().parents[2] / "protocol" / "examples"
Doc = dict[str, Any]


def example(name: str) -> Doc:
    return json.loads((EXAMPLES / f"{name}.json").read_text())


def server() -> Doc:
    return example("inference-server-h100-bf16")


def with_latency_samples(doc: Doc, reps: list[np.ndarray], primary: str = "latency_ms.p50") -> Doc:
    """doc whose latency_ms comes from raw repetitions (summary made consistent) and is the headline."""
    out = copy.deepcopy(doc)
    pooled = np.concatenate(reps)
    out["samples"] = {"latency_ms": {"unit": "ms", "repetitions": [r.tolist() for r in reps]}}
    qs = {
        k: float(np.quantile(pooled, q, method="inverted_cdf"))
        for k, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))
    }
    out["metrics"]["latency_ms"] = {
        "count": len(pooled),
        "method": "nearest-rank",
        "unit": "ms",
        "min": float(pooled.min()),
        "mean": float(pooled.mean()),
        "max": float(pooled.max()),
        **qs,
    }
    out["metrics"]["primary"] = primary
    return out


def with_throughput_reps(doc: Doc, values: list[float]) -> Doc:
    out = copy.deepcopy(doc)
    out["samples"] = {
        "throughput": {"unit": out["metrics"]["throughput"]["unit"], "repetitions": [[v] for v in values]}
    }
    return out


# ----------------------------------------------------------------------------------- known distributions
# Coverage and false-alarm rates across many scenarios are in test_calibration.py; these are sentences.


def gmean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def test_a_real_twenty_percent_difference_is_separated_and_its_interval_covers_the_truth() -> None:
    rng = np.random.default_rng(3)
    trials, hits, separated = 120, 0, 0
    for _ in range(trials):
        a = with_latency_samples(server(), [rng.lognormal(math.log(10.0), 0.5, 400) for _ in range(5)])
        b = with_latency_samples(server(), [rng.lognormal(math.log(12.0), 0.5, 400) for _ in range(5)])
        r = stats.ratio(stats.headline_estimate(b), stats.headline_estimate(a))
        assert r.ci_low is not None and r.ci_high is not None and r.evidence is None
        hits += r.ci_low <= 1.2 <= r.ci_high
        separated += r.outcome == "worse"  # latency: a higher ratio is worse
    assert 0.88 <= hits / trials <= 0.995
    assert separated / trials >= 0.9


def test_the_same_distribution_is_rarely_called_different() -> None:
    rng = np.random.default_rng(4)
    trials, false_alarms = 120, 0
    for _ in range(trials):
        a = with_latency_samples(server(), [rng.normal(50.0, 5.0, 200) for _ in range(3)])
        b = with_latency_samples(server(), [rng.normal(50.0, 5.0, 200) for _ in range(3)])
        r = stats.ratio(stats.headline_estimate(b), stats.headline_estimate(a))
        false_alarms += bool(r.distinguishable)
    assert false_alarms / trials <= 0.12


def test_a_tail_percentile_is_estimated_per_repetition_when_each_has_enough_samples() -> None:
    rng = np.random.default_rng(5)
    reps = [rng.gamma(2.0, 3.0, 700) for _ in range(3)]
    doc = with_latency_samples(server(), reps, primary="latency_ms.p99")
    est = stats.headline_estimate(doc)
    assert est.value == pytest.approx(gmean([float(np.quantile(r, 0.99, method="inverted_cdf")) for r in reps]))
    assert est.source == "raw samples" and est.ci_low is not None and est.ci_low <= est.value <= est.ci_high
    assert "per-repetition p99 values" in est.method and "Student t" in est.interval_method


def test_a_tail_percentile_on_short_repetitions_is_pooled_and_has_no_interval() -> None:
    rng = np.random.default_rng(5)
    reps = [rng.gamma(2.0, 3.0, 400) for _ in range(3)]
    doc = with_latency_samples(server(), reps, primary="latency_ms.p99")
    est = stats.headline_estimate(doc)
    assert est.value == pytest.approx(float(np.quantile(np.concatenate(reps), 0.99, method="inverted_cdf")))
    assert est.ci_low is None and est.evidence == (
        "a per-repetition p99 needs 662 samples in every repetition; the shortest has 400"
    )
    assert "not-enough-evidence" in [c.code for c in stats.caveats(doc, est)]


def test_a_median_headline_is_the_geometric_mean_of_per_repetition_medians() -> None:
    reps = [np.array([1.0, 2.0, 3.0]), np.array([10.0, 11.0, 12.0, 13.0, 14.0]), np.array([5.0, 6.0, 7.0])]
    doc = with_latency_samples(server(), reps)
    est = stats.headline_estimate(doc)
    assert est.value == pytest.approx(gmean([2.0, 12.0, 6.0]))
    assert est.method.startswith("geometric mean of per-repetition medians")
    assert est.reported == doc["metrics"]["latency_ms"]["p50"] and est.independent_values == 3


def test_olympic_mean_drops_the_fastest_and_slowest_run() -> None:
    assert stats.olympic_mean([100.0, 2.0, 3.0, 4.0, 1.0]) == 3.0
    assert stats.olympic_mean([5, 6, 7, 8, 9, 10, 1000]) == 8.0
    with pytest.raises(ValueError, match="at least 5"):
        stats.olympic_mean([1.0, 2.0, 3.0, 4.0])


def _ttq(seconds: float) -> Doc:
    doc = example("training-h100-bf16")
    doc["scenario"] = {"kind": "time-to-quality", "quality_target": {"metric": "accuracy", "value": 0.9}}
    doc["metrics"]["time_to_quality"] = {"seconds": seconds}
    doc["metrics"]["primary"] = "time_to_quality.seconds"
    return doc


def test_time_to_quality_runs_aggregate_per_run_with_the_olympic_mean_stated() -> None:
    times = [610.0, 600.0, 9000.0, 590.0, 100.0]
    est = stats.aggregate([_ttq(s) for s in times])
    assert est.value == pytest.approx(gmean(times)) and "MLPerf olympic mean 600 s" in est.method
    assert est.lower_is_better and est.ci_low is not None and est.value_unit == "run"
    few = stats.aggregate([_ttq(s) for s in (600.0, 700.0)])
    assert few.ci_low is None and few.evidence is not None and "at least 3" in few.evidence


def test_a_summary_alone_gives_no_interval_and_says_so() -> None:
    doc = server()
    doc["metrics"]["latency_ms"]["stdev"] = 80.0  # a within-run stdev says nothing about run-to-run variation
    doc["metrics"]["primary"] = "latency_ms.mean"
    est = stats.headline_estimate(doc)
    assert est.value == 844.896 and est.ci_low is None and est.source == "summary"
    assert est.evidence is not None and est.evidence.startswith("one summary value without raw samples")
    found = {c.code: c.message for c in stats.caveats(server(), stats.headline_estimate(server()))}
    assert found["no-raw-samples"].startswith("no raw samples for throughput: no interval")
    assert "not-enough-evidence" not in found  # said once, not twice


def test_raw_samples_are_preferred_and_ignored_when_in_another_unit() -> None:
    values = [1250.0, 1262.0, 1270.0, 1255.0, 1266.0]
    doc = with_throughput_reps(server(), values)
    est = stats.headline_estimate(doc)
    assert est.source == "raw samples" and est.value == pytest.approx(gmean(values)) and est.reported == 1260.8
    doc["samples"]["throughput"]["unit"] = "samples/s"
    assert stats.headline_estimate(doc).source == "summary"


def test_estimates_are_reproducible_and_independent_of_run_order() -> None:
    rng = np.random.default_rng(6)
    a = with_latency_samples(server(), [rng.normal(10, 1, 300) for _ in range(2)])
    b = with_latency_samples(server(), [rng.normal(11, 1, 300) for _ in range(2)])
    one, two = stats.aggregate([a, b]), stats.aggregate([b, a])
    assert stats.headline_estimate(a).as_dict() == stats.headline_estimate(a).as_dict()
    assert one.as_dict() == two.as_dict() and "4 repetitions of 2 runs pooled" in one.method


def test_too_few_raw_samples_for_a_tail_percentile_give_no_value_and_a_caveat() -> None:
    doc = with_latency_samples(server(), [np.linspace(1, 2, 100)], primary="latency_ms.p99")
    est = stats.headline_estimate(doc)
    assert est.value is None and est.ci_low is None
    assert "too-few-samples-for-percentile" in [c.code for c in stats.caveats(doc, est)]


def test_conditions_become_caveats_in_words() -> None:
    doc = server()
    doc["conditions"]["steady_state"].update(reached=False, reasons=["median drifted 8% over the window"])
    doc["conditions"]["thermal"].update(throttled=True, throttle_reasons=["hw_slowdown"])
    doc["conditions"]["isolation"] = "shared"
    doc["conditions"]["validity"] = {"valid": False, "checks": {"min_duration": False, "early_stopping": True}}
    found = {c.code: c.message for c in stats.caveats(doc)}
    assert "median drifted 8%" in found["steady-state-not-reached"]
    assert "hw_slowdown" in found["thermal-throttling"] and "shared-machine" in found
    assert found["invalid-result"].endswith("min_duration")


def test_a_training_run_without_p99_is_told_why() -> None:
    doc = example("training-h100-bf16")
    doc["metrics"]["primary"] = "step_time_ms.p50"
    found = {c.code: c.message for c in stats.caveats(doc)}
    assert found["tail-percentile-absent"] == "step_time_ms has no p99: 480 samples are too few to claim them"


def test_offline_throughput_gets_an_interval_from_raw_batch_times_when_they_agree() -> None:
    doc = example("inference-offline-cpu-int8")
    rng = np.random.default_rng(8)
    reps = [rng.normal(0.88, 0.05, 3788) for _ in range(3)]  # ms per batch of 32: ~36,364 samples/s
    doc["samples"] = {"latency_ms": {"unit": "ms", "repetitions": [r.tolist() for r in reps]}}
    est = stats.headline_estimate(doc)
    expected = gmean([32000.0 / r.mean() for r in reps])
    assert est.source == "raw samples" and est.value == pytest.approx(expected)
    assert est.ci_low is not None and est.ci_low < est.value < est.ci_high
    assert "batch_size × 1000 ÷ mean latency_ms" in est.method
    doc["metrics"]["throughput"]["value"] = 50000.0  # times no longer explain the reported number
    assert stats.headline_estimate(doc).source == "summary"


def test_fewer_than_three_repetitions_are_not_enough_evidence() -> None:
    doc = with_throughput_reps(server(), [1250.0, 1262.0])
    found = {c.code: c.message for c in stats.caveats(doc)}
    assert found["not-enough-evidence"] == (
        "no calibrated interval: 2 independent values (repetitions); a calibrated interval needs at least 3"
    )
    assert "not-enough-evidence" not in [c.code for c in stats.caveats(with_throughput_reps(server(), [1.0, 2, 3]))]


def test_rounding_keeps_six_significant_figures_and_drops_non_finite() -> None:
    assert stats.rounded(1234.56789) == 1234.57 and stats.rounded(0.000123456789) == 0.000123457
    assert stats.rounded(float("nan")) is None and stats.rounded(None) is None and stats.rounded(0.0) == 0.0


# ------------------------------------------------------------------------------------------ derived metrics


def test_energy_per_output_comes_from_measured_energy_only() -> None:
    derived = sizing.energy_per_output(server())
    assert derived.value == pytest.approx(486.0 / 1260.8) and derived.unit == "J/token"
    assert derived.as_dict()["derived"] is True and "measured average power" in derived.formula
    no_meter = example("inference-offline-cpu-int8")
    no_meter["conditions"]["power"]["limit_w"] = 350
    missing = sizing.energy_per_output(no_meter)
    assert missing.value is None and "TDP is not a measurement" in (missing.reason or "")


def test_energy_from_joules_assumes_they_cover_the_window() -> None:
    doc = server()
    doc["metrics"]["energy"] = {"joules": 58320.0, "source": "pdu"}
    derived = sizing.energy_per_output(doc)
    assert derived.value == pytest.approx(58320.0 / (1260.8 * 120.0))
    assert derived.assumption == "the measured energy covers the measurement window"


def test_cost_per_million_outputs_states_the_price_as_an_assumption() -> None:
    doc = example("inference-offline-cpu-int8")
    doc["metrics"]["throughput"]["value"] = 1000.0
    derived = sizing.cost_per_million_outputs(doc, 3.6, "EUR")
    assert derived.value == pytest.approx(1.0) and derived.unit == "EUR per million samples"
    assert "3.6 EUR per hour" in (derived.assumption or "") and "as supplied by the user" in (derived.assumption or "")
    assert sizing.cost_per_million_outputs(doc, None, "EUR").value is None


# ------------------------------------------------------------------------------------------------- sizing

TTFT = {"metric": "ttft_ms", "percentile": "p99", "max_ms": 500.0}


def test_replicas_come_from_goodput_when_the_latency_met_the_objective() -> None:
    result = sizing.replicas_needed(server(), 100.0, "requests/s", TTFT)
    assert result.replicas == 6 and result.rate_metric == "goodput" and result.per_replica_rate == 19.1
    assert "scales linearly" in result.assumption and "headroom 0% (none added)" in result.assumption
    padded = sizing.replicas_needed(server(), 100.0, "requests/s", [TTFT], headroom=0.25)
    assert padded.replicas == math.ceil(125.0 / 19.1)


def test_sizing_refuses_when_the_measured_latency_misses_the_objective() -> None:
    result = sizing.replicas_needed(server(), 100.0, "requests/s", {**TTFT, "max_ms": 150.0})
    assert result.replicas is None and "177.157 ms, above the objective of 150 ms" in (result.reason or "")


def test_offline_runs_size_by_throughput_but_cannot_show_a_latency_objective() -> None:
    offline = example("inference-offline-cpu-int8")
    ok = sizing.replicas_needed(offline, 100000.0, "samples/s")
    assert ok.replicas == 3 and ok.rate_metric == "throughput"
    refused = sizing.replicas_needed(offline, 100000.0, "samples/s", TTFT)
    assert refused.replicas is None and "offline run measures no latency" in (refused.reason or "")


def test_sizing_refuses_training_runs_and_unmeasured_units() -> None:
    assert sizing.replicas_needed(example("training-h100-bf16"), 10.0, "samples/s").replicas is None
    result = sizing.replicas_needed(server(), 10.0, "images/s")
    assert result.replicas is None and result.reason == "no measured rate in images/s in this run"
    with pytest.raises(ValueError):
        sizing.replicas_needed(server(), -1.0, "requests/s")


# ---------------------------------------------------------------------------------- compare() with samples


def test_compare_with_raw_samples_gives_distinguishable_better_and_worse() -> None:
    rng = np.random.default_rng(7)
    fast = with_latency_samples(server(), [rng.lognormal(math.log(10), 0.2, 300) for _ in range(3)])
    slow = copy.deepcopy(with_latency_samples(server(), [rng.lognormal(math.log(13), 0.2, 300) for _ in range(3)]))
    slow["system"]["name"], slow["system"]["accelerators"][0]["model"] = "lab-l40s", "L40S"
    result = cmp.compare([fast, slow])
    pair = result["pairwise"][0]
    assert pair["distinguishable"] is True and pair["outcome"] == "worse" and pair["ratio"] > 1.2
    assert "lower is better" in pair["words"] and "95% CI" in pair["words"]
    assert pair["verdict"] == "distinguishable" and pair["statement"].startswith("L40S's median latency is 1.")
    run = result["runs"][0]["headline"]
    assert run["source"] == "raw samples" and run["ci_low"] < run["value"] < run["ci_high"]
    assert not any(c["code"] == "no-raw-samples" for c in result["caveats"])
    json.dumps(result, allow_nan=False)


def test_loadgen_percentiles_take_the_sample_at_floor_n_q_in_checks_and_statistics_alike() -> None:
    from protocol.percentiles import NUMPY_METHOD, quantile

    ten = np.arange(1.0, 11.0)  # n·q = 1.5: LoadGen takes index 1 (2.0); numpy's "higher" would take 3.0
    assert quantile(ten, 0.15, NUMPY_METHOD["loadgen"]) == 2.0
    assert float(stats.repetition_statistic(np.arange(1.0, 101.0), "p99", NUMPY_METHOD["loadgen"])) == 100.0
