"""Files that guidellm 0.8.1 and aiperf 0.13.0 wrote against the simulated endpoint (tests/fixtures/serving/, each
with a README giving the command) import whole through `benchreg import serving`: one run per benchmark or level,
one sweep per tool run, every figure equal to the file's own; a file of an unknown version, or one altered or cut
short, is refused by name and stores nothing."""

from __future__ import annotations

import copy
import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command

import protocol
from protocol.comparability import comparability_keys
from registry.models import Submission
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db
FIXTURES = ROOT / "tests" / "fixtures" / "serving"
GUIDELLM = FIXTURES / "guidellm"
AIPERF = FIXTURES / "aiperf-0.13.0"
AIPERF_MULTITURN = FIXTURES / "more" / "aiperf-multiturn" / "concurrency_2"
AIPERF_RAMP = FIXTURES / "more" / "aiperf-ramp" / "profile_export_aiperf.json"
GUIDELLM_MULTITURN = FIXTURES / "more" / "guidellm-multiturn" / "benchmarks.json"
GUIDELLM_WARMUP = FIXTURES / "more" / "guidellm-warmup"
GUIDELLM_RAMPUP = FIXTURES / "more" / "guidellm-rampup" / "benchmarks.json"
AIPERF_GAMMA = FIXTURES / "more" / "aiperf-gamma" / "profile_export_aiperf.json"
# What the files cannot say about the simulated endpoint (runners/serving/simulated.py serves no accelerator).
DEPLOYMENT = {
    "system": {"name": "simulated endpoint", "accelerators": {"vendor": "NVIDIA", "model": "H100", "count": 1}},
    "engine": {"name": "benchreg-simulated", "version": "1"},
    "precision": {"weights": "bf16", "activations": "bf16", "kv_cache": "bf16"},
    "parallelism": {"tensor": 1},
    "workload": {"name": "simulated-64-32"},
}


def run_import(tmp_path: Path, *paths: Path) -> list[dict[str, Any]]:
    deployment = tmp_path / "deployment.json"
    deployment.write_text(json.dumps(DEPLOYMENT))
    call_command("import_results", "serving", *map(str, paths), "--deployment", str(deployment))
    docs = [run.document for run in Submission.objects.all()]
    return sorted(docs, key=lambda d: (d["scenario"]["sweep"]["id"], d["scenario"]["sweep"]["index"]))


def stats(bench: dict[str, Any], key: str) -> dict[str, Any]:
    """guidellm's figures of the successful requests, read here independently of the importer."""
    return bench["metrics"][key]["successful"]


def check_guidellm_level(doc: dict[str, Any], bench: dict[str, Any]) -> None:
    metrics = doc["metrics"]
    # guidellm 0.8's TTFOT is protocol 1.3's ttfot_ms: the level declares 1.3, the minor that has the field
    assert protocol.errors(doc) == [] and doc["protocol"] == "benchreg.submission/1.3"
    ttfot = stats(bench, "time_to_first_output_token_ms")
    assert metrics["ttfot_ms"]["p50"] == ttfot["percentiles"]["p50"] and metrics["ttfot_ms"]["mean"] == ttfot["mean"]
    assert metrics["ttfot_ms"]["count"] == ttfot["count"]
    assert doc["software"]["serving"]["tool"] == {"name": "guidellm", "version": "0.8.1"}
    assert metrics["ttft_ms"]["p50"] == stats(bench, "time_to_first_token_ms")["percentiles"]["p50"]
    assert metrics["ttft_ms"]["mean"] == stats(bench, "time_to_first_token_ms")["mean"]
    assert metrics["tpot_ms"]["p50"] == stats(bench, "inter_token_latency_ms")["percentiles"]["p50"]
    assert metrics["latency_ms"]["max"] == pytest.approx(stats(bench, "request_latency")["max"] * 1000, rel=1e-12)
    assert metrics["latency_ms"]["count"] == stats(bench, "request_latency")["count"]
    assert metrics["throughput"]["value"] == stats(bench, "output_tokens_per_second")["mean"]
    assert metrics["request_rate"]["value"] == stats(bench, "requests_per_second")["mean"]
    totals = bench["metrics"]["request_totals"]
    assert metrics["requests"] == {
        "sent": totals["total"],
        "completed": totals["successful"],
        "errors": totals["errored"],
        "timeouts": 0,
        "incomplete": totals["incomplete"],
    }
    assert metrics["token_counts"]["output_total"] == stats(bench, "output_token_count")["total_sum"]
    assert doc["conditions"]["window"]["seconds"] == bench["duration"]
    # every number is traced to its field, and percentiles stop at the protocol's sample minimums
    fields = doc["provenance"]["origin"]["fields"]
    assert fields["/metrics/ttft_ms/p50"].endswith(".metrics.time_to_first_token_ms.successful.percentiles.p50")
    assert fields["/metrics/ttfot_ms/p50"].endswith(".metrics.time_to_first_output_token_ms.successful.percentiles.p50")
    assert "request_latency.successful.max, × 1000" in fields["/metrics/latency_ms/max"]
    assert ("p90" in metrics["ttft_ms"]) == (metrics["ttft_ms"]["count"] >= 64)
    assert "itl_ms" not in metrics
    check_guidellm_prompts(doc, bench)
    check_guidellm_per_user(doc, bench)


