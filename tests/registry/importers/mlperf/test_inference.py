"""The MLPerf importer, tested on the real published sample tree in ../shared/data/mlperf/.

The expectations are computed here independently of the importer (regexes over the summary, plain JSON
over the detail log) so that 'every number equals the source' is checked, not assumed.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import protocol
from registry.importers import mlperf, units
from registry.importers.mlperf.rules import weights_format

DATA = Path(__file__).resolve().parents[4] / ".." / "shared" / "data" / "mlperf"
SAMPLE = DATA / "inference_sample1_AMD_v5.1"
SYSTEM = "8xMI300X_2xEPYC_9575F"
BENCH = "llama2-70b-99"
KEYS = [f"{SYSTEM}/{BENCH}/{s}" for s in ("Interactive", "Offline", "Server")]

pytestmark = pytest.mark.skipif(
    not SAMPLE.is_dir(),
    reason=f"MLPerf sample tree not found at {SAMPLE.resolve()} "
    "(it lives beside the project in ../shared/data/mlperf/)",
)


@pytest.fixture(scope="module")
def plan() -> mlperf.ImportPlan:
    return mlperf.parse_tree(SAMPLE)


def _doc(plan: mlperf.ImportPlan, scenario: str) -> dict[str, Any]:
    item = next(i for i in plan.items if i.key.endswith("/" + scenario))
    assert item.document is not None, item.errors
    return item.document


def _scenario_dir(root: Path, scenario: str, system: str = SYSTEM) -> Path:
    return root / "results" / system / BENCH / scenario


# --- independent readers of the source files ---------------------------------------------------------------


def _summary(scenario: str) -> dict[str, str]:
    text = (_scenario_dir(SAMPLE, scenario) / "performance/run_1/mlperf_log_summary.txt").read_text()
    return {m[1].strip(): m[2] for m in re.finditer(r"^([^:\n]+?)\s*:\s*(\S+)\s*$", text, re.MULTILINE)}


def _detail(scenario: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in (_scenario_dir(SAMPLE, scenario) / "performance/run_1/mlperf_log_detail.txt").read_text().splitlines():
        record = json.loads(line.removeprefix(":::MLLOG "))
        out.setdefault(record["key"], record["value"])
    return out


def _finer(printed: str, logged: float) -> float:
    """The summary's printed value where it has more significant digits than the detail log's, else the log's."""
    digits = len(Decimal(printed).normalize().as_tuple().digits)
    return float(printed) if digits > len(Decimal(str(logged)).normalize().as_tuple().digits) else logged


