"""MLPerf's inferred edge results: Offline and MultiStream figures derived from another scenario's run are imported as
documents labelled derived, with MLPerf's rule, linked to the measured run's document by digest."""

from __future__ import annotations

import copy
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

import protocol
from registry.importers import mlperf
from registry.importers.mlperf import power
from registry.importers.mlperf.published import PublishedRow
from registry.importers.mlperf.referee import compare
from registry.importers.mlperf.rules import round_rules

from .power_tree import (
    AVERAGE_W,
    BENCHMARK,
    QUERIES,
    SINGLE_STREAM,
    SUBMITTER,
    SYSTEM,
    WINDOW_S,
    edge_submission,
    result_folder,
    system,
)

ROUND = Path(__file__).resolve().parents[4] / ".." / "shared" / "data" / "mlperf-rounds" / "inference_v5.1"
LENOVO = "open/Lenovo"
SE100 = "se100_ultra7_255h"


def _items(tree: Path) -> dict[str, mlperf.ImportItem]:
    return {i.key.rsplit("/", 1)[-1]: i for i in mlperf.parse_tree(tree, round_name="v5.1").items}


def test_multistream_and_offline_are_derived_from_the_singlestream_run_by_mlperfs_rules(tmp_path):
    edge_submission(tmp_path)
    items = _items(tmp_path)  # the tree root: locations are relative to it
    measured = items["SingleStream"].document
    multi, offline = items["MultiStream"].document, items["Offline"].document
    assert measured and multi and offline, {k: i.errors or i.skipped for k, i in items.items()}
    assert "derivation" not in measured["provenance"]["origin"]
    # MultiStream: 8 × the SingleStream early-stopping p99 estimate, ns -> ms
    estimate = multi["metrics"]["latency_estimate_ms"]
    assert estimate["value"] == 8 * SINGLE_STREAM["early_stopping_latency_ms"] / 1e6 == 42.4
    assert estimate["percentile"] == "p99" and multi["metrics"]["primary"] == "latency_estimate_ms"
    assert multi["scenario"]["kind"] == "multi-stream" and multi["workload"]["shape"]["batch_size"] == 8
    assert "latency_ms" not in multi["metrics"] and "throughput" not in multi["metrics"]
    # Offline: the SingleStream run's qps without LoadGen's overhead, in samples/s
    assert offline["metrics"]["throughput"] == {"value": 200.25, "unit": "samples/s"}
    assert offline["scenario"]["kind"] == "offline" and "latency_estimate_ms" not in offline["metrics"]
    for doc, folder in ((multi, "MultiStream"), (offline, "Offline")):
        derivation = doc["provenance"]["origin"]["derivation"]
        assert derivation["kind"] == "mlperf-inferred" and derivation["from_scenario"] == "SingleStream"
        assert derivation["from_digest"] == protocol.digest(measured)
        assert derivation["from_location"] == f"closed/{SUBMITTER}/results/{SYSTEM}/{BENCHMARK}/SingleStream"
        assert doc["provenance"]["origin"]["scenario"] == folder and doc["protocol"].endswith("/1.1")
        assert protocol.errors(doc) == []
    assert "8 x the SingleStream run's early-stopping" in multi["provenance"]["origin"]["derivation"]["rule"]
    assert "result_qps_without_loadgen_overhead" in offline["provenance"]["origin"]["derivation"]["rule"]


def test_an_inferred_results_power_is_the_measured_runs_and_multistream_publishes_eight_queries_worth(tmp_path):
    items = _items(edge_submission(tmp_path))
    energy = items["MultiStream"].document["metrics"]["energy"]
    assert energy == items["SingleStream"].document["metrics"]["energy"]
    published = power.mlperf_power_result(energy, "MultiStream", "SingleStream", QUERIES)
    assert published == pytest.approx(AVERAGE_W * WINDOW_S * 8 * 1000 / QUERIES, rel=1e-15)
    assert power.mlperf_power_result(energy, "Offline", "SingleStream", QUERIES) == energy["average_power_w"]


