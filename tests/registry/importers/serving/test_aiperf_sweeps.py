"""The two real aiperf sweeps of ../shared/data/serving import whole: one run per load level, the levels of each
sweep sharing one sweep id, every number from its source field, the InferenceX harness's copies cross-checked; a
second import stores nothing new; what the files do not say is refused by name before anything is stored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

import protocol
from registry.importers import serving
from registry.models import AuditEntry, Submission
from registry.services.imports_serving import serving_import
from tests.conftest import SHARED

pytestmark = pytest.mark.django_db
DATA = SHARED / "data" / "serving"
KIMI = "kimik2.5-fp4-b200-vllm-agentic-lmcache"
GLM = "glm5.1-fp4-mi355x-sglang-agentic-hicache"
SHAPE = {"kind": "agentic-multi-turn", "turns": "multi", "input_tokens": None, "output_tokens": None}
DEPLOYMENTS: dict[str, dict[str, Any]] = {
    KIMI: {
        "system": {"accelerators": {"vendor": "NVIDIA", "model": "B200", "count": 8}},
        "engine": {"version": "0.22.0"},
        "precision": {
            "weights": "nvfp4",
            "activations": "unspecified",
            "kv_cache": "fp8",  # vllm_command.txt: --kv-cache-dtype fp8
            "quantization": {"method": "NVFP4 checkpoint"},
        },
        "workload": {"name": "inferencex-agentx-mvp", "version": "060226", "request_shape": SHAPE},
    },
    GLM: {
        "system": {"accelerators": {"vendor": "AMD", "model": "Instinct MI355X", "count": 2}},
        "engine": {"version": "0.5.12.post1"},
        "precision": {
            "weights": "mxfp4",
            "activations": "unspecified",
            "kv_cache": "unspecified",
            "quantization": {"method": "MXFP4 checkpoint"},
        },
        "workload": {"name": "inferencex-agentx-mvp", "version": "060226_256k", "request_shape": SHAPE},
    },
}


@pytest.fixture(autouse=True)
def _data() -> None:
    if not DATA.exists():
        pytest.skip("the shared serving data is not beside this checkout")


def deployment_file(tmp_path: Path, sweep: str, **changes: Any) -> Path:
    values = json.loads(json.dumps(DEPLOYMENTS[sweep]))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = values
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    path = tmp_path / f"{sweep}.json"
    path.write_text(json.dumps(values))
    return path


def summaries(sweep: str) -> dict[int, dict[str, Any]]:
    """aiperf's own summary per concurrency, read here independently of the importer."""
    out = {}
    for path in (DATA / sweep).glob("agentic_*/aiperf_artifacts/profile_export_aiperf.json"):
        data = json.loads(path.read_text())
        out[data["input_config"]["loadgen"]["concurrency"]] = data
    return out