def check_guidellm_prompts(doc: dict[str, Any], bench: dict[str, Any]) -> None:
    """The prompts sent had the length the data source asked for (the tokenizer knows guidellm's words), counted by
    the simulated endpoint (one token a word), so the importer has nothing to flag."""
    asked = doc["workload"]["request_shape"]["input_tokens"]["mean"]
    prompts = stats(bench, "prompt_token_count")
    assert (prompts["min"], prompts["max"]) == (asked, asked)
    assert doc["metrics"]["token_counts"]["input_total"] == asked * bench["metrics"]["request_totals"]["successful"]
    assert "request_shape" not in doc["provenance"]["origin"]["unparsed"]


def check_guidellm_per_user(doc: dict[str, Any], bench: dict[str, Any]) -> None:
    """tokens/s per user is 1000 / guidellm's per-request TPOT, its order statistics mirrored, with no mean; TPOT
    and it count requests, not the gaps guidellm weighs them by (every request here wrote 32 tokens)."""
    rate, tpot = doc["metrics"]["tokens_per_second_per_user"], stats(bench, "inter_token_latency_ms")
    requests = bench["metrics"]["request_totals"]["successful"]
    if bench["warmup_duration"] or bench["cooldown_duration"]:
        # guidellm counts a request into each figure by when that figure's events fell in the window: with a
        # warm-up or a cool-down its TTFT, TPOT and latency count different requests (46, 48, 49 of one file)
        requests = tpot["count"] // 31
        assert stats(bench, "request_latency")["count"] >= requests >= stats(bench, "time_to_first_token_ms")["count"]
    assert stats(bench, "output_token_count")["max"] == 32 and tpot["count"] == requests * 31
    assert rate["p50"] == 1000 / tpot["percentiles"]["p50"] and rate["p50"] == 1000 / doc["metrics"]["tpot_ms"]["p50"]
    assert (rate["min"], rate["max"]) == (1000 / tpot["max"], 1000 / tpot["min"])
    if requests >= 64:  # the protocol's least sample count for a p90
        assert rate["p90"] == 1000 / tpot["percentiles"]["p10"]
    else:
        assert "p90" not in rate
    assert "mean" not in rate and "stdev" not in rate and "p99" not in rate  # p99 needs 662 requests
    assert (rate["count"], doc["metrics"]["tpot_ms"]["count"], rate["method"]) == (requests, requests, "loadgen")
    fields = doc["provenance"]["origin"]["fields"]
    assert fields["/metrics/tokens_per_second_per_user/p50"].startswith("1000 ÷ benchmarks")
    assert fields["/metrics/tokens_per_second_per_user/p50"].endswith(
        ".inter_token_latency_ms.successful.percentiles.p50 (ms)"
    )
    assert "p90 = 1000 ÷ p10" in doc["provenance"]["origin"]["unparsed"]["tokens_per_second_per_user"]


def test_a_guidellm_concurrency_report_imports_as_one_sweep_of_three_levels(tmp_path, user):
    report = json.loads((GUIDELLM / "concurrent" / "benchmarks.json").read_text())
    docs = run_import(tmp_path, GUIDELLM / "concurrent" / "benchmarks.json")
    assert len(docs) == 3 and len({d["scenario"]["sweep"]["id"] for d in docs}) == 1
    assert [d["scenario"]["concurrency"] for d in docs] == [1, 4, 16]
    assert {(d["scenario"]["arrival"], d["scenario"]["sweep"]["mode"]) for d in docs} == {
        ("closed-loop", "concurrency")
    }
    for doc, bench in zip(docs, report["benchmarks"], strict=True):
        check_guidellm_level(doc, bench)
    assert docs[0]["workload"]["request_shape"]["input_tokens"] == {
        "mean": 64.0,
        "stdev": 0.0,
        "distribution": "constant",
    }
    assert docs[0]["software"]["serving"]["api"] == "chat"