def _expected_numbers(scenario: str) -> dict[str, float | int]:
    """pointer -> the number the source files give for it (ns converted by / 1e6)."""
    s, d = _summary(scenario), _detail(scenario)
    system = json.loads((SAMPLE / "systems" / f"{SYSTEM}.json").read_text())
    accuracy = ast.literal_eval(
        next(
            line
            for line in (_scenario_dir(SAMPLE, scenario) / "accuracy/accuracy.txt").read_text().splitlines()
            if line.startswith("{")
        )
    )
    count = d["result_query_count"] * d["generated_samples_per_query"]
    exp: dict[str, float | int] = {
        "/workload/shape/batch_size": 1,
        "/workload/dataset/samples": d["qsl_reported_total_count"],
        "/conditions/window/iterations": count,
        "/conditions/window/repetitions": 1,
        "/system/nodes": system["number_of_nodes"],
        "/system/accelerators/0/count": system["accelerators_per_node"] * system["number_of_nodes"],
        "/system/accelerators/0/memory_gib": 192e9 / 2**30,  # "192 GB" as written: 192 x 10^9 bytes
        "/system/host/memory_gib": 1.5 * 1024,  # "1.5TiB"
        "/system/host/sockets": system["host_processors_per_node"],
        "/metrics/quality/value": accuracy["rouge1"],
        "/metrics/quality/reference_value": 44.4312,
        "/metrics/quality/target_ratio": 0.99,
        # MLPerf's pass bounds as its submission checker computes them (reference × 0.99, tokens ±10%), under
        # the checker's metric names (MODEL_CONFIG["v5.1"]["accuracy-target"] / ["accuracy-upper-limit"])
        "/provenance/origin/targets/ROUGE1/min": 44.4312 * 0.99,
        "/provenance/origin/targets/ROUGE2/min": 22.0352 * 0.99,
        "/provenance/origin/targets/ROUGEL/min": 28.6162 * 0.99,
        "/provenance/origin/targets/TOKENS_PER_SAMPLE/min": 294.45 * 0.9,
        "/provenance/origin/targets/TOKENS_PER_SAMPLE/max": 294.45 * 1.1,
    }
    checker_names = {
        "rouge1": "ROUGE1",
        "rouge2": "ROUGE2",
        "rougeL": "ROUGEL",
        "tokens_per_sample": "TOKENS_PER_SAMPLE",
    }
    exp.update({f"/metrics/quality/values/{checker_names[k]}": accuracy[k] for k in checker_names})
    families = {
        "latency_ms": ("{} latency (ns)", "{} percentile latency (ns)"),
        "ttft_ms": ("{} First Token latency (ns)", "{} percentile first token latency (ns)"),
        "tpot_ms": ("{} Time to Output Token (ns)", "{} percentile time to output token (ns)"),
    }
    for metric, (stat, pct) in families.items():
        if stat.format("Min") not in s:
            continue
        exp[f"/metrics/{metric}/count"] = count
        for name in ("Min", "Mean", "Max"):
            exp[f"/metrics/{metric}/{name.lower()}"] = int(s[stat.format(name)]) / 1e6
        for text, key in mlperf.PERCENTILES.items():
            exp[f"/metrics/{metric}/{key}"] = int(s[pct.format(text)]) / 1e6
    # the published rate from the more precise of its two printings: the summary's 2 decimals (24593.77) where the
    # detail log prints 6 significant digits (24593.8)
    if scenario == "Offline":
        exp["/metrics/throughput/value"] = _finer(s["Tokens per second"], d["result_tokens_per_second"])
        exp["/metrics/request_rate/value"] = d["result_samples_per_second"]
    else:
        exp["/metrics/throughput/value"] = _finer(
            s["Completed tokens per second"], d["result_completed_tokens_per_second"]
        )
        exp["/metrics/request_rate/value"] = d["result_completed_samples_per_sec"]
        exp["/scenario/latency_slo_ms/ttft_p99"] = d["requested_server_ttft_latency"] / 1e6
        exp["/scenario/latency_slo_ms/tpot_p99"] = d["requested_server_tpot_latency"] / 1e6
    for key, value in d.items():
        if (key.startswith("effective_") or key == "generated_samples_per_query") and not isinstance(value, bool):
            exp[f"/software/settings/loadgen.{key.removeprefix('effective_')}"] = value
    for line in (_scenario_dir(SAMPLE, scenario) / "user.conf").read_text().splitlines():
        key, _, value = line.partition("=")
        exp[f"/software/settings/user.conf:{key.strip()}"] = float(value) if "." in value else int(value)
    return exp


def _numbers(doc: Any, path: str = "") -> dict[str, float | int]:
    if isinstance(doc, dict):
        return {k: v for key, value in doc.items() for k, v in _numbers(value, f"{path}/{key}").items()}
    if isinstance(doc, list):
        return {k: v for i, value in enumerate(doc) for k, v in _numbers(value, f"{path}/{i}").items()}
    return {path: doc} if isinstance(doc, int | float) and not isinstance(doc, bool) else {}


# --- the sample tree ---------------------------------------------------------------------------------------


def test_it_finds_one_run_per_system_benchmark_and_scenario(plan: mlperf.ImportPlan) -> None:
    assert [item.key for item in plan.items] == KEYS
    assert all(item.errors == [] for item in plan.items)


def test_every_document_passes_the_protocol(plan: mlperf.ImportPlan) -> None:
    for item in plan.items:
        checked = protocol.check(item.document)
        assert checked.document["provenance"]["source"] == "import"


@pytest.mark.parametrize("scenario", ["Server", "Offline", "Interactive"])
def test_every_number_in_the_document_equals_the_source(plan: mlperf.ImportPlan, scenario: str) -> None:
    found, expected = _numbers(_doc(plan, scenario)), _expected_numbers(scenario)
    assert {p: v for p, v in found.items() if p not in expected} == {}, "numbers with no source"
    assert {p: (v, expected[p]) for p, v in found.items() if v != expected[p]} == {}