def test_offline_is_inferred_from_a_measured_multistream_run(tmp_path):
    root = tmp_path / "closed" / SUBMITTER
    system(root)
    records = {
        "result_query_count": 700,
        "generated_samples_per_query": 8,
        "effective_samples_per_query": 8,
        "early_stopping_latency_ms": 41000000,
        "result_min_query_latency_ns": 30000000,
        "result_mean_query_latency_ns": 32000000,
        "result_max_query_latency_ns": 45000000,
        "result_99.00_percentile_per_query_latency_ns": 40000000,
    }
    multi = result_folder(root, "MultiStream", "MultiStream", records, power=False)
    shutil.copytree(multi, root / "results" / SYSTEM / BENCHMARK / "Offline")
    measurements = root / "measurements" / SYSTEM / BENCHMARK
    (measurements / "Offline").mkdir()
    shutil.copy(
        measurements / "MultiStream" / f"{SYSTEM}_MultiStream.json", measurements / "Offline" / f"{SYSTEM}_Offline.json"
    )
    items = _items(tmp_path)
    offline = items["Offline"].document
    assert offline is not None, items["Offline"].errors
    # samples per query × 1000 / mean query latency in ms (32 ms): 250 samples/s
    assert offline["metrics"]["throughput"] == {"value": 250.0, "unit": "samples/s"}
    derivation = offline["provenance"]["origin"]["derivation"]
    assert derivation["from_scenario"] == "MultiStream"
    assert derivation["from_digest"] == protocol.digest(items["MultiStream"].document)


def test_a_datacenter_system_may_not_infer_and_is_refused_saying_so(tmp_path):
    root = edge_submission(tmp_path, inferred=("Offline",))
    system(root, system_type="datacenter")
    item = _items(tmp_path)["Offline"]
    assert item.status == "refused"
    assert any("only for edge systems" in e and "'datacenter'" in e for e in item.errors)


def test_an_inferred_folder_whose_log_is_not_the_measured_runs_is_refused(tmp_path):
    root = edge_submission(tmp_path, inferred=("Offline",))
    log = root / "results" / SYSTEM / BENCHMARK / "Offline" / "performance" / "run_1" / "mlperf_log_detail.txt"
    log.write_text(log.read_text().replace('"value": 200.25', '"value": 300.5'))
    item = _items(tmp_path)["Offline"]
    assert item.status == "refused"
    assert any("this log is not the" in e and "SingleStream folder's" in e for e in item.errors)


def test_without_the_measured_folder_an_inferred_folder_is_read_from_its_own_log_and_names_that_folder(tmp_path):
    root = edge_submission(tmp_path)
    shutil.rmtree(root / "results" / SYSTEM / BENCHMARK / "SingleStream")
    items = _items(tmp_path)
    for folder in ("MultiStream", "Offline"):
        item = items[folder]
        derivation = item.document["provenance"]["origin"]["derivation"] if item.document else {}
        assert item.status == "ready" and derivation["from_digest"] is None, (item.errors, item.skipped)
        assert derivation["from_location"].endswith(f"{BENCHMARK}/SingleStream")
        assert any("not in this tree" in w for w in item.warnings)


def test_an_inferred_folder_whose_measured_folder_was_refused_is_skipped_saying_why(tmp_path):
    root = edge_submission(tmp_path)
    (root / "systems" / f"{SYSTEM}.json").write_text("{}")  # every folder of the system is refused
    items = _items(tmp_path)
    assert items["SingleStream"].status == "refused"
    assert items["MultiStream"].status == "skipped" and "was refused" in (items["MultiStream"].skipped or "")


@pytest.fixture
def lenovo(tmp_path: Path) -> Path:
    """The trimmed v5.1 round's Lenovo SE100 (Core Ultra 7 255H) resnet50 results."""
    source = ROUND / LENOVO
    if not source.exists():
        pytest.skip("the shared trimmed v5.1 round is not beside this checkout")
    root = tmp_path / "inference_results_v5.1" / LENOVO
    for part in ("systems", "results", "measurements"):
        shutil.copytree(source / part, root / part, ignore=_other_systems)
    return root


def _other_systems(folder: str, names: list[str]) -> list[str]:
    top = Path(folder).name in ("results", "measurements")
    return [n for n in names if top and n != SE100] + [n for n in names if n.endswith(".json") and SE100 not in n]


def test_lenovo_se100_inferred_results_match_mlcommons_table_though_the_trimmed_round_lacks_singlestream(lenovo):
    items = _items(lenovo.parents[1])
    multi, offline = (items[f].document for f in ("MultiStream", "Offline"))
    assert multi and offline, {k: i.errors or i.skipped for k, i in items.items()}
    # MLCommons' summary_results.json (inference_results_v5.1): MultiStream 11.060112 ms, Offline 757.865 samples/s
    assert multi["metrics"]["latency_estimate_ms"]["value"] == pytest.approx(11.060112, abs=1e-12)
    assert offline["metrics"]["throughput"]["value"] == 757.865
    assert multi["provenance"]["origin"]["derivation"]["from_digest"] is None


