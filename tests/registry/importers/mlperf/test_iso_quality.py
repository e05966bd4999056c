"""The iso-quality axis on real MLPerf results: the AMD 8×MI300X fp8 llama2-70b-99 tree kept in
../shared/data/mlperf/ (read there, never copied) beside an NVIDIA 8×H100 fp16 tree authored here in the same
layout (every file below is written by this test, with our own numbers; no published file is copied)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from protocol import comparability
from registry.importers import mlperf

SHARED = Path(
    os.environ.get("BENCHREG_MLPERF_ROUNDS")
    or Path(__file__).resolve().parents[4].parent / "shared" / "data" / "mlperf"
)
AMD = SHARED / "inference_sample1_AMD_v5.1"
SYSTEM = "8xH100-SXM-80GB_TRT"

pytestmark = pytest.mark.skipif(not AMD.is_dir(), reason=f"no AMD MLPerf sample in {SHARED}")

NS = 1_000_000


def _server_records(tokens_per_s: float, samples_per_s: float) -> dict[str, Any]:
    """What LoadGen logs for an LLM Server run (our numbers, in ns as LoadGen writes them)."""
    records: dict[str, Any] = {
        "loadgen_version": "5.1.0 @ 091d51f041",
        "test_datetime": "2025-07-20T08:00:00Z",
        "effective_scenario": "Server",
        "effective_test_mode": "PerformanceOnly",
        "result_validity": "VALID",
        "result_perf_constraints_met": True,
        "result_min_duration_met": True,
        "result_min_queries_met": True,
        "early_stopping_met": True,
        "early_stopping_ttft_result": "Run successful.",
        "early_stopping_tpot_result": "Run successful.",
        "num_errors": 0,
        "result_query_count": 60000,
        "qsl_reported_total_count": 24576,
        "effective_target_qps": 70.0,
        "effective_samples_per_query": 1,
        "effective_target_latency_percentile": 0.99,
        "requested_server_ttft_latency": 2000 * NS,
        "requested_server_tpot_latency": 200 * NS,
        "requested_use_token_latencies": True,
        "result_completed_samples_per_sec": samples_per_s,
        "result_completed_tokens_per_second": tokens_per_s,
        "result_min_latency_ns": 900 * NS,
        "result_max_latency_ns": 150000 * NS,
        "result_mean_latency_ns": 40000 * NS,
        "result_first_token_min_latency_ns": 30 * NS,
        "result_first_token_max_latency_ns": 3000 * NS,
        "result_first_token_mean_latency_ns": 800 * NS,
        "result_time_to_output_token_min": 25 * NS,
        "result_time_to_output_token_max": 3000 * NS,
        "result_time_to_output_token_mean": 130 * NS,
    }
    for pct, lat, ttft, tpot in [
        ("50.00", 35000, 700, 120),
        ("90.00", 70000, 1300, 150),
        ("95.00", 85000, 1450, 160),
        ("97.00", 95000, 1550, 165),
        ("99.00", 120000, 1800, 180),
        ("99.90", 140000, 2400, 260),
    ]:
        records[f"result_{pct}_percentile_latency_ns"] = lat * NS
        records[f"result_first_token_{pct}_percentile_latency_ns"] = ttft * NS
        records[f"result_time_per_output_token_{pct}_percentile_ns"] = tpot * NS
    return records


def _summary(tokens_per_s: float, samples_per_s: float) -> str:
    lines = [
        "=" * 48,
        "MLPerf Results Summary",
        "=" * 48,
        "SUT name : TRTSUT",
        "Scenario : Server",
        "Mode     : PerformanceOnly",
        f"Completed samples per second    : {samples_per_s:.2f}",
        f"Completed tokens per second: {tokens_per_s:.2f}",
        "Result is : VALID",
        "  Performance constraints satisfied : Yes",
        "  Min duration satisfied : Yes",
        "  Min queries satisfied : Yes",
        "  Early stopping satisfied: Yes",
        "",
        "No errors encountered during test.",
    ]
    return "\n".join(lines) + "\n"


def author_nvidia(
    root: Path, benchmark: str = "llama2-70b-99", folder: str = "Server", rouge1: float = 44.2, weights: str = "fp16"
) -> Path:
    """closed/NVIDIA/ with one 8×H100 result, in the layout of the AMD sample (results/…/Scenario/…)."""
    tree = root / "closed" / "NVIDIA"
    (tree / "systems").mkdir(parents=True, exist_ok=True)
    (tree / "systems" / f"{SYSTEM}.json").write_text(
        json.dumps(
            {
                "system_name": "Authored DGX H100",
                "number_of_nodes": 1,
                "submitter": "NVIDIA",
                "division": "closed",
                "status": "available",
                "system_type": "datacenter",
                "accelerators_per_node": 8,
                "accelerator_model_name": "NVIDIA H100-SXM-80GB",
                "accelerator_memory_capacity": "80 GB",
                "accelerator_memory_configuration": "HBM3",
                "accelerator_interconnect": "NVLink",
                "host_processor_model_name": "Intel Xeon Platinum 8480C",
                "host_processors_per_node": 2,
                "operating_system": "Ubuntu 22.04",
                "framework": "TensorRT 10.8, CUDA 12.8",
            }
        )
    )
    result = tree / "results" / SYSTEM / benchmark / folder
    run = result / "performance" / "run_1"
    run.mkdir(parents=True)
    tokens, samples = 21500.5, 70.1
    records = _server_records(tokens, samples)
    if folder == "Offline":
        records = {k: v for k, v in records.items() if "first_token" not in k and "output_token" not in k}
        records.update(effective_scenario="Offline", result_tokens_per_second=tokens, result_samples_per_second=samples)
        records.pop("result_completed_tokens_per_second")
        records.pop("result_completed_samples_per_sec")
    (run / "mlperf_log_detail.txt").write_text(
        "".join(":::MLLOG " + json.dumps({"key": k, "value": v, "time_ms": 1}) + "\n" for k, v in records.items())
    )
    summary = _summary(tokens, samples)
    if folder == "Offline":
        summary = (
            summary.replace("Scenario : Server", "Scenario : Offline")
            .replace(f"Completed samples per second    : {samples:.2f}", f"Samples per second: {samples:.2f}")
            .replace(f"Completed tokens per second: {tokens:.2f}", f"Tokens per second: {tokens:.2f}")
        )
    (run / "mlperf_log_summary.txt").write_text(summary)
    (result / "measurements.json").write_text(
        json.dumps({"weight_data_types": weights, "input_data_types": "int32", "weight_transformations": "none"})
    )
    (result / "user.conf").write_text(f"llama2-70b.{folder}.target_qps = 70\n")
    (result / "accuracy").mkdir()
    (result / "accuracy" / "accuracy.txt").write_text(
        f"Results\n\n{{'rouge1': {rouge1}, 'rouge2': 22.0, 'rougeL': 28.6, 'rougeLsum': 42.0, "
        "'gen_len': 28000000, 'gen_num': 24576, 'gen_tok_len': 7200000, 'tokens_per_sample': 293.0}\n"
    )
    return tree


def _doc(root: Path, scenario: str = "server", **kwargs: Any) -> dict[str, Any]:
    plan = mlperf.parse_tree(root, **kwargs)
    docs = [i.document for i in plan.items if i.document and i.document["scenario"]["kind"] == scenario]
    assert len(docs) == 1, [(i.key, i.problems) for i in plan.items]
    return docs[0]


@pytest.fixture(scope="module")
def amd() -> dict[str, Any]:
    return _doc(AMD, "server")


def test_h100_fp16_and_mi300x_fp8_llama2_70b_99_server_compare_at_equal_quality(amd, tmp_path):
    h100 = _doc(author_nvidia(tmp_path), "server", round_name="v5.1")
    assert h100["precision"]["weights"] == "fp16" and amd["precision"]["weights"] == "fp8"
    refused = comparability.check([h100, amd], "system")
    assert not refused.comparable and any(r.pointer.startswith("/precision") for r in refused.refusals)
    verdict = comparability.check([h100, amd], "iso-quality")
    assert verdict.comparable, [d.words for d in verdict.offending]
    assert any(d.pointer == "/precision/weights" for d in verdict.subject_differences)
    assert comparability.comparability_key(h100, "iso-quality") == comparability.comparability_key(amd, "iso-quality")
    result = comparability.compare([h100, amd], "iso-quality")
    labels = sorted(arm["label"] for arm in result["arms"])
    assert labels == ["8× AMD Instinct MI300X 192GB HBM3, fp8", "8× NVIDIA H100-SXM-80GB, fp16"]
    beside = {r["system"]: {b["field"]: b["value"] for b in r["beside"]} for r in result["runs"]}
    assert beside["Supermicro AS-8125GS-TNMR2"]["precision.weights"] == "fp8"
    assert beside["Supermicro AS-8125GS-TNMR2"]["metrics.quality.value"] == "44.4406"  # accuracy.txt's rouge1
    assert beside["Authored DGX H100"]["metrics.quality.value"] == "44.2"
    assert {b["metrics.quality.target_ratio"] for b in beside.values()} == {"0.99"}


def test_server_against_offline_is_refused_on_the_scenario(amd, tmp_path):
    offline = _doc(author_nvidia(tmp_path, folder="Offline"), "offline", round_name="v5.1")
    verdict = comparability.check([amd, offline], "iso-quality")
    assert not verdict.comparable
    assert any(r.pointer == "/scenario/kind" and "server vs offline" in r.words for r in verdict.refusals)


def test_the_99_and_99_9_targets_are_refused_with_the_reason(amd, tmp_path):
    strict = _doc(author_nvidia(tmp_path, benchmark="llama2-70b-99.9", rouge1=44.42), "server", round_name="v5.1")
    verdict = comparability.check([amd, strict], "iso-quality")
    assert not verdict.comparable
    words = {r.pointer: r.words for r in verdict.refusals}
    assert words["/metrics/quality/target_ratio"] == "metrics.quality.target_ratio: 0.99 vs 0.999"
    assert "/workload/name" in words


def test_a_run_without_measured_quality_is_refused_from_the_axis_saying_so(amd, tmp_path):
    h100 = _doc(author_nvidia(tmp_path), "server", round_name="v5.1")
    del h100["metrics"]["quality"]["value"]
    verdict = comparability.check([h100, amd], "iso-quality")
    assert not verdict.comparable
    failure = verdict.requirement_failures[0]
    assert failure.pointer == "/metrics/quality/value" and failure.values == ("missing", "44.4406")
    assert "equal quality is a claim about measured quality" in failure.words