@pytest.mark.parametrize("scenario", ["Server", "Offline", "Interactive"])
def test_the_summary_agrees_with_the_numbers_taken_from_the_detail_log(plan: mlperf.ImportPlan, scenario: str) -> None:
    doc, s = _doc(plan, scenario), _summary(scenario)
    label = "Tokens per second" if scenario == "Offline" else "Completed tokens per second"
    # the detail log prints 6 significant digits, the summary 2 decimals: each may carry half a last digit
    assert abs(doc["metrics"]["throughput"]["value"] - float(s[label])) <= 0.05 + 0.005
    assert doc["metrics"]["latency_ms"]["p99"] == int(s["99.00 percentile latency (ns)"]) / 1e6


def test_latencies_are_converted_from_ns_to_ms_exactly(plan: mlperf.ImportPlan) -> None:
    latency = _doc(plan, "Server")["metrics"]["latency_ms"]
    assert latency["p99"] == 136069.232834 and latency["min"] == 980.187992
    for value, ns in ((latency["max"], 165057127340), (latency["p999"], 159705402675)):
        assert Decimal(repr(value)) == Decimal(ns).scaleb(-6)  # shortest decimal form is the exact quotient


def test_it_records_the_digest_of_every_file_it_used(plan: mlperf.ImportPlan) -> None:
    files = _doc(plan, "Server")["provenance"]["origin"]["files"]
    assert set(files) == {
        f"systems/{SYSTEM}.json",
        *(
            f"results/{SYSTEM}/{BENCH}/Server/{p}"
            for p in (
                "performance/run_1/mlperf_log_summary.txt",
                "performance/run_1/mlperf_log_detail.txt",
                "measurements.json",
                "accuracy/accuracy.txt",
                "TEST06/verify_accuracy.txt",
                "user.conf",
            )
        ),
    }
    for rel, digest in files.items():
        assert digest == "sha256:" + hashlib.sha256((SAMPLE / rel).read_bytes()).hexdigest()
    item = plan.items[2]
    assert {f.status for f in item.files} == {"used"} and all(len(f.sha256 or "") == 64 for f in item.files)


def test_it_records_the_origin_of_the_run(plan: mlperf.ImportPlan) -> None:
    doc = _doc(plan, "Server")
    origin = doc["provenance"]["origin"]
    assert (origin["round"], origin["submitter"], origin["division"], origin["category"]) == (
        "v5.1",
        "AMD",
        "closed",
        "datacenter",
    )
    assert (origin["system_id"], origin["benchmark"], origin["scenario"]) == (SYSTEM, BENCH, "Server")
    assert doc["provenance"]["runner"] == {"name": "mlperf-loadgen", "version": "5.1.0 @ 091d51f041"}
    assert doc["provenance"]["started_at"] == "2025-07-31T09:26:03Z"
    assert plan.round == "v5.1" and plan.round_source == "folder name"
    # the rules of v4.1, v5.0 and v5.1 define llama2-70b-99 Server alike (v4.0 published samples/s, not tokens/s)
    assert doc["workload"]["version"] == "mlperf-inference-v4.1"


def test_without_a_round_or_a_round_folder_the_loadgen_version_is_used_and_flagged(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / "tree")
    plan = mlperf.parse_tree(tmp_path / "tree")
    assert plan.round == "v5.1" and "loadgen" in plan.round_source
    assert all(any("taken from loadgen_version" in w for w in item.warnings) for item in plan.items)


def test_an_explicit_round_wins_and_is_reported() -> None:
    plan = mlperf.parse_tree(SAMPLE, round_name="5.0")
    assert plan.round == "v5.0" and plan.round_source == "argument"
    assert plan.items[0].document["provenance"]["origin"]["round"] == "v5.0"
    assert any("v5.1" in w for w in plan.warnings)  # the folder name says otherwise, and the report says so


def test_validity_flags_come_from_the_logs_and_the_compliance_test(plan: mlperf.ImportPlan) -> None:
    server = _doc(plan, "Server")["conditions"]
    assert server["validity"] == {
        "valid": True,
        "checks": {
            "performance_constraints_satisfied": True,
            "min_duration_satisfied": True,
            "min_queries_satisfied": True,
            "early_stopping_satisfied": True,
            "ttft_early_stopping": True,
            "tpot_early_stopping": True,
            "loadgen_no_errors": True,
            "test06_first_token": True,
            "test06_eos": True,
            "test06_sample_length": True,
        },
    }
    assert server["warmup"] is None and server["window"]["seconds"] is None  # not logged, so not claimed
    offline = _doc(plan, "Offline")
    assert "test06_first_token" not in offline["conditions"]["validity"]["checks"]  # "Skipped" is not a pass
    assert offline["provenance"]["origin"]["unparsed"]["TEST06.test06_first_token"] == "Skipped"