def test_a_guidellm_yaml_sweep_mixes_closed_and_open_loop_levels_in_the_order_of_their_rates(tmp_path, user):
    report = yaml.safe_load((GUIDELLM / "sweep" / "benchmarks.yaml").read_text())
    docs = run_import(tmp_path, GUIDELLM / "sweep")  # a folder: found by name, read by content
    kinds = [b["config"]["strategy"]["type_"] for b in report["benchmarks"]]
    assert kinds == ["synchronous", "throughput", "constant"]
    by_kind = dict(zip(kinds, report["benchmarks"], strict=True))
    rates = [d["metrics"]["request_rate"]["value"] for d in docs]
    assert rates == sorted(rates) and {d["scenario"]["sweep"]["mode"] for d in docs} == {"automatic"}
    for doc in docs:
        arrival = doc["scenario"]["arrival"]
        kind = {"constant": "constant"}.get(arrival) or (
            "synchronous" if doc["scenario"]["concurrency"] == 1 else "throughput"
        )
        check_guidellm_level(doc, by_kind[kind])
    constant = next(d for d in docs if d["scenario"]["arrival"] == "constant")
    assert constant["scenario"]["target_qps"] == by_kind["constant"]["config"]["strategy"]["rate"]


def test_a_guidellm_poisson_level_states_its_rate_and_its_tail(tmp_path, user):
    report = json.loads((GUIDELLM / "poisson" / "benchmarks.json").read_text())
    (doc,) = run_import(tmp_path, GUIDELLM / "poisson" / "benchmarks.json")
    check_guidellm_level(doc, report["benchmarks"][0])
    assert (doc["scenario"]["arrival"], doc["scenario"]["target_qps"]) == ("poisson", 20.0)
    assert (
        doc["metrics"]["ttft_ms"]["p90"]
        == stats(report["benchmarks"][0], "time_to_first_token_ms")["percentiles"]["p90"]
    )


def test_every_fixture_imports_in_one_command_and_again_stores_nothing_new(tmp_path, user):
    docs = run_import(tmp_path, GUIDELLM, AIPERF)
    assert len(docs) == 3 + 3 + 1 + 3 + 2
    assert len({d["scenario"]["sweep"]["id"] for d in docs}) == 5
    run_import(tmp_path, GUIDELLM, AIPERF)
    assert Submission.objects.count() == 12


def test_aiperf_0_13_files_import_with_the_request_shape_they_state(tmp_path, user):
    docs = run_import(tmp_path, AIPERF)
    sweeps: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        sweeps.setdefault(doc["scenario"]["sweep"]["mode"], []).append(doc)
    assert [d["scenario"]["concurrency"] for d in sweeps["concurrency"]] == [1, 4, 16]
    assert [(d["scenario"]["target_qps"], d["scenario"]["arrival"]) for d in sweeps["request-rate"]] == [
        (10.0, "poisson"),
        (40.0, "poisson"),
    ]
    for doc in docs:
        level = doc["scenario"]["concurrency"] or doc["scenario"]["target_qps"]
        folder = f"concurrency/concurrency_{level}" if doc["scenario"]["concurrency"] else f"rate/rate_{level:.1f}"
        summary = json.loads((AIPERF / folder / "profile_export_aiperf.json").read_text())
        metrics = doc["metrics"]
        assert protocol.errors(doc) == []
        assert doc["software"]["serving"]["tool"] == {"name": "aiperf", "version": "0.13.0"}
        assert metrics["ttft_ms"]["p50"] == summary["time_to_first_token"]["p50"]
        assert metrics["tpot_ms"]["mean"] == summary["inter_token_latency"]["avg"]
        assert metrics["throughput"]["value"] == summary["output_token_throughput"]["avg"]
        assert metrics["requests"]["completed"] == summary["request_count"]["avg"]
        assert doc["workload"]["request_shape"]["kind"] == "fixed"
        assert doc["workload"]["request_shape"]["output_tokens"]["mean"] == 32.0
        assert doc["provenance"]["started_at"] is None and "started_at" in doc["provenance"]["origin"]["unparsed"]
    files = sweeps["concurrency"][0]["provenance"]["origin"]["files"]
    assert set(files) == {"profile_export_aiperf.json", "profile_export.jsonl"}  # the per-request check ran


