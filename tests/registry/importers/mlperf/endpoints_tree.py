"""An authored MLPerf Inference v6.1 submission measured by MLCommons' endpoints client, in the published format.

Modelled on mlcommons/inference_results_v6.1 closed/NVIDIA/results/VR-NVL72_VR-288GB_aarch64x72_TRT/
{deepseek-r1,qwen3-vl-235b-a22b}/{Offline,Server,Interactive}/: no LoadGen log; performance/result_summary.json
(counts, duration, `qps`, `tps`, latency / ttft / tpot distributions in ns with observed and early-stopping
percentiles keyed '99.0'), config.yaml (type offline / online, settings.runtime, settings.load_pattern),
accuracy/accuracy_results.json (accuracy_scores with a score), measurements.json, report.txt and
metrics/final_snapshot.json. Every number here is authored (small, round), not copied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

SUBMITTER = "Acme"
SYSTEM = "dc-rack"

# The headline of each result, by hand: what MLCommons' table would publish (tokens/s for deepseek-r1 from `tps`,
# queries or samples/s for qwen3-vl-235b-a22b from `qps`).
DEEPSEEK = {
    "Offline": {"type": "offline", "qps": 2.5, "tps": 9000.5, "issued": 1000, "duration_ns": 400_000_000_000},
    "Server": {"type": "online", "qps": 2.0, "tps": 8000.25, "ttft_p99": 1_900_000_000, "tpot_p99": 70_000_000},
    # TTFT above Interactive's 1.5 s limit: the checker's llm_check fails it
    "Interactive": {"type": "online", "qps": 1.5, "tps": 5000.75, "ttft_p99": 1_600_000_000, "tpot_p99": 12_000_000},
}
QWEN = {
    "Offline": {"type": "offline", "qps": 12.5, "tps": 500.0, "issued": 5000, "duration_ns": 400_000_000_000},
    "Interactive": {"type": "online", "qps": 5.25, "tps": 210.0, "latency_p99": 1_400_000_000},
}
DEEPSEEK_SCORE = 81.0  # not judged by the checker for endpoints (accepted whatever it is)
QWEN_SCORES = {"Offline": 0.79, "Interactive": 0.77}  # targets 0.99 x 0.7903 = 0.782397 and 0.99 x 0.7878 = 0.779922


def system(root: Path) -> None:
    description = {
        "system_name": "Acme Rack (8x Accel)",
        "number_of_nodes": 2,
        "submitter": SUBMITTER,
        "division": "closed",
        "status": "preview",
        "system_type": "datacenter",
        "accelerators_per_node": 4,
        "accelerator_model_name": "NVIDIA Vera Rubin",
        "accelerator_memory_capacity": "288 GB",
        "host_processor_model_name": "NVIDIA Vera CPU",
        "host_processors_per_node": 2,
        "operating_system": "Ubuntu 24.04",
        "framework": "TensorRT-LLM 1.2",
    }
    (root / "systems").mkdir(parents=True, exist_ok=True)
    (root / "systems" / f"{SYSTEM}.json").write_text(json.dumps(description))


def distribution(scale: int, p99: int | None = None) -> dict[str, Any]:
    """An endpoint distribution in ns: min, avg, max, observed and early-stopping percentiles keyed '99.0'."""
    p99 = p99 or 9 * scale
    return {
        "total": 123 * scale,
        "min": scale,
        "max": 10 * scale,
        "median": 5 * scale,
        "avg": 5 * scale,
        "std_dev": 2 * scale,
        "percentiles": {"99.9": 10 * scale, "99.0": p99 - scale // 10, "90.0": 8 * scale, "50.0": 5 * scale},
        "early_stopping_percentiles": {"99.9": 10 * scale, "99.0": p99, "90.0": 8 * scale, "50.0": 5 * scale},
        "histogram": {"buckets": [[scale, 10 * scale]], "counts": [10]},
    }


def summary(figures: dict[str, Any]) -> dict[str, Any]:
    issued = figures.get("issued", 600)
    online = figures["type"] == "online"
    return {
        "version": "0.1.0",
        "git_sha": None,
        "test_started_at": 0,
        "n_samples_issued": issued,
        "n_samples_completed": issued,
        "n_samples_failed": 0,
        "duration_ns": figures.get("duration_ns", 300_000_000_000),
        "state": "complete",
        "complete": True,
        "ttft": distribution(100_000_000, figures.get("ttft_p99")) if online else {},
        "tpot": distribution(1_000_000, figures.get("tpot_p99")) if online else {},
        "latency": distribution(1_000_000_000, figures.get("latency_p99")),
        "output_sequence_lengths": {"min": 10, "max": 2000, "avg": 300.5},
        "legacy_loadgen_window_duration_ns": None,
        "qps": figures["qps"],
        "tps": figures["tps"],
        "run_config": {"load_pattern": {"type": "max_throughput"}, "warmup": {"enabled": False, "n_requests": None}},
    }


def config(figures: dict[str, Any]) -> dict[str, Any]:
    pattern = {"type": "max_throughput"} if figures["type"] == "offline" else {"type": "poisson", "target_qps": 2.0}
    return {
        "name": "acme-run",
        "version": "1.0",
        "type": figures["type"],
        "model_params": {"name": "model", "streaming": "on" if figures["type"] == "online" else "off"},
        "settings": {
            "runtime": {
                "min_duration_ms": 600000,
                "max_duration_ms": 900000,
                "n_samples_to_issue": figures.get("issued", 600),
                "scheduler_random_seed": 16159082839903944936,
                "dataloader_random_seed": 12345,
            },
            "load_pattern": pattern,
            "warmup": {"enabled": False},
            "early_stopping": {"enabled": True},
        },
        "endpoint_config": {"endpoints": ["http://127.0.0.1:8000"], "api_type": "openai_completions"},
    }


def result(root: Path, benchmark: str, scenario: str, figures: dict[str, Any], score: float | None) -> Path:
    folder = root / "results" / SYSTEM / benchmark / scenario
    (folder / "performance").mkdir(parents=True)
    (folder / "performance" / "result_summary.json").write_text(json.dumps(summary(figures), indent=2))
    (folder / "config.yaml").write_text(yaml.safe_dump(config(figures), sort_keys=False))
    (folder / "measurements.json").write_text(json.dumps({"weight_data_types": "fp4", "input_data_types": "int32"}))
    (folder / "report.txt").write_text("----------------- Summary -----------------\n")
    (folder / "metrics").mkdir()
    (folder / "metrics" / "final_snapshot.json").write_text("{}")
    if score is not None:
        (folder / "accuracy").mkdir()
        scores = {"accuracy_scores": [{"score": score, "total_samples": 100, "dataset_type": "accuracy"}]}
        (folder / "accuracy" / "accuracy_results.json").write_text(json.dumps(scores))
    return folder


def endpoints_submission(tmp_path: Path) -> Path:
    """inference_results_v6.1/closed/Acme: deepseek-r1 Offline/Server/Interactive and qwen3-vl-235b-a22b
    Offline/Interactive, all measured by the endpoints client. Returns the round root."""
    round_root = tmp_path / "inference_results_v6.1"
    root = round_root / "closed" / SUBMITTER
    system(root)
    for scenario, figures in DEEPSEEK.items():
        result(root, "deepseek-r1", scenario, figures, DEEPSEEK_SCORE)
    for scenario, figures in QWEN.items():
        result(root, "qwen3-vl-235b-a22b", scenario, figures, QWEN_SCORES[scenario])
    return round_root


def edge_singlestream(tmp_path: Path) -> Path:
    """inference_results_v6.1/closed/Acme: an edge system's qwen3.6-27b SingleStream result from the endpoints
    client (MLCommons' v6.1 table publishes NVIDIA Jetson-Thor's as 'Latency (ms)'). Returns the round root."""
    round_root = tmp_path / "inference_results_v6.1"
    root = round_root / "closed" / SUBMITTER
    system(root)
    description = json.loads((root / "systems" / f"{SYSTEM}.json").read_text())
    (root / "systems" / f"{SYSTEM}.json").write_text(json.dumps({**description, "system_type": "edge"}))
    figures = {"type": "offline", "qps": 0.5, "tps": 40.0, "issued": 1000, "duration_ns": 2_000_000_000_000}
    result(root, "qwen3.6-27b", "SingleStream", figures, 0.875)
    return round_root