def test_precision_is_taken_from_measurements_without_guessing_the_fp8_variant(plan: mlperf.ImportPlan) -> None:
    precision = _doc(plan, "Server")["precision"]
    assert precision["weights"] == "fp8" and precision["inputs"] == "int32"
    assert precision["activations"] == "unspecified"  # MLPerf does not report it
    assert precision["quantization"]["method"] == "quantization"
    assert "variant" in precision["quantization"]["notes"]


def test_scenarios_map_to_their_primary_metric_and_slos(plan: mlperf.ImportPlan) -> None:
    server, interactive, offline = (_doc(plan, s) for s in ("Server", "Interactive", "Offline"))
    assert (server["scenario"]["kind"], interactive["scenario"]["kind"], offline["scenario"]["kind"]) == (
        "server",
        "interactive",
        "offline",
    )
    assert interactive["scenario"]["latency_slo_ms"] == {"ttft_p99": 450.0, "tpot_p99": 40.0}
    assert server["scenario"]["latency_slo_ms"] == {"ttft_p99": 2000.0, "tpot_p99": 200.0}
    for doc in (server, interactive, offline):
        assert doc["metrics"]["primary"] == "throughput" and doc["metrics"]["throughput"]["unit"] == "tokens/s"
        assert "target_qps" not in doc["scenario"]  # the submitter's knob, kept in software.settings
    assert "ttft_ms" not in offline["metrics"] and "tpot_ms" in server["metrics"]


def test_accuracy_is_judged_against_99_percent_of_the_published_reference(plan: mlperf.ImportPlan) -> None:
    quality = _doc(plan, "Server")["metrics"]["quality"]
    assert (quality["metric"], quality["reference_precision"], quality["passed"]) == ("ROUGE1", None, True)
    assert list(quality["values"]) == ["ROUGE1", "ROUGE2", "ROUGEL", "TOKENS_PER_SAMPLE"]  # the checker's order


def test_system_fields_are_typed_and_what_cannot_be_is_kept_as_text(plan: mlperf.ImportPlan) -> None:
    doc = _doc(plan, "Server")
    system, software = doc["system"], doc["software"]
    assert system["accelerators"][0]["vendor"] == "AMD" and system["cooling"] is None  # "N/A"
    assert "cores" not in system["host"]
    assert doc["provenance"]["origin"]["unparsed"]["system.host_processor_core_count"] == "64"
    assert system["notes"]["host_memory_configuration"].startswith("24x 64GB")
    assert software["os"] == {"name": "Ubuntu", "version": "24.04"}
    assert software["frameworks"] == {
        "vllm": "0.9.0.2.dev108+g71faa1880.d20250730.rocm641",
        "torch": "2.7.0+gitf717b2a",
    }
    assert software["runtimes"] == {"rocm": "6.4.1.60401-83~22.04"}
    assert software["packages"] == {"hipblaslt": "0.15.0-aa0bda7b", "flash-attn": "2.7.2"}


def test_runs_of_one_round_and_benchmark_differ_only_in_the_scenario(plan: mlperf.ImportPlan) -> None:
    server, interactive = _doc(plan, "Server"), _doc(plan, "Interactive")
    assert {**server["workload"], "version": None} == {**interactive["workload"], "version": None}
    assert server["precision"] == interactive["precision"]
    # each scenario's version is the first round defining it as v5.1 does: Interactive is new in v5.1
    assert (server["workload"]["version"], interactive["workload"]["version"]) == (
        "mlperf-inference-v4.1",
        "mlperf-inference-v5.1",
    )
    assert server["scenario"] != interactive["scenario"]  # a comparison of the two is refused on /scenario


def test_parsing_twice_or_from_another_place_gives_identical_digests(plan: mlperf.ImportPlan, tmp_path: Path) -> None:
    again = mlperf.parse_tree(SAMPLE)
    moved = tmp_path / "inference_results_v5.1" / "closed" / "AMD"
    shutil.copytree(SAMPLE, moved)
    elsewhere = mlperf.parse_tree(tmp_path / "inference_results_v5.1")
    digests = [[protocol.check(i.document).digest for i in p.items] for p in (plan, again, elsewhere)]
    assert digests[0] == digests[1] == digests[2]
    assert elsewhere.items[0].warnings == plan.items[0].warnings  # closed/AMD agrees with the description


