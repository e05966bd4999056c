"""MLPerf Inference v6.1 results measured by MLCommons' endpoints client (no LoadGen log): imported through the
command as MLCommons' checker reads them (commit d1515aba on), on an authored tree in the published format
(endpoints_tree.py); what the files lack is said, and a folder the round's rules or files cannot carry is refused
by name, storing nothing of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

import protocol
from registry.importers import mlperf
from registry.importers.mlperf.rules import round_rules
from registry.models import Submission
from tests.registry.web.conftest import signed_in, viewer  # noqa: F401 - the viewer fixture, for the run page

from .endpoints_tree import (
    DEEPSEEK,
    DEEPSEEK_SCORE,
    QWEN,
    QWEN_SCORES,
    SUBMITTER,
    SYSTEM,
    edge_singlestream,
    endpoints_submission,
)


@pytest.fixture
def round_root(tmp_path: Path) -> Path:
    return endpoints_submission(tmp_path)


def _items(root: Path) -> dict[str, mlperf.ImportItem]:
    return {item.key.split("/", 1)[1]: item for item in mlperf.parse_tree(root).items}


def _folder(root: Path, benchmark: str, scenario: str) -> Path:
    return root / "closed" / SUBMITTER / "results" / SYSTEM / benchmark / scenario


@pytest.mark.django_db
def test_the_command_stores_every_endpoints_result_with_the_published_headline(round_root):
    call_command("import_results", "mlperf", str(round_root), "--no-progress")
    stored = {
        (d["provenance"]["origin"]["benchmark"], d["provenance"]["origin"]["scenario"]): d
        for d in (s.document for s in Submission.objects.all())
    }
    assert set(stored) == {("deepseek-r1", s) for s in DEEPSEEK} | {("qwen3-vl-235b-a22b", s) for s in QWEN}
    # deepseek-r1: the endpoint's tps in every scenario (RESULT_FIELD_BENCHMARK_OVERWRITE; an Interactive result
    # keyed as LoadGen's Server), as MLCommons' v6.1 table publishes it
    for scenario, figures in DEEPSEEK.items():
        doc = stored[("deepseek-r1", scenario)]
        assert doc["metrics"]["throughput"] == {"value": figures["tps"], "unit": "tokens/s"}
        assert doc["metrics"]["request_rate"] == {"value": figures["qps"], "unit": "requests/s"}
        assert doc["provenance"]["origin"]["round"] == "v6.1"
        assert doc["provenance"]["runner"] == {"name": "mlperf-endpoints", "version": "0.1.0"}
        assert doc["provenance"]["origin"]["loadgen_version"] is None and doc["provenance"]["started_at"] is None
    # qwen3-vl: qps where the endpoint writes it (Server/Interactive), and Offline as the checker computes it,
    # n_samples_issued / duration: 5000 / 400 s
    assert stored[("qwen3-vl-235b-a22b", "Interactive")]["metrics"]["throughput"]["value"] == 5.25
    assert stored[("qwen3-vl-235b-a22b", "Offline")]["metrics"]["throughput"] == {"value": 12.5, "unit": "samples/s"}
    assert Submission.objects.count() == 5


@pytest.mark.django_db
def test_the_run_page_shows_an_endpoints_result_as_stored(round_root, viewer):  # noqa: F811 - the fixture
    call_command("import_results", "mlperf", str(round_root), "--no-progress")
    offline = next(
        s
        for s in Submission.objects.all()
        if s.document["provenance"]["origin"]["benchmark"] == "deepseek-r1"
        and s.document["provenance"]["origin"]["scenario"] == "Offline"
    )
    page = signed_in(viewer).get(f"/runs/{offline.pk}/")
    html = page.content.decode()
    assert page.status_code == 200 and offline.digest in html
    assert "mlperf-endpoints" in html and "9000.5" in html


def test_validity_is_the_checkers_endpoint_checks_and_says_so(round_root):
    items = _items(round_root)
    server = items["deepseek-r1/Server"].document["conditions"]["validity"]
    assert server == {
        "valid": True,
        "checks": {"min_duration_satisfied": True, "ttft_p99_within_limit": True, "tpot_p99_within_limit": True},
    }
    # Interactive: the TTFT p99 early-stopping estimate 1.6 s is over the round's 1.5 s limit (llm_check)
    interactive = items["deepseek-r1/Interactive"]
    assert interactive.document["conditions"]["validity"]["valid"] is False
    assert interactive.document["conditions"]["validity"]["checks"]["ttft_p99_within_limit"] is False
    assert interactive.document["scenario"]["latency_slo_ms"] == {"ttft_p99": 1500.0, "tpot_p99": 15.0}
    assert any("no VALID/INVALID verdict" in w for w in interactive.warnings)
    # qwen3-vl is not an LLM of the checker's list: its p99 latency is held to latency-constraint (1.5 s)
    qwen = items["qwen3-vl-235b-a22b/Interactive"].document
    assert qwen["conditions"]["validity"]["checks"]["latency_constraint_satisfied"] is True
    assert qwen["scenario"]["latency_slo_ms"] == {"latency_p99": 1500.0}
    for item in items.values():
        assert item.document["conditions"]["steady_state"] == {"method": "loadgen-early-stopping", "reached": None}
        assert protocol.errors(item.document) == []


def test_accuracy_is_judged_only_where_the_checker_judges_an_endpoint_score(round_root):
    items = _items(round_root)
    qwen_offline = items["qwen3-vl-235b-a22b/Offline"].document["metrics"]["quality"]
    assert qwen_offline["metric"] == "F1_HIERARCHICAL" and qwen_offline["value"] == QWEN_SCORES["Offline"]
    assert qwen_offline["passed"] is True  # 0.79 >= 0.99 x 0.7903
    interactive = items["qwen3-vl-235b-a22b/Interactive"].document
    assert interactive["metrics"]["quality"]["passed"] is False  # 0.77 < 0.99 x 0.7878 (the Interactive target)
    assert interactive["provenance"]["origin"]["targets"]["F1_HIERARCHICAL"]["min"] == pytest.approx(0.99 * 0.7878)
    deepseek = items["deepseek-r1/Offline"].document
    assert deepseek["metrics"]["quality"]["value"] == DEEPSEEK_SCORE and deepseek["metrics"]["quality"]["passed"]
    assert "without comparing it to a target" in deepseek["provenance"]["origin"]["unparsed"]["accuracy.verdict"]
    assert "targets" not in deepseek["provenance"]["origin"]


def test_latencies_are_the_endpoints_distributions_in_ms(round_root):
    doc = _items(round_root)["deepseek-r1/Server"].document
    assert doc["metrics"]["ttft_ms"]["mean"] == 500.0 and doc["metrics"]["tpot_ms"]["max"] == 10.0
    assert doc["metrics"]["latency_ms"]["min"] == 1000.0 and doc["metrics"]["latency_ms"]["count"] == 600
    offline = _items(round_root)["deepseek-r1/Offline"].document
    assert "ttft_ms" not in offline["metrics"]  # the endpoint writes {} for TTFT in Offline
    assert offline["conditions"]["window"] == {"seconds": 400.0, "iterations": 1000, "repetitions": 1}


def test_every_file_is_reported_and_the_unread_ones_say_so(round_root):
    item = _items(round_root)["deepseek-r1/Offline"]
    status = {f.path.split("/Offline/", 1)[-1]: f.status for f in item.files}
    assert status["performance/result_summary.json"] == "used" and status["config.yaml"] == "used"
    assert status["accuracy/accuracy_results.json"] == "used" and status["measurements.json"] == "used"
    assert status["report.txt"] == "skipped" and status["metrics/final_snapshot.json"] == "skipped"
    files = item.document["provenance"]["origin"]["files"]
    assert f"results/{SYSTEM}/deepseek-r1/Offline/performance/result_summary.json" in files


def _refusal(root: Path, key: str) -> str:
    item = _items(root)[key]
    assert item.document is None and item.status == "refused"
    return " | ".join(item.errors)


def test_an_endpoints_folder_in_a_round_without_endpoints_rules_is_refused_by_name(tmp_path):
    v61 = endpoints_submission(tmp_path)
    v60 = v61.rename(tmp_path / "inference_results_v6.0")
    assert "round v6.0 rules have no endpoints rules" in _refusal(v60, "deepseek-r1/Offline")


def test_a_model_the_checker_refuses_from_an_endpoint_is_refused(round_root):
    folder = _folder(round_root, "qwen3-vl-235b-a22b", "Offline")
    target = folder.parents[1] / "llama2-70b-99.9"
    target.mkdir()
    folder.rename(target / "Offline")
    assert "ENDPOINTS_ALLOWED_MODELS" in _refusal(round_root, "llama2-70b-99.9/Offline")


@pytest.mark.parametrize(
    ("break_it", "words"),
    [
        (lambda f: (f / "config.yaml").write_text("a: &x [1]\nb: *x\n"), "config.yaml: uses a YAML alias"),
        (lambda f: (f / "config.yaml").write_text("type: online\n"), "config.yaml: type is 'online'"),
        (lambda f: (f / "config.yaml").write_text("type: [\n"), "config.yaml: malformed YAML"),
        (lambda f: (f / "config.yaml").write_text("[" * 100000), "config.yaml: nested deeper than the YAML reader"),
        (lambda f: (f / "config.yaml").write_text("!!python/object:os.system {}"), "config.yaml: malformed YAML"),
        (
            lambda f: _edit_summary(f, qps="1e999999999", tps="1e999999999"),
            "tps is Decimal('1E+999999999'), not a finite",
        ),
        (lambda f: _edit_summary(f, tps='"fast"'), "result_summary.json: tps is 'fast', not a number"),
        (lambda f: (f / "performance" / "result_summary.json").write_text("[" * 5000), "nested deeper"),
        (lambda f: (f / "performance" / "result_summary.json").write_text('{"qps": 1}'), "has no n_samples_issued"),
        (lambda f: (f / "performance" / "result_summary.json").unlink(), "result_summary.json: missing"),
    ],
)
def test_a_broken_endpoints_file_is_refused_in_words_and_nothing_else_is_harmed(round_root, break_it, words):
    break_it(_folder(round_root, "deepseek-r1", "Offline"))
    items = _items(round_root)
    assert words in _refusal(round_root, "deepseek-r1/Offline")
    assert all(item.document for key, item in items.items() if key != "deepseek-r1/Offline")


def _edit_summary(folder: Path, **raw: str) -> None:
    """Replace top-level values of result_summary.json by raw JSON text (numbers JSON can write but not hold)."""
    path = folder / "performance" / "result_summary.json"
    text = path.read_text()
    data = json.loads(text)
    for key, value in raw.items():
        text = text.replace(f'"{key}": {json.dumps(data[key])}', f'"{key}": {value}')
    path.write_text(text)


def test_the_round_data_carries_the_checkers_endpoints_tables():
    rules = round_rules("v6.1").endpoints
    assert rules["mappings"]["tps"] == "result_completed_tokens_per_second"
    assert rules["mappings"]["qps"] == "result_completed_samples_per_sec"
    assert rules["result_field"]["offline"] == "result_samples_per_second"
    assert {"deepseek-r1", "qwen3-vl-235b-a22b", "qwen3.6-27b"} <= set(rules["allowed_models"])
    assert rules["min_duration_ms"] == 600000 and "e2e-rag-qna" in rules["min_duration_exempt"]
    assert "deepseek-r1" in rules["llm_models"] and "qwen3-vl-235b-a22b" not in rules["llm_models"]


# --- the benchmarks new in v6.1, as its rules list them -----------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "scenario", "metric", "unit", "unknown_in"),
    [
        ("qwen3.6-27b", "SingleStream", "mAP", "Latency (ms)", "v6.0"),
        ("e2e-rag-qna", "Offline", "E2E_ACCURACY", "Tasks/s", "v6.0"),
        ("e2e-rag-db", "Offline", "E2E_ACCURACY", "Samples/s", "v6.0"),
        ("wan-2.2-t2v-a14b", "SingleStream", "vbench_score", "Latency (s)", "v5.1"),
    ],
)
def test_the_new_benchmarks_of_v61_have_the_checkers_rules(folder, scenario, metric, unit, unknown_in):
    rules = round_rules("v6.1")
    assert rules.model(folder) == folder
    assert rules.accuracy(folder, scenario)[0].name == metric
    assert rules.headline(folder, scenario, scenario).published_unit == unit
    with pytest.raises(mlperf.rules.RuleMissing, match=f"benchmark '{folder}'"):
        round_rules(unknown_in).model(folder)


def test_the_tables_model_names_are_the_checkers_models_of_the_round():
    rules = round_rules("v6.1")
    assert rules.table_model("text_to_video") == "wan-2.2-t2v-a14b"
    assert rules.table_model("VLM") == "qwen3-vl-235b-a22b"
    assert rules.table_model("deepseek-r1") == "deepseek-r1"
    assert rules.table_model("text-to-video") is None
    assert round_rules("v6.0").table_model("text_to_video") is None


def test_an_edge_singlestream_endpoints_result_publishes_its_mean_latency(tmp_path):
    """RESULT_FIELD_ENDPOINTS[v6.1][singlestream] is result_mean_latency_ns: the endpoint's latency.avg, in ms."""
    item = _items(edge_singlestream(tmp_path))["qwen3.6-27b/SingleStream"]
    doc = item.document
    assert doc is not None, item.errors
    assert doc["metrics"]["primary"] == "latency_ms.mean" and doc["metrics"]["latency_ms"]["mean"] == 5000.0
    assert doc["scenario"] == {"kind": "single-stream", "arrival": "closed-loop"}
    assert doc["metrics"]["quality"] == {
        "metric": "mAP",
        "value": 0.875,
        "target_ratio": None,
        "reference_value": None,
        "reference_precision": None,
        "passed": True,
        "values": {"mAP": 0.875},
    }
