"""The MLPerf importer on small trees written here, one per feature of the published rounds' layouts and
formats. Every file is authored by these tests (minimal, not a copy of a published file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol import comparability
from registry.importers import mlperf
from registry.importers.mlperf import training as mlperf_training

SYSTEM = "tiny-sut"


def _system(root: Path, **fields: Any) -> None:
    description = {
        "system_name": "Tiny SUT",
        "number_of_nodes": 1,
        "submitter": "Acme",
        "division": "closed",
        "status": "available",
        "system_type": "edge",
        "accelerators_per_node": 1,
        "accelerator_model_name": "NVIDIA L4",
        "accelerator_memory_capacity": "24 GB",
        "host_processor_model_name": "Some CPU",
        "host_processors_per_node": 1,
        "operating_system": "Ubuntu 22.04",
        "framework": "TensorRT 10.1",
        **fields,
    }
    (root / "systems").mkdir(parents=True, exist_ok=True)
    (root / "systems" / f"{SYSTEM}.json").write_text(json.dumps(description))


def _run(folder: Path, scenario: str, records: dict[str, Any], summary: dict[str, str]) -> None:
    """A LoadGen performance run: the detail log's :::MLLOG records and the summary's 'label : value' lines."""
    run = folder / "performance" / "run_1"
    run.mkdir(parents=True)
    base = {
        "loadgen_version": "4.1.0 @ abc",
        "test_datetime": "2024-07-01T10:00:00Z",
        "effective_scenario": scenario,
        "effective_test_mode": "PerformanceOnly",
        "result_validity": "VALID",
        "result_query_count": 1000,
        "early_stopping_met": True,
        "qsl_reported_total_count": 5000,
    }
    lines = [":::MLLOG " + json.dumps({"key": k, "value": v, "time_ms": 1}) for k, v in {**base, **records}.items()]
    (run / "mlperf_log_detail.txt").write_text("\n".join(lines) + "\n")
    body = {"Scenario": scenario, "Mode": "PerformanceOnly", "Result is": "VALID", **summary}
    text = "=" * 20 + "\n" + "".join(f"{k} : {v}\n" for k, v in body.items())
    (run / "mlperf_log_summary.txt").write_text(text + "\nNo errors encountered during test.\n")


OFFLINE = {
    "result_samples_per_second": 1234.5,
    "result_min_latency_ns": 1000,
    "result_max_latency_ns": 9000,
    "result_mean_latency_ns": 5000,
    "result_90.00_percentile_latency_ns": 8000,
}


def submission_tree(
    tmp_path: Path,
    benchmark: str = "resnet50",
    folder: str = "Offline",
    scenario: str = "Offline",
    records: dict[str, Any] | None = None,
    summary: dict[str, str] | None = None,
    measurements_beside: bool = True,
) -> Path:
    """closed/Acme/ as MLCommons publishes v3.1-v5.1 rounds: measurements/ beside results/."""
    root = tmp_path / "closed" / "Acme"
    _system(root)
    result = root / "results" / SYSTEM / benchmark / folder
    _run(
        result,
        scenario,
        records if records is not None else OFFLINE,
        summary if summary is not None else {"Samples per second": "1234.5"},
    )
    measurements = root / "measurements" / SYSTEM / benchmark / folder if measurements_beside else result
    measurements.mkdir(parents=True, exist_ok=True)
    name = f"{SYSTEM}_{scenario}.json" if measurements_beside else "measurements.json"
    (measurements / name).write_text(
        json.dumps({"weight_data_types": "int8", "input_data_types": "int8", "weight_transformations": "quantization"})
    )
    (measurements / "user.conf").write_text("*.Offline.target_qps = 1000\n")
    return root


def _only(tree: Path, **kwargs: Any) -> mlperf.ImportItem:
    plan = mlperf.parse_tree(tree, **kwargs)
    assert len(plan.items) == 1, [i.key for i in plan.items]
    return plan.items[0]


def _accuracy(root: Path, benchmark: str, folder: str, text: str) -> None:
    path = root / "results" / SYSTEM / benchmark / folder / "accuracy"
    path.mkdir(parents=True)
    (path / "accuracy.txt").write_text(text)


def test_measurements_and_user_conf_beside_results_are_read(tmp_path):
    item = _only(submission_tree(tmp_path))
    assert item.status == "ready", item.errors
    doc = item.document
    assert doc["precision"]["weights"] == "int8"
    assert doc["software"]["settings"]["user.conf:*.Offline.target_qps"] == 1000
    used = {f.path for f in item.files if f.status == "used"}
    assert f"measurements/{SYSTEM}/resnet50/Offline/{SYSTEM}_Offline.json" in used


def test_measurements_json_inside_the_result_folder_is_read_too(tmp_path):
    item = _only(submission_tree(tmp_path, measurements_beside=False))
    assert item.status == "ready", item.errors


def test_a_result_without_measurements_is_refused_saying_where_it_looked(tmp_path):
    root = submission_tree(tmp_path)
    for path in (root / "measurements").rglob("*.json"):
        path.unlink()
    item = _only(tmp_path)
    assert item.status == "refused"
    assert any("measurements" in e and "missing" in e for e in item.errors)


@pytest.mark.parametrize(
    ("folder", "scenario"),
    [("offline", "Offline"), ("singlestream", "SingleStream"), ("multistream", "MultiStream"), ("server", "Server")],
)
def test_lower_case_scenario_folders_are_imported(tmp_path, folder, scenario):
    records = {
        "Offline": OFFLINE,
        "Server": {
            "result_completed_samples_per_sec": 99.5,
            "result_min_latency_ns": 1000,
            "result_max_latency_ns": 9000,
            "result_mean_latency_ns": 5000,
        },
        "SingleStream": {
            "early_stopping_latency_ss": 812345,
            "result_min_latency_ns": 500000,
            "result_max_latency_ns": 900000,
            "result_mean_latency_ns": 700000,
            "result_90.00_percentile_latency_ns": 800000,
        },
        "MultiStream": {
            "early_stopping_latency_ms": 2345678,
            "result_min_query_latency_ns": 1000000,
            "result_max_query_latency_ns": 3000000,
            "result_mean_query_latency_ns": 2000000,
            "result_99.00_percentile_per_query_latency_ns": 2300000,
            "generated_samples_per_query": 8,
            "result_min_latency_ns": 100,
            "result_max_latency_ns": 200,
            "result_mean_latency_ns": 150,
        },
    }[scenario]
    item = _only(submission_tree(tmp_path, folder=folder, scenario=scenario, records=records, summary={}))
    assert item.status == "ready", item.errors
    assert item.document["scenario"]["kind"] == mlperf.SCENARIOS[scenario]


def test_a_folder_that_is_no_scenario_is_reported_as_skipped_not_dropped(tmp_path):
    root = submission_tree(tmp_path)
    (root / "results" / SYSTEM / "resnet50" / "Offline_old").mkdir()
    (root / "results" / SYSTEM / "resnet50" / "Offline_old" / "notes.txt").write_text("old")
    plan = mlperf.parse_tree(tmp_path)
    skipped = next(i for i in plan.items if i.key.endswith("Offline_old"))
    assert skipped.status == "skipped" and "not an MLPerf scenario folder" in skipped.skipped


def test_single_stream_headline_is_the_early_stopping_estimate(tmp_path):
    records = {
        "early_stopping_latency_ss": 812345,
        "result_min_latency_ns": 500000,
        "result_max_latency_ns": 900000,
        "result_mean_latency_ns": 700000,
        "result_90.00_percentile_latency_ns": 800000,
        "result_qps_with_loadgen_overhead": 1300.25,
    }
    summary = {"90th percentile latency (ns)": "800000", "Early stopping 90th percentile estimate": "812345"}
    item = _only(
        submission_tree(tmp_path, folder="SingleStream", scenario="SingleStream", records=records, summary=summary)
    )
    metrics = item.document["metrics"]
    assert metrics["primary"] == "latency_estimate_ms"
    assert metrics["latency_estimate_ms"] == {
        "value": 0.812345,
        "unit": "ms",
        "percentile": "p90",
        "method": "loadgen-early-stopping",
        "count": 1000,
    }
    assert metrics["latency_ms"]["p90"] == 0.8  # the observed percentile is kept beside it

    # ...and the estimate never compares with an observed percentile: the headline's definition is controlled
    observed = json.loads(json.dumps(item.document))
    observed["metrics"]["primary"] = "latency_ms.p90"
    verdict = comparability.check([item.document, observed], "system")
    assert not verdict.comparable and any(r.pointer == "/metrics/primary" for r in verdict.refusals)


def test_multi_stream_is_judged_per_query_with_its_early_stopping_p99(tmp_path):
    records = {
        "early_stopping_latency_ms": 2345678,
        "result_min_query_latency_ns": 1000000,
        "result_max_query_latency_ns": 3000000,
        "result_mean_query_latency_ns": 2000000,
        "result_99.00_percentile_per_query_latency_ns": 2300000,
        "generated_samples_per_query": 8,
        "result_min_latency_ns": 100,
        "result_max_latency_ns": 200,
        "result_mean_latency_ns": 150,
    }
    # The summary prints per-query latencies under the plain labels.
    summary = {
        "Min latency (ns)": "1000000",
        "Max latency (ns)": "3000000",
        "Mean latency (ns)": "2000000",
        "99.00 percentile latency (ns)": "2300000",
        "Early stopping 99th percentile estimate": "2345678",
        "* Early stopping 99th percentile estimate": "2345678",
    }
    item = _only(
        submission_tree(tmp_path, folder="MultiStream", scenario="MultiStream", records=records, summary=summary)
    )
    assert item.status == "ready", item.errors
    metrics = item.document["metrics"]
    assert metrics["latency_estimate_ms"]["value"] == 2.345678 and metrics["latency_estimate_ms"]["percentile"] == "p99"
    assert metrics["latency_ms"]["max"] == 3.0 and metrics["latency_ms"]["count"] == 1000


def test_an_llm_headline_is_tokens_per_second_with_the_request_rate_kept(tmp_path):
    records = {**OFFLINE, "result_tokens_per_second": 24593.8, "result_samples_per_second": 80.25}
    item = _only(
        submission_tree(
            tmp_path,
            benchmark="llama2-70b-99",
            records=records,
            summary={"Tokens per second": "24593.77", "Samples per second": "80.25"},
        )
    )
    metrics = item.document["metrics"]
    # the summary's 24593.77 has more digits than the detail log's 24593.8: the more precise source, and the report
    # says which
    assert metrics["throughput"] == {"value": 24593.77, "unit": "tokens/s"}
    assert metrics["request_rate"] == {"value": 80.25, "unit": "requests/s"}
    assert any("24593.77 from mlperf_log_summary.txt" in w for w in item.warnings)


def test_a_whole_number_detail_value_agrees_with_the_summary_to_its_printed_precision(tmp_path):
    records = {**OFFLINE, "result_samples_per_second": 632229}
    item = _only(submission_tree(tmp_path, records=records, summary={"Samples per second": "632229.06"}))
    assert item.status == "ready", item.errors
    assert item.document["metrics"]["throughput"]["value"] == 632229.06  # the summary's, more precise


def test_a_real_disagreement_between_summary_and_detail_still_refuses(tmp_path):
    item = _only(submission_tree(tmp_path, summary={"Samples per second": "1300.5"}))
    assert item.status == "refused" and any("disagrees" in e for e in item.errors)


def test_gb_memory_is_read_as_written_and_flagged(tmp_path):
    item = _only(submission_tree(tmp_path))
    assert item.document["system"]["accelerators"][0]["memory_gib"] == 24e9 / 2**30
    assert any("'24 GB' read as 22.351741790771484 GiB: GB as written (SI, 10^9 bytes)" in w for w in item.warnings)
    assert "SI units" in item.document["system"]["notes"]["import.memory_units"]


RETINANET = """loading annotations into memory...
Done (t=0.51s)
DONE (t=43.45s).
 Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.374