def copy_of(tmp_path: Path, source: Path) -> Path:
    target = tmp_path / "copy" / source.relative_to(FIXTURES)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    return target


def altered(tmp_path: Path, source: Path, change: Any) -> Path:
    path = copy_of(tmp_path, source)
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def refused(tmp_path: Path, path: Path, words: str) -> None:
    with pytest.raises(CommandError) as error:
        run_import(tmp_path, path)
    assert words in str(error.value) and str(path) in str(error.value), str(error.value)
    assert Submission.objects.count() == 0


GUIDELLM_JSON = GUIDELLM / "concurrent" / "benchmarks.json"
GUIDELLM_POISSON = GUIDELLM / "poisson" / "benchmarks.json"
AIPERF_LEVEL = AIPERF / "concurrency" / "concurrency_4" / "profile_export_aiperf.json"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            lambda d: d["metadata"].update(guidellm_version="0.9.0"),
            "guidellm 0.9.0 with report metadata.version 2 is not a version this importer knows (guidellm 0.8.1",
        ),
        (lambda d: d["metadata"].update(version=3), "guidellm 0.8.1 with report metadata.version 3 is not a version"),
        (
            lambda d: d["benchmarks"][1]["metrics"]["request_totals"].update(total=41),
            "benchmarks[1].metrics.request_totals.total 41 is not successful + errored + incomplete",
        ),
        (
            lambda d: d["benchmarks"][2]["config"]["strategy"].update(type_="replay"),
            "benchmarks[2].config.strategy.type_ 'replay' in a profile of kind 'concurrent' is not a load",
        ),
        (
            lambda d: d["benchmarks"][0]["metrics"].pop("time_to_first_token_ms"),
            "has no benchmarks[0].metrics.time_to_first_token_ms.successful object",
        ),
        (
            lambda d: d["benchmarks"][0]["metrics"]["inter_token_latency_ms"]["successful"].update(count=1985),
            "benchmarks[0].metrics.inter_token_latency_ms.successful.count 1985 is not a whole number of requests",
        ),
    ],
)
def test_an_unknown_or_altered_guidellm_report_is_refused_and_stores_nothing(tmp_path, user, change, words):
    refused(tmp_path, altered(tmp_path, GUIDELLM_JSON, change), words)


def test_guidellm_requests_of_different_lengths_give_no_per_user_rate(tmp_path, user):
    """guidellm weighs each request's TPOT by its output tokens − 1: where the lengths differ its percentiles are
    not the requests', so no per-user rate is derived and the TPOT is marked as weighed."""
    path = altered(
        tmp_path,
        GUIDELLM_JSON,
        lambda d: d["benchmarks"][0]["metrics"]["output_token_count"]["successful"].update(min=31.0),
    )
    docs = run_import(tmp_path, path)
    assert ["tokens_per_second_per_user" in d["metrics"] for d in docs] == [False, True, True]
    unparsed = docs[0]["provenance"]["origin"]["unparsed"]
    assert unparsed["tokens_per_second_per_user"].startswith("not imported: the successful requests wrote different")
    assert "count is the gaps" in unparsed["tpot_ms"] and docs[0]["metrics"]["tpot_ms"]["count"] == 64 * 31


def test_a_guidellm_report_cut_short_is_refused(tmp_path, user):
    path = copy_of(tmp_path, GUIDELLM_JSON)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    refused(tmp_path, path, "nor a YAML mapping; a tool's result file is expected")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d.update(aiperf_version="0.14.0"), "aiperf 0.14.0 with schema_version 1.4 is not a version"),
        (lambda d: d.update(schema_version="1.5"), "aiperf 0.13.0 with schema_version 1.5 is not a version"),
        (
            lambda d: d["input_config"]["phases"][0].update(type="user_centric"),
            "input_config.phases[0].type 'user_centric' is not a load this importer reads",
        ),
        (lambda d: d.update(is_complete=False), "aiperf says this benchmark is not complete"),
        (lambda d: d["time_to_first_token"].update(unit="s"), "time_to_first_token is in 's', not 'ms'"),
    ],
)
def test_an_unknown_or_altered_aiperf_0_13_summary_is_refused_and_stores_nothing(tmp_path, user, change, words):
    refused(tmp_path, altered(tmp_path, AIPERF_LEVEL, change), words)


