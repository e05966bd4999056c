"""Every MLPerf round kept in ../shared/data/mlperf/ (one folder per round, Inference or Training): every
result folder is accounted for, and every imported number equals the source.

The expectations are computed here by an independent reader (plain JSON per :::MLLOG line, regular
expressions modelled on MLPerf's own submission checker and result summarizer), not by the importer's
code. A round dropped into the shared folder is tested with no change here.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

from registry.importers import mlperf
from registry.importers.mlperf import training as mlperf_training

# BENCHREG_MLPERF_ROUNDS points the same checks at full published rounds kept outside the project.
SHARED = Path(
    os.environ.get("BENCHREG_MLPERF_ROUNDS")
    or Path(__file__).resolve().parents[4].parent / "shared" / "data" / "mlperf"
)
ROUNDS = sorted(p for p in SHARED.iterdir() if p.is_dir()) if SHARED.is_dir() else []

pytestmark = pytest.mark.skipif(not ROUNDS, reason=f"no MLPerf rounds in {SHARED}")

# MLPerf's published figure per scenario (submission checker RESULT_FIELD_NEW / _BENCHMARK_OVERWRITE).
TOKENS = {
    "llama2-70b",
    "llama2-70b-interactive",
    "llama3.1-8b",
    "llama3.1-405b",
    "mixtral-8x7b",
    "deepseek-r1",
    "whisper",
    "llama3.1-8b-edge",
}
# accuracy.txt patterns of the checker's ACC_PATTERN, per headline metric; the last match wins, as there.
ACCURACY = {
    "accuracy": r"^accuracy=([\d.]+)%|accuracy=([\d.]+)%$",
    "mAP": r"mAP=([\d.]+)",
    "f1": r"[\"']f1[\"']:\s*([\d.]+)",
    "AUC": r"^AUC=([\d.]+)",
    "DICE": r"Accuracy:\s*mean\s*=\s*([\d.]+)",
    "rouge1": r"'rouge1':\s*'?([\d.]+)",
    "rougeL": r"'rougeL':\s*'?([\d.]+)",
    "exact_match": r"[\"']exact_match[\"']:\s*([\d.]+)",
    "CLIP_SCORE": r"'CLIP_SCORE':\s*'?([\d.]+)",
}


def _round_plans() -> list[tuple[str, mlperf.ImportPlan, Path]]:
    plans = []
    for path in ROUNDS:
        training = any(path.glob("**/results/*/*/result_*.txt"))
        parser = mlperf_training.parse_tree if training else mlperf.parse_tree
        plans.append((path.name, parser(path), path))
    return plans


@pytest.fixture(scope="module")
def plans() -> list[tuple[str, mlperf.ImportPlan, Path]]:
    return _round_plans()


def _mllog(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if ":::MLLOG " in line:
            record = json.loads(line.split(":::MLLOG ", 1)[1])
            out.setdefault(record["key"], record.get("value"))
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def _source(item: mlperf.ImportItem, root: Path, name: str) -> Path | None:
    return next((root / f.path for f in item.files if f.path.endswith(name) and f.status == "used"), None)


def test_every_result_folder_is_in_the_report_and_every_file_accounted_for(plans):
    for name, plan, root in plans:
        listed = {root / f.path for item in plan.items for f in item.files} | {root / f.path for f in plan.skipped}
        missing = [p for p in root.rglob("*") if p.is_file() and p not in listed and p.name != "PROVENANCE.md"]
        assert missing == [], f"{name}: files in no line of the report"
        if plan.items and plan.items[0].document and plan.items[0].document["phase"] == "training":
            folders = {p.parent for p in root.glob("**/results/*/*/result_*.txt")}
        else:
            folders = {p for p in root.glob("**/results/*/*/*") if p.is_dir()}
        assert len(plan.items) == len(folders), name
        for item in plan.items:
            assert item.status in ("ready", "skipped") or item.errors, f"{name} {item.key}: refused with no reason"


def test_every_inference_headline_equals_mlperfs_published_figure(plans):
    checked = 0
    for _name, plan, root in plans:
        for item in plan.items:
            doc = item.document
            if doc is None or doc["phase"] != "inference":
                continue
            detail = _mllog(_source(item, root, "performance/run_1/mlperf_log_detail.txt"))
            scenario = doc["provenance"]["origin"]["scenario"]
            model = re.sub(r"-(99|99\.9)$", "", doc["workload"]["name"]).replace("llama3_1", "llama3.1")
            metrics = doc["metrics"]
            if scenario in ("SingleStream", "MultiStream") and model != "llama3.1-8b-edge":
                key = "early_stopping_latency_ss" if scenario == "SingleStream" else "early_stopping_latency_ms"
                assert _close(metrics["latency_estimate_ms"]["value"], detail[key] / 1e6), item.key
            elif scenario == "Offline":
                key = "result_tokens_per_second" if model in TOKENS else "result_samples_per_second"
                if model == "gptj" and "result_inferred_tokens_per_second" in detail:
                    key = "result_inferred_tokens_per_second"
                assert _close(metrics["throughput"]["value"], float(detail[key])), item.key
            elif scenario in ("Server", "Interactive"):
                key = (
                    "result_completed_tokens_per_second"
                    if model in TOKENS and "result_completed_tokens_per_second" in detail
                    else "result_completed_samples_per_sec"
                )
                if model == "gptj" and "result_inferred_completed_tokens_per_second" in detail:
                    key = "result_inferred_completed_tokens_per_second"
                assert _close(metrics["throughput"]["value"], float(detail[key])), item.key
            checked += 1
    assert checked or not any(p.items for _n, p, _r in plans)


def test_every_latency_figure_equals_the_detail_log_in_ms(plans):
    names = {
        "min": "min",
        "max": "max",
        "mean": "mean",
        "p50": "50.00",
        "p90": "90.00",
        "p95": "95.00",
        "p97": "97.00",
        "p99": "99.00",
        "p999": "99.90",
    }
    for _name, plan, root in plans:
        for item in plan.items:
            doc = item.document
            if doc is None or doc["phase"] != "inference":
                continue
            detail = _mllog(_source(item, root, "performance/run_1/mlperf_log_detail.txt"))
            per_query = (
                doc["provenance"]["origin"]["scenario"] == "MultiStream"
                and "result_99.00_percentile_per_query_latency_ns" in detail
            )
            for stat, value in (doc["metrics"].get("latency_ms") or {}).items():
                if stat not in names:
                    continue
                label = names[stat]
                if per_query:
                    key = (
                        f"result_{label}_query_latency_ns"
                        if stat in ("min", "max", "mean")
                        else f"result_{label}_percentile_per_query_latency_ns"
                    )
                else:
                    key = (
                        f"result_{label}_latency_ns"
                        if stat in ("min", "max", "mean")
                        else f"result_{label}_percentile_latency_ns"
                    )
                assert _close(value, detail[key] / 1e6), f"{item.key} {stat}"


def test_every_accuracy_value_is_a_number_printed_in_accuracy_txt(plans):
    for _name, plan, root in plans:
        for item in plan.items:
            quality = (item.document or {}).get("metrics", {}).get("quality")
            if not quality:
                continue
            text = _source(item, root, "accuracy/accuracy.txt").read_text(encoding="utf-8")
            printed = {float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)}
            assert all(float(v) in printed for v in quality["values"].values()), item.key
            pattern = ACCURACY.get(quality["metric"])
            if pattern:
                matches = [m for line in text.splitlines() for m in re.findall(pattern, line.strip())]
                assert matches, f"{item.key}: no {quality['metric']} line in accuracy.txt"
                last = matches[-1]
                last = next(g for g in last if g) if isinstance(last, tuple) else last
                assert _close(quality["value"], float(last)), item.key


def test_system_and_publication_facets_equal_the_system_description(plans):
    availability = {
        "available": "available",
        "preview": "preview",
        "rdi": "research",
        "onprem": "available",
        "cloud": "available",
    }
    for _name, plan, root in plans:
        for item in plan.items:
            doc = item.document
            if doc is None:
                continue
            path = next(root / f.path for f in item.files if "/systems/" in "/" + f.path)
            system = json.loads(path.read_text(encoding="utf-8"))
            nodes, per_node = int(system["number_of_nodes"]), system.get("accelerators_per_node")
            accelerators = doc["system"]["accelerators"]
            if accelerators:
                assert accelerators[0]["count"] == int(per_node) * nodes, item.key
            origin = doc["provenance"]["origin"]
            status = str(system.get("status", "")).strip().lower()
            if status in availability:
                assert origin["availability"] == availability[status], item.key


def test_every_training_score_is_the_olympic_mean_of_the_logged_runs(plans):
    for _name, plan, root in plans:
        for item in plan.items:
            doc = item.document
            if doc is None or doc["phase"] != "training":
                continue
            times = []
            for f in item.files:
                if f.status != "used" or not re.search(r"result_[^/]*\.txt$", f.path):
                    continue
                text = (root / f.path).read_text(encoding="utf-8", errors="replace")
                start = re.search(r'"time_ms": (\d+), "event_type": "INTERVAL_START", "key": "run_start"', text)
                stops = re.findall(
                    r'"time_ms": (\d+), "event_type": "\w+", "key": "run_stop".*'
                    r'"status": "(\w+)"',
                    text,
                )
                ok = start and stops and stops[-1][1] == "success"
                times.append((int(stops[-1][0]) - int(start[1])) / 1000 if ok else math.inf)
            drop = 4 if doc["workload"]["name"] == "unet3d" else 1
            kept = sorted(times)[drop : len(times) - drop]
            assert _close(doc["metrics"]["time_to_quality"]["seconds"], sum(kept) / len(kept)), item.key