def test_the_report_lists_every_file(plan: mlperf.ImportPlan) -> None:
    text = mlperf.render_report(plan)
    assert "3 of 3 runs ready" in text and "mlperf_log_detail.txt" in text and "host_processor_core_count" in text
    data = json.loads(json.dumps(mlperf.report_dict(plan)))
    assert [i["status"] for i in data["items"]] == ["ready"] * 3


# --- broken and partial trees ------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the sample with a second, identical system, so one system can break and the other stay."""
    root = tmp_path / "tree"
    shutil.copytree(SAMPLE, root)
    shutil.copy(root / "systems" / f"{SYSTEM}.json", root / "systems" / "twin.json")
    shutil.copytree(root / "results" / SYSTEM, root / "results" / "twin")
    return root


def _truncate_summary(root: Path) -> set[str]:
    path = _scenario_dir(root, "Server") / "performance/run_1/mlperf_log_summary.txt"
    path.write_text(path.read_text()[:600])
    return {"mlperf_log_summary.txt"}


def _corrupt_measurements(root: Path) -> set[str]:
    (_scenario_dir(root, "Offline") / "measurements.json").write_text('{"weight_data_types": "fp8",')
    return {"measurements.json"}


def _remove_performance(root: Path) -> set[str]:
    shutil.rmtree(_scenario_dir(root, "Interactive") / "performance")
    return {"mlperf_log_summary.txt", "mlperf_log_detail.txt"}  # both required, both reported missing


def _break_detail_line(root: Path) -> set[str]:
    path = _scenario_dir(root, "Server") / "performance/run_1/mlperf_log_detail.txt"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:60]) + lines[60][:40] + "\n" + "".join(lines[61:]))
    return {"mlperf_log_detail.txt"}


@pytest.mark.parametrize(
    "breaker, scenario",
    [
        (_truncate_summary, "Server"),
        (_corrupt_measurements, "Offline"),
        (_remove_performance, "Interactive"),
        (_break_detail_line, "Server"),
    ],
)
def test_a_broken_file_refuses_only_its_run_and_says_why(tree: Path, breaker: Any, scenario: str) -> None:
    names = breaker(tree)
    plan = mlperf.parse_tree(tree)
    broken = f"{SYSTEM}/{BENCH}/{scenario}"
    assert len(plan.items) == 6
    for item in plan.items:
        if item.key == broken:
            assert item.document is None and item.errors
            assert {f.path.rsplit("/", 1)[-1] for f in item.files if f.status == "error"} == names
        else:
            assert item.errors == [] and protocol.check(item.document)


def test_a_missing_system_description_refuses_that_systems_runs_only(tree: Path) -> None:
    (tree / "systems" / "twin.json").unlink()
    plan = mlperf.parse_tree(tree)
    refused = sorted(i.key for i in plan.items if i.document is None)
    assert refused == [f"twin/{BENCH}/{s}" for s in ("Interactive", "Offline", "Server")]
    item = next(i for i in plan.items if i.key.startswith("twin/"))
    assert [(f.path, f.sha256, f.status) for f in item.files if f.status == "error"] == [
        ("systems/twin.json", None, "error")
    ]
    assert sum(1 for i in plan.items if i.document) == 3


def test_a_summary_that_disagrees_with_the_detail_log_is_refused(tree: Path) -> None:
    path = _scenario_dir(tree, "Server") / "performance/run_1/mlperf_log_summary.txt"
    path.write_text(path.read_text().replace(": 24593.77", ": 24999.77"))  # both lines that print it
    item = next(i for i in mlperf.parse_tree(tree).items if i.key == f"{SYSTEM}/{BENCH}/Server")
    assert item.document is None and "disagrees" in item.errors[0]


def test_tail_percentiles_are_omitted_when_there_are_too_few_samples(tree: Path) -> None:
    path = _scenario_dir(tree, "Server") / "performance/run_1/mlperf_log_detail.txt"
    path.write_text(
        path.read_text().replace('"result_query_count", "value": 73728', '"result_query_count", "value": 500')
    )
    doc = next(i for i in mlperf.parse_tree(tree).items if i.key == f"{SYSTEM}/{BENCH}/Server").document
    assert doc is not None
    latency = doc["metrics"]["latency_ms"]
    assert latency["count"] == 500 and {"p90", "p95", "p97"} <= set(latency) and not {"p99", "p999"} & set(latency)