def test_aiperf_0_13_per_request_records_disagreeing_with_the_summary_are_refused(tmp_path, user):
    folder = copy_of(tmp_path, AIPERF / "concurrency" / "concurrency_1")
    records = folder / "profile_export.jsonl"
    records.write_text("\n".join(records.read_text().splitlines()[1:]) + "\n")
    with pytest.raises(CommandError, match="number of time_to_first_token records from the per-request records"):
        run_import(tmp_path, folder)
    assert Submission.objects.count() == 0


def test_an_aiperf_run_with_a_warm_up_imports_its_measured_phase_and_states_the_warm_up(tmp_path, user):
    """aiperf writes its warm-up requests into the same per-request file and each phase's summary apart: the level is
    the profiling phase (the per-request check counts its records alone), the warm-up is stated, and the per-phase
    copies are not levels."""
    docs = run_import(tmp_path, AIPERF_MULTITURN.parent)
    assert len(docs) == 1
    (doc,) = docs
    summary = json.loads((AIPERF_MULTITURN / "profile_export_aiperf.json").read_text())
    assert protocol.errors(doc) == []
    assert doc["conditions"]["warmup"] == {"iterations": 4, "seconds": None}
    fields = doc["provenance"]["origin"]["fields"]
    assert fields["/conditions/warmup"].endswith("phases[0] (kind warmup): requests, duration")
    assert doc["metrics"]["requests"]["completed"] == summary["request_count"]["avg"] == 48
    assert set(doc["provenance"]["origin"]["files"]) == {"profile_export_aiperf.json", "profile_export.jsonl"}
    # reasoning first: TTFT is the first reasoning token, TTFOT the first answer token, six 12 ms gaps later
    assert doc["metrics"]["ttft_ms"]["p50"] == summary["time_to_first_token"]["p50"]
    assert doc["metrics"]["ttfot_ms"]["p50"] == summary["time_to_first_output_token"]["p50"]
    assert doc["metrics"]["ttfot_ms"]["p50"] - doc["metrics"]["ttft_ms"]["p50"] == pytest.approx(72, abs=15)


def test_aiperf_conversations_are_a_multi_turn_shape_never_the_single_turn_one_of_the_same_lengths(tmp_path, user):
    (doc,) = run_import(tmp_path, AIPERF_MULTITURN)
    shape = doc["workload"]["request_shape"]
    assert shape["turns"] == "multi" and shape["input_tokens"]["mean"] == 64
    assert "conversations of 3 turns" in shape["notes"]
    fields = doc["provenance"]["origin"]["fields"]
    assert fields["/workload/request_shape/turns"].endswith(
        "datasets[0].turns (mean, stddev (absent: 0, as aiperf reads it))"
    )
    single = run_import(tmp_path, AIPERF / "concurrency" / "concurrency_4")
    single_shape = next(d for d in single if d["scenario"]["concurrency"] == 4)["workload"]["request_shape"]
    assert single_shape["turns"] == "single"
    # the same run with the single-turn shape of its lengths is another comparable set on every axis
    as_single = copy.deepcopy(doc)
    as_single["workload"]["request_shape"] = single_shape
    keys, single_keys = comparability_keys(doc), comparability_keys(as_single)
    assert keys.keys() == single_keys.keys() and all(keys[axis] != single_keys[axis] for axis in keys)


@pytest.mark.parametrize("phase", ["warmup", "profiling"])
def test_an_aiperf_per_phase_summary_named_alone_is_refused_by_name(tmp_path, user, phase):
    path = AIPERF_MULTITURN / "phases" / phase / "profile_export_aiperf.json"
    with pytest.raises(CommandError) as error:
        run_import(tmp_path, path)
    words = str(error.value)
    assert f"is aiperf's summary of its {phase} phase alone" in words and "the level is the run's own summary" in words
    assert str(AIPERF_MULTITURN / "profile_export_aiperf.json") in words
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("edit", "count"),
    [
        # a measured request dropped: 47 profiling records against the summary's 48
        (lambda lines: [lines[i] for i in range(len(lines)) if i != 10], 47),
        # a warm-up record passed off as measured: 49
        (lambda lines: [lines[0].replace('phase":"warmup"', 'phase":"profiling"'), *lines[1:]], 49),
    ],
)
def test_aiperf_warm_up_records_are_left_out_of_the_check_not_the_check_itself(tmp_path, user, edit, count):
    folder = copy_of(tmp_path, AIPERF_MULTITURN)
    records = folder / "profile_export.jsonl"
    lines = records.read_text().splitlines()
    assert '"benchmark_phase":"warmup"' in lines[0] and '"benchmark_phase":"profiling"' in lines[10]
    records.write_text("\n".join(edit(lines)) + "\n")
    with pytest.raises(CommandError, match=f"time_to_first_token records from the per-request records is {count} but"):
        run_import(tmp_path, folder)
    assert Submission.objects.count() == 0