@pytest.mark.parametrize(
    ("sweep", "concurrencies", "accelerators", "engine"),
    [
        (KIMI, [1, 2, 4, 8, 16, 24], ("B200", 8), "vllm"),
        (GLM, [4, 8, 16, 32, 40, 48], ("Instinct MI355X", 2), "sglang"),
    ],
)
def test_a_shared_sweep_imports_whole_as_one_sweep(tmp_path, user, sweep, concurrencies, accelerators, engine):
    deployment = serving.load(deployment_file(tmp_path, sweep), {})
    result = serving_import(paths=[DATA / sweep], deployment=deployment, submitted_by=user)
    assert result.counts == {"stored": len(concurrencies)}
    runs = sorted(Submission.objects.all(), key=lambda r: r.document["scenario"]["sweep"]["index"])
    assert len({r.document["scenario"]["sweep"]["id"] for r in runs}) == 1
    assert [r.document["scenario"]["concurrency"] for r in runs] == concurrencies
    truth = summaries(sweep)
    for index, run in enumerate(runs):
        doc, aiperf = run.document, truth[concurrencies[index]]
        assert run.trust == "declared" and doc["provenance"]["source"] == "import"
        # aiperf's TTFO is protocol 1.3's ttfot_ms, so these levels declare 1.3 (the field exists only there)
        assert doc["protocol"] == "benchreg.submission/1.3" and protocol.errors(doc) == []
        assert doc["scenario"]["sweep"] == {
            "id": doc["scenario"]["sweep"]["id"],
            "index": index,
            "levels": len(concurrencies),
            "mode": "concurrency",
            "stop_reason": None,
        }
        assert doc["workload"]["request_shape"]["kind"] == "agentic-multi-turn"
        assert (doc["system"]["accelerators"][0]["model"], doc["system"]["accelerators"][0]["count"]) == accelerators
        assert doc["software"]["serving"]["engine"] == engine
        assert doc["software"]["serving"]["tool"] == {"name": "aiperf", "version": "0.8.0"}
        metrics = doc["metrics"]
        assert metrics["throughput"]["value"] == aiperf["output_token_throughput"]["avg"]
        assert metrics["ttft_ms"]["p50"] == aiperf["time_to_first_token"]["p50"]
        ttfo = aiperf["time_to_first_output_token"]
        assert (metrics["ttfot_ms"]["count"], metrics["ttfot_ms"]["mean"]) == (ttfo["count"], ttfo["avg"])
        assert metrics["ttfot_ms"]["p50"] == ttfo["p50"] and metrics["ttfot_ms"]["unit"] == "ms"
        assert (
            f"the {ttfo['count']} of {aiperf['time_to_first_token']['count']} requests"
            in (doc["provenance"]["origin"]["unparsed"]["ttfot_ms"])
        )
        assert metrics["tpot_ms"]["mean"] == aiperf["inter_token_latency"]["avg"]
        assert metrics["tokens_per_second_per_user"]["p50"] == aiperf["output_token_throughput_per_user"]["p50"]
        assert metrics["requests"]["completed"] == aiperf["request_count"]["avg"]
        # every number is traced to its source field
        fields = doc["provenance"]["origin"]["fields"]
        assert fields["/metrics/ttft_ms/p50"] == "profile_export_aiperf.json: time_to_first_token.p50"
        assert fields["/metrics/ttfot_ms/p50"] == "profile_export_aiperf.json: time_to_first_output_token.p50"
        assert "inter_token_latency.avg" in fields["/metrics/tpot_ms/mean"]
        assert "profile_export_aiperf.json" in doc["provenance"]["origin"]["files"]
        # the protocol's sample minimums hold: no p99 on fewer than 662 requests
        assert ("p99" in metrics["ttft_ms"]) == (metrics["ttft_ms"]["count"] >= 662)


def test_both_sweeps_in_one_command_and_again_store_nothing_new(tmp_path, user):
    for sweep in (KIMI, GLM):
        deployment = serving.load(deployment_file(tmp_path, sweep), {})
        first = serving_import(paths=[DATA / sweep], deployment=deployment, submitted_by=user)
        again = serving_import(paths=[DATA / sweep], deployment=deployment, submitted_by=user)
        assert first.counts == {"stored": 6} and again.counts == {"known": 6}
        assert [o.digest for o in first.outcomes] == [o.digest for o in again.outcomes]
    assert Submission.objects.count() == 12
    assert len({r.document["scenario"]["sweep"]["id"] for r in Submission.objects.all()}) == 2
    conc24 = next(r for r in Submission.objects.all() if r.document["scenario"]["concurrency"] == 24)
    assert conc24.document["metrics"]["requests"] == {
        "sent": 1045,
        "completed": 1044,
        "errors": 1,
        "timeouts": 0,
        "incomplete": 0,
    }
    assert AuditEntry.objects.filter(kind="import.completed").count() == 4


def test_the_command_imports_with_flags_and_a_file(tmp_path, user):
    path = deployment_file(tmp_path, GLM, system__accelerators__count=None)
    call_command("import_results", "serving", str(DATA / GLM), "--deployment", str(path), "--accelerator-count", "2")
    assert Submission.objects.count() == 6


@pytest.mark.parametrize(
    ("missing", "words"),
    [
        (
            "system__accelerators__count",
            "does not say the accelerator count: pass --accelerator-count or system.accelerators.count",
        ),
        ("system__accelerators__model", "does not say the accelerator model: pass --accelerator-model"),
        ("engine__version", "does not say the serving engine's version: pass --engine-version or engine.version"),
        ("precision__kv_cache", "does not say the KV-cache precision: pass --kv-cache or precision.kv_cache"),
        ("precision__weights", "does not say the weight precision: pass --weights"),
        ("workload__request_shape", "do not state the request shape"),
    ],
)
def test_what_the_files_do_not_say_is_refused_by_name_before_anything_is_stored(tmp_path, user, missing, words):
    path = deployment_file(tmp_path, KIMI, **{missing: None})
    with pytest.raises(CommandError) as refused:
        call_command("import_results", "serving", str(DATA / KIMI), "--deployment", str(path))
    assert words in str(refused.value) and "nothing was stored" in str(refused.value)
    assert Submission.objects.count() == 0