mAP=37.412%
hash=abc
"""


def test_retinanet_accuracy_is_the_map_line_not_the_timing(tmp_path):
    root = submission_tree(tmp_path, benchmark="retinanet")
    _accuracy(root, "retinanet", "Offline", RETINANET)
    quality = _only(tmp_path).document["metrics"]["quality"]
    assert quality["metric"] == "mAP" and quality["value"] == 37.412 and "t" not in quality["values"]
    assert quality["reference_value"] == 37.55 and quality["target_ratio"] == 0.99 and quality["passed"] is True


def test_bert_accuracy_is_f1_not_exact_match(tmp_path):
    root = submission_tree(tmp_path, benchmark="bert-99.9")
    _accuracy(root, "bert-99.9", "Offline", '{"exact_match": 83.1, "f1": 90.5}\nReading examples...\nhash=x\n')
    quality = _only(tmp_path).document["metrics"]["quality"]
    assert (quality["metric"], quality["value"], quality["target_ratio"]) == ("F1", 90.5, 0.999)
    assert quality["passed"] is False  # 90.5 < 90.874 × 0.999


def test_sdxl_fid_and_clip_are_judged_against_their_window(tmp_path):
    root = submission_tree(tmp_path, benchmark="stable-diffusion-xl")
    _accuracy(
        root,
        "stable-diffusion-xl",
        "Offline",
        # v4.1's checker reads unquoted numbers only ('CLIP_SCORE':\s([\d.]+)); later rounds accept quotes
        "Accuracy Results: {'FID_SCORE': 23.5, 'CLIP_SCORE': 31.7}\nhash=y\n",
    )
    quality = _only(tmp_path).document["metrics"]["quality"]
    assert quality["values"] == {"FID_SCORE": 23.5, "CLIP_SCORE": 31.7}
    assert quality["metric"] == "CLIP_SCORE" and quality["passed"] is True and quality["target_ratio"] is None


def test_a_nested_results_dict_spread_over_lines_is_read(tmp_path):
    root = submission_tree(tmp_path, benchmark="stable-diffusion-xl")
    _accuracy(
        root,
        "stable-diffusion-xl",
        "Offline",
        "{\n    'accuracy_results': {\n        'CLIP_SCORE': 31.75,\n"
        "        'FID_SCORE': 23.4,\n        'scenario': 'TestScenario.Offline'\n    },\n}\nhash=n\n",
    )
    quality = _only(tmp_path).document["metrics"]["quality"]
    assert quality["values"] == {"CLIP_SCORE": 31.75, "FID_SCORE": 23.4} and quality["passed"] is True


def test_mixtral_results_dict_over_several_lines_is_read_line_by_line_as_the_checker_reads_it(tmp_path):
    records = {**OFFLINE, "result_tokens_per_second": 43210.5}  # mixtral publishes tokens/s
    summary = {"Samples per second": "1234.5", "Tokens per second": "43210.5"}
    root = submission_tree(tmp_path, benchmark="mixtral-8x7b", records=records, summary=summary)
    text = (
        "{'python': 10, 'cpp': 9} {'python': 12, 'cpp': 11}\nResults\n{'rouge1': 45.5, 'rouge2': 23.3,\n"
        " 'rougeL': 30.4, 'gsm8k': 73.5,\n 'mbxp': 60.0, 'tokens_per_sample': 144.0}\nhash=z\n"
    )
    _accuracy(root, "mixtral-8x7b", "Offline", text)
    item = _only(tmp_path)
    quality = item.document["metrics"]["quality"]
    assert quality["values"]["mbxp_accuracy"] == 60.0 and quality["value"] == 45.5 and quality["passed"] is True
    assert list(quality["values"]) == [
        "ROUGE1",
        "ROUGE2",
        "ROUGEL",
        "TOKENS_PER_SAMPLE",
        "gsm8k_accuracy",
        "mbxp_accuracy",
    ]


def test_an_accuracy_file_without_the_metric_keeps_the_run_and_flags_it(tmp_path):
    root = submission_tree(tmp_path)
    _accuracy(root, "resnet50", "Offline", "Processed 5000 in 167.5s\nhash=q\n")
    item = _only(tmp_path)
    assert item.status == "ready" and "quality" not in item.document["metrics"]
    assert any("accuracy.txt has no acc value" in w for w in item.warnings)


def test_3d_unet_dice_is_the_mean(tmp_path):
    root = submission_tree(tmp_path, benchmark="3d-unet-99")
    _accuracy(root, "3d-unet-99", "Offline", "Accuracy: mean = 0.86114, kidney = 0.9347, tumor = 0.7876\nhash=d\n")
    quality = _only(tmp_path).document["metrics"]["quality"]
    assert quality["metric"] == "DICE" and quality["value"] == 0.86114 and quality["values"] == {"DICE": 0.86114}


def test_a_singlestream_log_in_an_offline_folder_is_imported_as_mlperfs_inferred_result(tmp_path):
    records = {
        "early_stopping_latency_ss": 812345,
        "result_min_latency_ns": 500000,
        "result_max_latency_ns": 900000,
        "result_mean_latency_ns": 700000,
    }
    item = _only(submission_tree(tmp_path, folder="Offline", scenario="SingleStream", records=records, summary={}))
    # MLPerf's rule reads result_qps_without_loadgen_overhead, which this log lacks: refused, naming the record
    assert item.status == "refused" and any("result_qps_without_loadgen_overhead" in e for e in item.errors)
    records["result_qps_without_loadgen_overhead"] = 1428.57
    again = tmp_path / "again"
    item = _only(submission_tree(again, folder="Offline", scenario="SingleStream", records=records, summary={}))
    assert item.status == "ready", item.errors
    assert item.document["metrics"]["throughput"] == {"value": 1428.57, "unit": "samples/s"}
    assert item.document["provenance"]["origin"]["derivation"]["from_scenario"] == "SingleStream"


def test_division_category_and_availability_are_normalised_and_unknown_words_kept(tmp_path):
    root = submission_tree(tmp_path)
    _system(root, status="RDI", system_type="datacenter, edge", division="Closed")
    origin = _only(tmp_path).document["provenance"]["origin"]
    assert (origin["division"], origin["category"], origin["availability"]) == ("closed", "datacenter,edge", "research")
    _system(root, status="soon")
    item = _only(tmp_path)
    assert item.document["provenance"]["origin"]["availability"] == "soon"
    assert any("'soon' is not one of" in w for w in item.warnings)


# --- MLPerf Training -----------------------------------------------------------------------------------------


def _training_run(path: Path, start: int, stop: int | None, status: str = "success") -> None:
    records = [
        {"key": "submission_org", "value": "Acme"},
        {"key": "submission_division", "value": "closed"},
        {"key": "submission_status", "value": "onprem"},
        {"key": "global_batch_size", "value": 256},
        {"key": "run_start", "value": None, "time_ms": start},
        {"key": "eval_accuracy", "value": 0.759, "time_ms": start + 5},
    ]
    if stop is not None:
        records.append({"key": "run_stop", "value": None, "time_ms": stop, "metadata": {"status": status}})
    lines = ["framework banner, not a record"]
    lines += [":::MLLOG " + json.dumps({"namespace": "", "time_ms": 1, **r}) for r in records]
    path.write_text("\n".join(lines) + "\n")


def _training_tree(tmp_path: Path, minutes: list[float | None]) -> Path:
    root = tmp_path / "training_results_v4.0" / "Acme"
    _system(root, status="onprem")
    folder = root / "results" / SYSTEM / "resnet"
    folder.mkdir(parents=True)
    for n, value in enumerate(minutes):
        start = 1_700_000_000_000 + n * 10_000_000
        _training_run(folder / f"result_{n}.txt", start, None if value is None else start + int(value * 60_000))
    return tmp_path / "training_results_v4.0"


def test_a_training_result_is_scored_by_mlperfs_olympic_mean(tmp_path):
    tree = _training_tree(tmp_path, [10.0, 12.0, 11.0, 30.0, 9.0])
    assert mlperf_training.is_training_tree(tree)
    plan = mlperf_training.parse_tree(tree)
    item = plan.items[0]
    assert item.status == "ready", item.errors
    ttq = item.document["metrics"]["time_to_quality"]
    assert ttq["seconds"] == (10.0 + 12.0 + 11.0) * 60 / 3 and ttq["runs"] == 3
    origin = item.document["provenance"]["origin"]
    assert (origin["round"], origin["availability"], origin["kind"]) == ("v4.0", "available", "mlperf-training")
    assert [r["used"] for r in origin["runs"]] == [True, True, True, False, False]


def test_one_failed_training_run_is_dropped_as_the_slowest(tmp_path):
    plan = mlperf_training.parse_tree(_training_tree(tmp_path, [10.0, 12.0, 11.0, None, 9.0]))
    assert plan.items[0].document["metrics"]["time_to_quality"]["seconds"] == 11.0 * 60


def test_two_failed_training_runs_leave_no_score_and_refuse(tmp_path):
    plan = mlperf_training.parse_tree(_training_tree(tmp_path, [10.0, None, 11.0, None, 9.0]))
    assert plan.items[0].status == "refused" and "no MLPerf score" in plan.items[0].errors[0]


# --- under the round rules: what they do not cover is refused by name; open-division mapping; new precisions


def _measurements(root: Path, benchmark: str, weights: str) -> None:
    path = root / "measurements" / SYSTEM / benchmark / "Offline" / f"{SYSTEM}_Offline.json"
    path.write_text(json.dumps({"weight_data_types": weights, "input_data_types": "int32"}))


def test_a_benchmark_the_round_does_not_know_is_refused_with_the_rule_named(tmp_path):
    submission_tree(tmp_path, benchmark="gpt-oss-120b")  # loadgen 4.1: round v4.1 has no gpt-oss
    item = _only(tmp_path)
    assert item.status == "refused"
    assert any(
        "round v4.1 rules have no benchmark 'gpt-oss-120b'" in e and "source mlcommons/inference@" in e
        for e in item.errors
    )
    assert all(f.status != "error" for f in item.files)  # no file is to blame


def test_a_round_without_rules_refuses_the_import_listing_the_rounds_known(tmp_path):
    submission_tree(tmp_path)
    plan = mlperf.parse_tree(tmp_path, round_name="v3.1")
    assert plan.errors and "rules are known for v4.0, v4.1, v5.0, v5.1, v6.0, v6.1" in plan.errors[0]
    assert [i.status for i in plan.items] == ["refused"]


def test_open_division_names_map_through_model_mapping_json(tmp_path):
    root = submission_tree(tmp_path, benchmark="llama3_1-70b-fp8_dyn")
    records = root / "results" / SYSTEM / "llama3_1-70b-fp8_dyn" / "Offline" / "performance" / "run_1"
    detail = records / "mlperf_log_detail.txt"
    detail.write_text(detail.read_text() + ':::MLLOG {"key": "result_tokens_per_second", "value": 4321.5}\n')
    (root / "model_mapping.json").write_text(json.dumps({"llama3_1-70b-fp8_dyn": "llama2-70b-99.9"}))
    item = _only(tmp_path, round_name="v5.1")
    assert item.status == "ready", item.errors
    origin = item.document["provenance"]["origin"]
    assert (
        origin["mapped_benchmark"] == "llama2-70b-99.9" and item.document["workload"]["name"] == "llama3_1-70b-fp8_dyn"
    )
    assert item.document["metrics"]["throughput"] == {"value": 4321.5, "unit": "tokens/s"}  # llama2-70b's figure
    assert "model_mapping.json" in origin["files"]


def test_fp4_and_mixed_schemes_are_precision_words(tmp_path):
    root = submission_tree(tmp_path)
    _measurements(root, "resnet50", "fp4")
    precision = _only(tmp_path).document["precision"]
    assert precision["weights"] == "fp4" and "fp4 variant" in precision["quantization"]["notes"]
    _measurements(root, "resnet50", "W4A8")
    precision = _only(tmp_path).document["precision"]
    assert (precision["weights"], precision["activations"]) == ("int4", "int8")
    assert precision["quantization"]["method"] == "W4A8"
    _measurements(root, "resnet50", "MXFP4")
    assert _only(tmp_path).document["precision"]["weights"] == "mxfp4"


def test_a_todo_in_user_conf_keeps_the_result_with_a_warning(tmp_path):
    root = submission_tree(tmp_path)
    (root / "measurements" / SYSTEM / "resnet50" / "Offline" / "user.conf").write_text("TODO\n")
    item = _only(tmp_path)
    assert item.status == "ready", item.errors
    assert any("user.conf line 1 is not 'key = value' ('TODO')" in w for w in item.warnings)


def test_documents_name_their_protocol_version_and_rules(tmp_path):
    root = submission_tree(tmp_path)
    _accuracy(root, "resnet50", "Offline", "accuracy=76.1%, good=38050, total=50000\nhash=r\n")
    doc = _only(tmp_path, round_name="v6.0").document
    assert doc["protocol"] == "benchreg.submission/1.1"
    origin = doc["provenance"]["origin"]
    assert origin["rules_source"].endswith("tools/submission/submission_checker/constants.py MODEL_CONFIG[v6.0]")
    assert origin["mapped_benchmark"] == "resnet"  # the checker's model_mapping: resnet50 -> resnet
    assert doc["metrics"]["quality"]["values"] == {"acc": 76.1} and doc["metrics"]["quality"]["passed"] is True