def test_an_aiperf_ramp_up_is_said_and_lengths_stated_as_a_mean_alone_are_constant(tmp_path, user):
    (doc,) = run_import(tmp_path, AIPERF_RAMP)
    assert doc["scenario"]["concurrency"] == 8
    ramp = doc["provenance"]["origin"]["unparsed"]["ramp_up"]
    assert ramp.startswith("concurrency raised to its level over the first 3.0 s") and "include the ramp" in ramp
    # aiperf's export leaves stddev out when it was not set: aiperf reads a mean alone as stddev 0
    assert doc["workload"]["request_shape"] == {
        "kind": "fixed",
        "input_tokens": {"mean": 64, "stdev": 0, "distribution": "constant"},
        "output_tokens": {"mean": 32, "stdev": 0, "distribution": "constant"},
        "turns": "single",
    }
    assert (
        "absent: 0, as aiperf reads it" in doc["provenance"]["origin"]["fields"]["/workload/request_shape/input_tokens"]
    )


@pytest.mark.parametrize(
    ("isl", "shape"),
    [
        (64, {"mean": 64, "stdev": 0, "distribution": "constant"}),  # a number: aiperf's FixedDistribution
        ({"value": 64}, {"mean": 64, "stdev": 0, "distribution": "constant"}),
        ({"mean": 64, "stddev": 8}, {"mean": 64, "stdev": 8, "distribution": "normal"}),
        ({"mean": 64, "median": 50}, None),  # lognormal: no field for it, the deployment must state the shape
        ({"peaks": [{"mean": 64}]}, None),
        ({"mean": -1}, None),
    ],
)
def test_aiperf_length_laws_are_read_as_aiperf_reads_them(tmp_path, user, isl, shape):
    path = altered(tmp_path, AIPERF_RAMP, lambda d: d["input_config"]["datasets"][0]["prompts"].update(isl=isl))
    if shape is None:
        refused(tmp_path, path, "aiperf's files do not state the request shape")
    else:
        (doc,) = run_import(tmp_path, path)
        assert doc["workload"]["request_shape"]["input_tokens"] == shape


def test_guidellm_conversations_are_a_multi_turn_shape_and_their_first_turns_are_the_stated_length(tmp_path, user):
    (doc,) = run_import(tmp_path, GUIDELLM_MULTITURN)
    bench = json.loads(GUIDELLM_MULTITURN.read_text())["benchmarks"][0]
    shape = doc["workload"]["request_shape"]
    assert shape["turns"] == "multi" and "conversations of 3 turns" in shape["notes"]
    assert shape["input_tokens"]["mean"] == 64 and shape["output_tokens"]["mean"] == 32
    # the prompts grow with the conversation (mean 154 over the turns) but the first turns' are the stated 64: the
    # note that a tokenizer dropped words is not written
    assert stats(bench, "prompt_token_count")["mean"] > 100
    assert "request_shape" not in doc["provenance"]["origin"]["unparsed"]
    assert doc["provenance"]["origin"]["fields"]["/workload/request_shape/turns"].endswith("config.spec.data[0].turns")


def test_aiperf_gamma_arrivals_import_with_their_shape_as_vllm_burstiness_does(tmp_path, user):
    (doc,) = run_import(tmp_path, AIPERF_GAMMA)
    phase = json.loads(AIPERF_GAMMA.read_text())["input_config"]["phases"][0]
    assert phase["type"] == "gamma" and phase["smoothness"] == 0.5
    scenario = doc["scenario"]
    assert (scenario["arrival"], scenario["burstiness"], scenario["target_qps"]) == ("gamma", 0.5, phase["rate"])
    assert doc["provenance"]["origin"]["fields"]["/scenario/burstiness"].endswith("input_config.phases[0].smoothness")


