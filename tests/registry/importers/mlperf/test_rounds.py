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
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from registry.importers import mlperf
from registry.importers.mlperf import training as mlperf_training

# BENCHREG_MLPERF_ROUNDS points the same checks at full published rounds kept outside the project; by default
# every round folder of ../shared/data/mlperf-rounds (trimmed whole rounds) and ../shared/data/mlperf (samples).
_DATA = Path(__file__).resolve().parents[4].parent / "shared" / "data"
SHARED = [Path(p) for p in os.environ.get("BENCHREG_MLPERF_ROUNDS", "").split(os.pathsep) if p] or [
    _DATA / "mlperf-rounds",
    _DATA / "mlperf",
]
TRAINING_RULES = Path(__file__).resolve().parents[4] / "registry" / "importers" / "mlperf" / "rounds" / "training"
ROUNDS = sorted(p for shared in SHARED if shared.is_dir() for p in shared.iterdir() if p.is_dir())

pytestmark = pytest.mark.skipif(not ROUNDS, reason=f"no MLPerf rounds in {SHARED}")

# MLCommons' own rules, as the project keeps them (rule tables extracted from the submission checker by
# scripts/mlperf-rules): read here as plain JSON, not through the importer's code.
RULES_DIR = Path(__file__).resolve().parents[4] / "registry" / "importers" / "mlperf" / "rounds"