def test_unknown_files_and_folders_are_reported_as_skipped(tree: Path) -> None:
    (tree / "README.md").write_text("notes")
    (tree / "results" / SYSTEM / BENCH / "Weird").mkdir()
    (tree / "results" / SYSTEM / BENCH / "Weird" / "x.txt").write_text("x")
    (_scenario_dir(tree, "Server") / "extra.log").write_text("x")
    plan = mlperf.parse_tree(tree)
    assert {f.path for f in plan.skipped} >= {"README.md"}
    weird = next(i for i in plan.items if i.key == f"{SYSTEM}/{BENCH}/Weird")
    assert weird.status == "skipped" and "not an MLPerf scenario folder" in (weird.skipped or "")
    assert [f.path for f in weird.files] == [f"results/{SYSTEM}/{BENCH}/Weird/x.txt"]
    server = next(i for i in plan.items if i.key == f"{SYSTEM}/{BENCH}/Server")
    assert any(f.path.endswith("extra.log") and f.status == "skipped" for f in server.files)


def test_a_folder_without_results_is_reported_not_raised(tmp_path: Path) -> None:
    plan = mlperf.parse_tree(tmp_path)
    assert plan.items == [] and plan.errors


# --- the unit parser ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, gib",
    [
        # strings as the shared rounds' systems/*.json write them: GB/TB are SI (10^9, 10^12 bytes), GiB/TiB binary
        ("192 GB", 192e9 / 2**30),
        ("80GB", 80e9 / 2**30),
        ("180\u2009GB", 180e9 / 2**30),  # a thin space between number and unit
        ("23.5135498046875 GB", 23.5135498046875e9 / 2**30),
        ("81559 MiB", 81559 / 1024),
        ("1.5TiB", 1536),
        ("1.536TiB", 1.536 * 1024),
        ("960 GiB", 960),
        ("2 TB", 2e12 / 2**30),
        ("2\u202fTB", 2e12 / 2**30),  # a narrow no-break space
        ("2304GB", 2304e9 / 2**30),
        ("512 MiB", 0.5),
        ("202G", None),  # bare G: GB or GiB, not said
        ("3 TB DDR5", None),
        ("8x3TiB", None),
        ("192 GB (MI300X), 256 GB (MI325X)", None),
        ("about 1 TB", None),
        ("1.5 PB", None),
    ],
)
def test_memory_sizes_are_read_as_written_with_a_closed_unit_table(text: str, gib: float | None) -> None:
    assert units.parse_memory_gib(text) == gib


def test_an_si_gigabyte_is_not_a_gibibyte() -> None:
    assert units.parse_memory_gib("1 GB") == 0.931322574615478515625  # exactly 10^9 / 2^30
    assert units.parse_memory_gib("1 GiB") == 1
    assert units.parse_memory_gib("1 TB") == 931.322574615478515625


@pytest.mark.parametrize(
    "word, weights",
    [
        # words of weight_data_types in measurements.json and in MLCommons' tables (shared rounds and published ones)
        ("fp8", "fp8"),
        ("float8", "fp8"),  # the variant unstated, like fp8
        ("FLOAT8", "fp8"),
        ("float8_e4m3fn", "fp8-e4m3"),
        ("fp4", "fp4"),
        ("mxfp4", "mxfp4"),
        ("INT8", "int8"),
        ("fp32", "fp32"),
        ("float32", "fp32"),
        ("bfloat16", "bf16"),
        ("w4a8", "int4"),
        ("UINT4", None),  # unsigned 4-bit storage with a zero point: not the signed int4 of the list
        ("UNSET", None),
        ("clip1:fp32,clip2:fp32,unet:fp8,vae:fp32", None),
    ],
)
def test_precision_words_map_to_protocol_formats_where_they_name_one(word: str, weights: str | None) -> None:
    assert weights_format(word) == weights


@pytest.mark.parametrize("text, mhz", [("2.1 GHz", 2100), ("1980MHz", 1980), ("fast", None), ("3 GHz turbo", None)])
def test_frequencies_are_parsed_to_mhz(text: str, mhz: float | None) -> None:
    assert units.parse_frequency_mhz(text) == mhz


def test_version_lists_keep_what_they_cannot_split() -> None:
    assert units.split_versions("vLLM 0.9.0, custom build, TensorRT 10.1") == (
        [("vLLM", "0.9.0"), ("TensorRT", "10.1")],
        ["custom build"],
    )