@pytest.mark.parametrize(
    ("smoothness", "arrival", "burstiness"),
    [(None, "poisson", 1.0), (1.0, "poisson", 1.0), (3.0, "gamma", 3.0)],  # absent: aiperf's default, Poisson
)
def test_aiperf_gamma_smoothness_absent_or_one_is_poisson(tmp_path, user, smoothness, arrival, burstiness):
    def change(d: dict[str, Any]) -> None:
        phase = d["input_config"]["phases"][0]
        phase.pop("smoothness")
        if smoothness is not None:
            phase["smoothness"] = smoothness

    (doc,) = run_import(tmp_path, altered(tmp_path, AIPERF_GAMMA, change))
    assert (doc["scenario"]["arrival"], doc["scenario"]["burstiness"]) == (arrival, burstiness)


@pytest.mark.parametrize("smoothness", [0, -1, "fast"])
def test_an_aiperf_gamma_shape_that_is_not_a_positive_number_is_refused(tmp_path, user, smoothness):
    path = altered(tmp_path, AIPERF_GAMMA, lambda d: d["input_config"]["phases"][0].update(smoothness=smoothness))
    refused(tmp_path, path, f"input_config.phases[0].smoothness {smoothness!r} is no gamma shape")


@pytest.mark.parametrize("set_up", [False, True])
def test_a_guidellm_warm_up_is_stated_only_where_its_config_set_one(tmp_path, user, set_up):
    """guidellm's warmup_duration is the seconds before its window (measure start − first request): stated as the
    warm-up where the benchmark's config set one, never read into a run that set none (0.0 in every real file)."""

    def change(d: dict[str, Any]) -> None:
        bench = d["benchmarks"][0]
        bench["warmup_duration"] = 2.04
        if set_up:
            bench["config"]["warmup"].update(value=2.0)

    (doc,) = run_import(tmp_path, altered(tmp_path, GUIDELLM_POISSON, change))
    fields = doc["provenance"]["origin"]["fields"]
    if not set_up:
        assert doc["conditions"]["warmup"] is None and "/conditions/warmup" not in fields
        return
    assert doc["conditions"]["warmup"] == {"iterations": None, "seconds": 2.04}
    # guidellm's start_time is the window's: the run began 2.04 s earlier, with the warm-up
    window_start = json.loads(GUIDELLM_POISSON.read_text())["benchmarks"][0]["start_time"]
    assert datetime.fromisoformat(doc["provenance"]["started_at"]).timestamp() == pytest.approx(window_start - 2.04)
    assert fields["/conditions/warmup"].endswith(
        "benchmarks[0].warmup_duration (sec), as benchmarks[0].config.warmup set it (value 2.0, mode prefer_duration)"
    )


@pytest.mark.parametrize(("limit", "words"), [("requests", "value 8"), ("duration", "value 1.5")])
def test_a_real_guidellm_warm_up_and_cool_down_are_stated_and_the_run_spans_both(tmp_path, user, limit, words):
    """guidellm's own files with a warm-up and a cool-down (8 requests each, or 1.5 s and 1 s): the window is the
    measured part, the warm-up is stated in seconds, the cool-down said in words, and the run's times are its
    first request's start and its last request's end, as guidellm's scheduler recorded them."""
    path = GUIDELLM_WARMUP / limit / "benchmarks.json"
    (doc,) = run_import(tmp_path, path)
    bench = json.loads(path.read_text())["benchmarks"][0]
    check_guidellm_level(doc, bench)
    scheduler = bench["scheduler_metrics"]
    assert doc["conditions"]["warmup"] == {"iterations": None, "seconds": bench["warmup_duration"]}
    assert doc["conditions"]["window"]["seconds"] == bench["duration"]
    assert doc["metrics"]["requests"]["completed"] == bench["metrics"]["request_totals"]["successful"]
    # fewer than the requests made: the warm-up's and the cool-down's are not in the figures
    assert doc["metrics"]["requests"]["completed"] < scheduler["requests_made"]["successful"]
    started = datetime.fromisoformat(doc["provenance"]["started_at"]).timestamp()
    finished = datetime.fromisoformat(doc["provenance"]["finished_at"]).timestamp()
    assert started == pytest.approx(scheduler["request_start_time"], abs=1e-5)
    assert finished == pytest.approx(scheduler["request_end_time"], abs=1e-5)
    fields = doc["provenance"]["origin"]["fields"]
    assert f"({words}, mode prefer_duration)" in fields["/conditions/warmup"]
    assert fields["/provenance/finished_at"].endswith("end_time + cooldown_duration (the last request; UTC)")
    cooldown = doc["provenance"]["origin"]["unparsed"]["cooldown"]
    assert cooldown.startswith(f"the last {bench['cooldown_duration']:.4g} s of the run (a cool-down")