def _rules(round_name: str) -> dict[str, Any]:
    return json.loads((RULES_DIR / f"inference_{round_name}.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _model(rules: dict[str, Any], benchmark: str) -> str:
    config = rules["model_config"]
    return benchmark if benchmark in config["models"] else config["model_mapping"].get(benchmark, benchmark)


def _published_field(rules: dict[str, Any], model: str, loadgen_scenario: str) -> str:
    """The checker's get_performance_metric: the benchmark's override, else the round's field."""
    override = rules["result_field_benchmark_overwrite"].get(model, {})
    return override.get(loadgen_scenario) or rules["result_field"][loadgen_scenario]  # type: ignore[no-any-return]


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


def _stored_headline(metrics: dict[str, Any]) -> float:
    primary = metrics["primary"]
    if primary == "throughput":
        return float(metrics["throughput"]["value"])
    if primary == "latency_estimate_ms":
        return float(metrics["latency_estimate_ms"]["value"])
    return float(metrics["latency_ms"][primary.split(".")[1]])


# The summary's labels of the published rates (LoadGen's mlperf_log_summary.txt), by detail-log record.
SUMMARY_RATES = {
    "Samples per second": "result_samples_per_second",
    "Tokens per second": "result_tokens_per_second",
    "Completed samples per second": "result_completed_samples_per_sec",
    "Completed tokens per second": "result_completed_tokens_per_second",
}


def _summary_rates(path: Path | None) -> dict[str, str]:
    """record -> the text the summary prints for it ('Completed tokens per second: 24593.77')."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if path else []:
        label, _, text = line.partition(":")
        if label.strip() in SUMMARY_RATES and text.strip():
            out[SUMMARY_RATES[label.strip()]] = text.strip()
    return out


def _digits(text: str) -> int:
    return len(Decimal(text).normalize().as_tuple().digits)


def _inferred_figure(detail: dict[str, Any], measured: str, scenario: str) -> float:
    """MLPerf's inferred figure, as its checker's get_inferred_result computes it from the measured run's log."""
    if (measured, scenario) == ("SingleStream", "Offline"):
        return float(detail["result_qps_without_loadgen_overhead"])
    if (measured, scenario) == ("SingleStream", "MultiStream"):
        return float(detail["early_stopping_latency_ms"]) * 8 / 1e6
    return float(detail["effective_samples_per_query"]) * 1000 / (float(detail["result_mean_query_latency_ns"]) / 1e6)


def test_every_inference_headline_equals_mlperfs_published_figure(plans):
    """The stored headline is the LoadGen record the round's checker publishes (RESULT_FIELD_NEW, overridden
    per benchmark by RESULT_FIELD_BENCHMARK_OVERWRITE, keyed by LoadGen's scenario), in its unit."""
    checked = 0
    for _name, plan, root in plans:
        for item in plan.items:
            doc = item.document
            if doc is None or doc["phase"] != "inference":
                continue
            detail = _mllog(_source(item, root, "performance/run_1/mlperf_log_detail.txt"))
            origin = doc["provenance"]["origin"]
            rules = _rules(origin["round"])
            model = origin.get("mapped_benchmark") or _model(rules, doc["workload"]["name"])
            derivation = origin.get("derivation")
            if derivation:  # MLPerf's inferred results (submission checker get_inferred_result), from the log here
                value = _inferred_figure(detail, derivation["from_scenario"], origin["scenario"])
                assert _close(_stored_headline(doc["metrics"]), value), f"{item.key}: inferred"
                checked += 1
                continue
            field = _published_field(rules, model, detail["effective_scenario"])
            value = float(detail[field]) / (1e6 if "latency" in field else 1)
            printed = _summary_rates(_source(item, root, "performance/run_1/mlperf_log_summary.txt")).get(field)
            if printed is not None and _digits(printed) > _digits(str(detail[field])):
                value = float(printed)  # the summary prints this rate with more digits than the detail log
            assert _close(_stored_headline(doc["metrics"]), value), f"{item.key}: {field}"
            if "tokens_per_second" in field:
                assert doc["metrics"]["throughput"]["unit"] == "tokens/s", item.key
            elif "samples_per_sec" in field:
                assert doc["metrics"]["throughput"]["unit"] == "samples/s", item.key
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


def _checker_values(text: str, pairs: list[Any], patterns: dict[str, str]) -> dict[str, float]:
    """Each metric's last value as the checker's re.match(ACC_PATTERN[metric], line) finds it, after writing
    numpy scalars (np.int64(5)) as the number they hold."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        line = re.sub(r"\b(?:np|numpy)\.\w+\(([-+\d.eE]+)\)", r"\1", line)
        for name in pairs[0::2]:
            match = re.match(patterns[name], line)
            if match:
                found[name] = float(match[1])
    return found


def test_every_accuracy_value_is_the_checkers_reading_of_accuracy_txt(plans):
    """metrics.quality.values are what MLPerf's checker reads from accuracy.txt with the round's patterns,
    the headline metric is the checker's first, and the verdict is its bounds applied to them."""
    for _name, plan, root in plans:
        for item in plan.items:
            doc = item.document or {}
            quality = doc.get("metrics", {}).get("quality")
            if not quality:
                continue
            origin = doc["provenance"]["origin"]
            if origin["kind"] != "mlperf-inference":
                continue  # Training's reached quality: test_training_rules and the training checks below
            rules = _rules(origin["round"])
            model = origin.get("mapped_benchmark") or _model(rules, doc["workload"]["name"])
            lower = rules["model_config"]["accuracy-target"][model]
            upper = rules["model_config"].get("accuracy-upper-limit", {}).get(model, [])
            text = _source(item, root, "accuracy/accuracy.txt").read_text(encoding="utf-8")
            values = _checker_values(text, lower + upper, rules["acc_pattern"])
            assert quality["metric"] == lower[0] and quality["values"] == values, item.key
            bounds_met = all(values[n] >= low for n, low in zip(lower[0::2], lower[1::2], strict=True)) and all(
                values.get(n, -math.inf) <= high for n, high in zip(upper[0::2], upper[1::2], strict=True)
            )
            missing = any(n not in values for n in lower[0::2])
            assert quality["passed"] == (None if missing else bounds_met), item.key


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
            origin = doc["provenance"]["origin"]
            rules = json.loads((TRAINING_RULES / f"{origin['round']}.json").read_text(encoding="utf-8"))
            drop = rules["benchmarks"][doc["workload"]["name"]]["dropped_each_end"]
            kept = sorted(times)[drop : len(times) - drop]
            # MLCommons publishes the olympic mean times the folder's scaling.json factor (1 without the file)
            folder = root / next(f.path for f in item.files if re.search(r"result_[^/]*\.txt$", f.path))
            scaling = folder.parent / "scaling.json"
            factor = json.loads(scaling.read_text())["scaling_factor"] if scaling.is_file() else 1.0
            ttq = doc["metrics"]["time_to_quality"]
            assert _close(ttq["unscaled_seconds"], sum(kept) / len(kept)), item.key
            assert _close(ttq["seconds"], factor * sum(kept) / len(kept)) and ttq["scaling_factor"] == factor, item.key
            assert origin["targets"] and doc["metrics"]["quality"]["passed"] is True, item.key