def test_a_deployment_contradicting_the_harness_is_refused_with_both_values(tmp_path, user):
    path = deployment_file(tmp_path, KIMI, system__accelerators__count=4)
    with pytest.raises(
        serving.ServingImportError, match=r"says 4 accelerators but .*total_tput_tps ÷ tput_per_gpu gives 8"
    ):
        serving.parse([DATA / KIMI], serving.load(path, {}), submitter="t")
    path = deployment_file(tmp_path, KIMI, parallelism={"tensor": 4})
    with pytest.raises(serving.ServingImportError, match=r"parallelism.tensor = 4 but the result files say 8"):
        serving.parse([DATA / KIMI], serving.load(path, {}), submitter="t")


def _copy_level(tmp_path: Path, sweep: str, conc: int) -> Path:
    root = tmp_path / "copy"
    for name in ("agentic_", "bmk_agentic_"):
        for folder in (DATA / sweep).glob(f"{name}*_conc{conc}_*"):
            shutil.copytree(folder, root / folder.name)
    shutil.copytree(DATA / sweep / "results_bmk", root / "results_bmk")
    return root


def test_a_harness_figure_disagreeing_with_aiperf_is_refused_with_both_values(tmp_path):
    root = _copy_level(tmp_path, GLM, 4)
    record_path = next(root.glob("bmk_agentic_*/*.json"))
    record = json.loads(record_path.read_text())
    record["p90_ttft"] *= 1.01
    record_path.write_text(json.dumps(record))
    deployment = serving.load(deployment_file(tmp_path, GLM), {})
    with pytest.raises(
        serving.ServingImportError, match=r"harness's p90_ttft is .* s but aiperf's time_to_first_token.p90 is .* ms"
    ):
        serving.parse([root], deployment, submitter="t")


def test_the_aggregate_disagreeing_with_the_level_record_is_refused(tmp_path):
    root = _copy_level(tmp_path, GLM, 4)
    agg_path = root / "results_bmk" / "agg_bmk.json"
    records = json.loads(agg_path.read_text())
    mine = next(r for r in records if r["conc"] == 4 and r["offloading"] == "none")
    mine["output_tput_tps"] += 1
    agg_path.write_text(json.dumps(records))
    with pytest.raises(
        serving.ServingImportError, match=r"output_tput_tps is .* here but .* in the level's own record"
    ):
        serving.parse([root], serving.load(deployment_file(tmp_path, GLM), {}), submitter="t")


def test_per_request_records_disagreeing_with_the_summary_are_refused(tmp_path):
    root = _copy_level(tmp_path, KIMI, 1)
    jsonl = next(root.glob("agentic_*/aiperf_artifacts/profile_export.jsonl"))
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(
        serving.ServingImportError,
        match=r"number of time_to_first_token records from the per-request records is 65 but the summary says 66",
    ):
        serving.parse([root], serving.load(deployment_file(tmp_path, KIMI), {}), submitter="t")


@pytest.mark.parametrize(("key", "value"), [("aiperf_version", "0.9.0"), ("schema_version", "2.0")])
def test_an_unknown_aiperf_version_is_refused(tmp_path, key, value):
    root = _copy_level(tmp_path, GLM, 8)
    summary = next(root.glob("agentic_*/aiperf_artifacts/profile_export_aiperf.json"))
    data = json.loads(summary.read_text())
    data[key] = value
    summary.write_text(json.dumps(data))
    with pytest.raises(
        serving.ServingImportError,
        match=r"is not a version this importer knows \(aiperf 0.8.0 \(schema_version 1.1\), aiperf 0.13.0 \(schema_"
        r"version 1.4\)\)",
    ):
        serving.parse([root], serving.load(deployment_file(tmp_path, GLM), {}), submitter="t")


def test_a_file_of_no_known_tool_is_refused(tmp_path):
    other = tmp_path / "result.json"
    other.write_text(json.dumps({"benchmarks": []}))
    with pytest.raises(serving.ServingImportError, match="not a result file of a known tool"):
        serving.parse([other], serving.load(deployment_file(tmp_path, GLM), {}), submitter="t")


def test_an_unknown_deployment_key_is_refused(tmp_path):
    path = deployment_file(tmp_path, GLM, system__gpus=2)
    with pytest.raises(serving.ServingImportError, match=r"unknown key 'system.gpus'"):
        serving.load(path, {})