def test_a_real_guidellm_ramp_up_is_said(tmp_path, user):
    (doc,) = run_import(tmp_path, GUIDELLM_RAMPUP)
    bench = json.loads(GUIDELLM_RAMPUP.read_text())["benchmarks"][0]
    check_guidellm_level(doc, bench)
    ramp = doc["provenance"]["origin"]["unparsed"]["ramp_up"]
    assert ramp.startswith("streams raised to the level over the first 2 s of the run") and "no warm-up" in ramp
    assert doc["conditions"]["warmup"] is None and "cooldown" not in doc["provenance"]["origin"]["unparsed"]


@pytest.mark.parametrize(("warmup", "after"), [(1.5, "0.5 s of it after the warm-up"), (2.5, None)])
def test_a_guidellm_ramp_up_is_said_where_it_outlasts_the_warm_up(tmp_path, user, warmup, after):
    def warmed(d: dict[str, Any]) -> None:
        d["benchmarks"][0]["config"]["warmup"].update(value=warmup)
        d["benchmarks"][0]["warmup_duration"] = warmup

    (doc,) = run_import(tmp_path, altered(tmp_path, GUIDELLM_RAMPUP, warmed))
    ramp = doc["provenance"]["origin"]["unparsed"].get("ramp_up")
    assert (ramp is None) if after is None else (after in ramp)


@pytest.mark.parametrize("manifest", ["[" * 100_000, "not json", '{"phases": [{"metrics_json": 7}]}'])
def test_a_broken_aiperf_phase_manifest_leaves_the_phase_copies_to_be_refused_as_levels(tmp_path, user, manifest):
    """Without a manifest to say which summaries are per-phase copies, they are read as levels of the same load and
    the folder is refused in words, nothing stored (never a traceback from the manifest itself)."""
    folder = copy_of(tmp_path, AIPERF_MULTITURN)
    (folder / "phase_manifest.json").write_text(manifest)
    with pytest.raises(CommandError, match="offer the same load"):
        run_import(tmp_path, folder)
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        ({"kind": "fixed", "turns": "single"}, "turns 'single' where the files say 'multi'"),
        ({"kind": "fixed", "input_tokens": {"mean": 1000}}, "input_tokens mean 1000 where the files say 64.0"),
        ({"kind": "fixed", "input_tokens": {"mean": 64}, "output_tokens": {"mean": 32}, "turns": "multi"}, None),
    ],
)
def test_a_deployment_may_restate_the_files_request_shape_never_contradict_it(tmp_path, user, shape, words):
    deployment = tmp_path / "stated.json"
    deployment.write_text(json.dumps({**DEPLOYMENT, "workload": {**DEPLOYMENT["workload"], "request_shape": shape}}))
    command = ("import_results", "serving", str(AIPERF_MULTITURN), "--deployment", str(deployment))
    if words is None:
        call_command(*command)
        assert Submission.objects.get().document["workload"]["request_shape"] == shape  # the deployment's words
        return
    with pytest.raises(CommandError) as error:
        call_command(*command)
    assert "the deployment's workload.request_shape contradicts the result files" in str(error.value)
    assert words in str(error.value) and Submission.objects.count() == 0


def test_a_guidellm_warm_up_set_as_no_number_is_said_as_written(tmp_path, user):
    """A percent that is no number is said as written, never a traceback formatting it."""
    source = GUIDELLM_WARMUP / "requests" / "benchmarks.json"

    def percent(d: dict[str, Any]) -> None:
        d["benchmarks"][0]["config"]["warmup"].update(percent="ten", value=None)

    (doc,) = run_import(tmp_path, altered(tmp_path, source, percent))
    assert "('ten' of the run, mode prefer_duration)" in doc["provenance"]["origin"]["fields"]["/conditions/warmup"]


def test_a_guidellm_cool_down_past_any_time_is_refused_by_field(tmp_path, user):
    def endless(d: dict[str, Any]) -> None:
        d["benchmarks"][0]["cooldown_duration"] = 1e300

    source = GUIDELLM_WARMUP / "requests" / "benchmarks.json"
    refused(tmp_path, altered(tmp_path, source, endless), "end_time (with the cool-down) 1e+300 is no time")