def test_lenovo_se100_inferred_results_match_mlcommons_table_once_the_singlestream_folder_is_there(lenovo):
    # The published round has results/se100_ultra7_255h/resnet50/SingleStream/, byte-identical to the log MLPerf
    # copied into MultiStream/ and Offline/ (the trimmed round left it out); put it back as MLCommons publishes it.
    results = lenovo / "results" / SE100 / "resnet50"
    shutil.copytree(results / "MultiStream", results / "SingleStream")
    shutil.copytree(
        lenovo / "measurements" / SE100 / "resnet50" / "MultiStream",
        lenovo / "measurements" / SE100 / "resnet50" / "SingleStream",
    )
    items = _items(lenovo.parents[1])
    measured, multi, offline = (items[f].document for f in ("SingleStream", "MultiStream", "Offline"))
    assert measured and multi and offline, {k: i.errors or i.skipped for k, i in items.items()}
    # MLCommons' summary_results.json (inference_results_v5.1): MultiStream 11.060112 ms, Offline 757.865 samples/s
    assert multi["metrics"]["latency_estimate_ms"]["value"] == pytest.approx(11.060112, abs=1e-12)
    assert offline["metrics"]["throughput"]["value"] == 757.865
    for doc in (multi, offline):
        assert doc["provenance"]["origin"]["derivation"]["from_digest"] == protocol.digest(measured)
        assert doc["provenance"]["origin"]["derivation"]["from_location"].endswith(f"{SE100}/resnet50/SingleStream")


# --- Interactive results run as LoadGen's Server (any system), and how each round's table marks them -------------

V60 = ROUND.parent / "inference_v6.0"
GIGA = "closed/GigaComputing/results/G894-SD3-AAX7_B300-SXM-270GBx8_TRT/deepseek-r1/Interactive"


@pytest.mark.parametrize(
    ("round_name", "run", "folder", "allowed", "table"),
    [
        # the single-file checker (v4.0-v5.1) marks the three edge pairs only
        ("v5.1", "Server", "Interactive", "any", False),
        ("v5.1", "SingleStream", "Offline", "edge", True),
        ("v5.1", "Offline", "Offline", None, False),
        # the package checker (v6.0 on): every run whose scenario word differs from its folder's, case-sensitively
        ("v6.0", "Server", "Interactive", "any", True),
        ("v6.0", "SingleStream", "MultiStream", "edge", True),
        ("v6.0", "Offline", "Server", None, True),
        ("v6.1", "offline", "Offline", None, True),  # an endpoints run: config.yaml type 'offline'
        ("v6.1", "Server", "Server", None, False),
    ],
)
def test_the_round_data_says_which_runs_may_fill_a_folder_and_how_the_table_marks_them(
    round_name, run, folder, allowed, table
):
    rules = round_rules(round_name)
    assert rules.inferred_pair(run, folder) == allowed
    assert rules.table_inferred(run, folder) is table


@pytest.mark.skipif(not (V60 / GIGA).is_dir(), reason="the shared Inference v6.0 round is not beside the project")
def test_an_interactive_result_run_as_server_on_a_datacenter_system_is_measured_and_agrees_with_the_table():
    """MLCommons' v6.0 table writes inferred = 1 for it (results.py compares 'Server' with 'Interactive'); the
    checker allows the pair on every system (inferred_check), and the run is the Interactive folder's own."""
    submission = V60 / "closed" / "GigaComputing"
    item = next(i for i in mlperf.parse_tree(submission, round_name="v6.0").items if i.key.endswith("/Interactive"))
    doc = item.document
    assert doc is not None, item.errors
    assert doc["provenance"]["origin"]["category"] == "datacenter" and "derivation" not in doc["provenance"]["origin"]
    assert doc["scenario"]["kind"] == "interactive" and doc["software"]["settings"]["loadgen.scenario"] == "Server"
    row = PublishedRow(
        index=0,
        location=GIGA,
        version="v6.0",
        division="closed",
        availability="available",
        model="deepseek-r1",
        used_model="deepseek-r1",
        scenario="Interactive",
        result=Decimal(0),
        units="Tokens/s",
        accuracy={},
        accuracy_text="",
        inferred=True,
        has_power=False,
        weight_data_types="fp4",
    )
    assert not [d for d in compare(row, doc) if d.field == "inferred"]
    # the same result under v5.1's rules: that table marked such a result measured, so 'inferred' disagrees
    older = copy.deepcopy(doc)
    older["provenance"]["origin"]["round"] = "v5.1"
    assert [d.field for d in compare(row, older) if d.field == "inferred"] == ["inferred"]
