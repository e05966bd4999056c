"""Result files written by vLLM 0.33.0's own `vllm bench serve --save-result` against the simulated endpoint
(tests/fixtures/serving/vllm-0.33.0, README.md there) import whole through `benchreg import serving`: one run per
file, the files of one sweep sharing a sweep id, every figure the file's own and traced to its field, failures
counted; a file of another shape, or disagreeing with itself, is refused by file and field and nothing is stored."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

import protocol
from protocol.serving.frontier import frontier
from protocol.serving.levels import levels
from registry.models import Submission

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "serving" / "vllm-0.33.0"
RATES = FIXTURES / "rate-sweep"
CONCURRENCY = FIXTURES / "concurrency-sweep"
FAILURES = FIXTURES / "failures" / "gamma-8qps-lora-missing.json"
SHORT = FIXTURES / "short-window" / "concurrency-16-16-prompts.json"
SWEPT = FIXTURES.parent / "vllm-0.34.0" / "sweep-serve" / "linked"
SWEPT_RUN = SWEPT / "SERVE--cap2-BENCH--c2" / "run=0.json"
SHAPE = {"kind": "fixed", "input_tokens": {"mean": 32}, "output_tokens": {"mean": 16}, "turns": "single"}
DEPLOYMENT: dict[str, Any] = {
    "system": {"accelerators": {"vendor": "NVIDIA", "model": "H100", "count": 1}},
    "engine": {"name": "benchreg-simulated", "version": "1"},
    "precision": {"weights": "bf16", "activations": "bf16", "kv_cache": "bf16"},
    "parallelism": {"tensor": 1},
    "workload": {"name": "random-fixed", "request_shape": SHAPE},
}


def deployment(tmp_path: Path, **changes: Any) -> Path:
    values = json.loads(json.dumps(DEPLOYMENT))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = values
        for part in parents:
            node = node[part]
        if value is None:
            node.pop(last)
        else:
            node[last] = value
    path = tmp_path / "deployment.json"
    path.write_text(json.dumps(values))
    return path


def run_import(tmp_path: Path, *files: Path, **changes: Any) -> None:
    call_command("import_results", "serving", *map(str, files), "--deployment", str(deployment(tmp_path, **changes)))


def by_load() -> list[Submission]:
    def load(run: Submission) -> float:
        scenario = run.document["scenario"]
        return scenario["target_qps"] or scenario["concurrency"]

    return sorted(Submission.objects.all(), key=load)


def test_the_rate_sweep_imports_whole_with_every_figure_from_its_field(tmp_path, user):
    files = sorted(RATES.glob("*.json"))
    run_import(tmp_path, *files)
    runs = by_load()
    assert [r.document["scenario"]["target_qps"] for r in runs] == [4.0, 8.0, 16.0]
    assert len({r.document["scenario"]["sweep"]["id"] for r in runs}) == 1
    for index, run in enumerate(runs):
        doc = run.document
        name = f"rate-{int(doc['scenario']['target_qps'])}qps.json"
        vllm = json.loads((RATES / name).read_text())
        assert protocol.errors(doc) == [] and run.trust == "declared"
        assert doc["scenario"]["sweep"] == {
            "id": doc["scenario"]["sweep"]["id"],
            "index": index,
            "levels": 3,
            "mode": "request-rate",
            "stop_reason": None,
        }
        assert (doc["scenario"]["arrival"], doc["scenario"]["burstiness"]) == ("poisson", 1.0)
        assert doc["software"]["serving"]["tool"]["name"] == "vllm-bench-serve"
        assert doc["software"]["serving"]["api"] == "completions"
        metrics, fields = doc["metrics"], doc["provenance"]["origin"]["fields"]
        assert metrics["throughput"]["value"] == vllm["output_throughput"]
        assert metrics["request_rate"]["value"] == vllm["request_throughput"]
        assert metrics["goodput"]["value"] == vllm["request_goodput"]
        assert metrics["requests"] == {"sent": 80, "completed": 80, "errors": 0, "timeouts": 0, "incomplete": 0}
        assert metrics["token_counts"]["output_total"] == vllm["total_output_tokens"] == 80 * 16
        assert doc["conditions"]["window"]["seconds"] == vllm["duration"]
        for target, metric in (("ttft_ms", "ttft"), ("tpot_ms", "tpot"), ("latency_ms", "e2el")):
            assert metrics[target]["mean"] == vllm[f"mean_{metric}_ms"]
            assert metrics[target]["p50"] == vllm[f"median_{metric}_ms"]
            assert metrics[target]["p90"] == vllm[f"p90_{metric}_ms"]  # 80 requests: p90 needs 64
            assert "p99" not in metrics[target]  # p99 needs 662
            assert fields[f"/metrics/{target}/p90"] == f"{name}: p90_{metric}_ms"
        # the protocol's tokens per second per user, from vLLM's own per-request arrays
        ok = [i for i, e in enumerate(vllm["errors"]) if e == ""]
        rates = [vllm["output_lens"][i] / (vllm["latencies"][i] - vllm["ttfts"][i]) for i in ok]
        assert metrics["tokens_per_second_per_user"]["p50"] == pytest.approx(np.percentile(rates, 50), rel=1e-6)
        # completions stream a closing chunk without text: 16 gaps for 16 tokens, so vLLM's ITL is not token gaps
        assert "itl_ms" not in metrics
        assert "not imported" in doc["provenance"]["origin"]["unparsed"]["itl_ms"]
        assert "from the moment it sends" in doc["provenance"]["origin"]["unparsed"]["ttft_ms"]
    # the sweep reaches the frontier: every level has tokens/s per user and throughput per accelerator
    placed = levels([r.document for r in runs])
    assert [lv.load for lv in placed] == [4.0, 8.0, 16.0]
    assert all(lv.per_user.value is not None and lv.per_accelerator.value is not None for lv in placed)
    assert frontier(placed)


def test_the_concurrency_sweep_imports_as_closed_loop_levels(tmp_path, user):
    run_import(tmp_path, *sorted(CONCURRENCY.glob("*.json")))
    runs = by_load()
    assert [r.document["scenario"]["concurrency"] for r in runs] == [1, 4, 16]
    assert len({r.document["scenario"]["sweep"]["id"] for r in runs}) == 1
    for run in runs:
        doc = run.document
        vllm = json.loads((CONCURRENCY / f"concurrency-{doc['scenario']['concurrency']}.json").read_text())
        assert protocol.errors(doc) == []
        assert (doc["scenario"]["arrival"], doc["scenario"]["sweep"]["mode"]) == ("closed-loop", "concurrency")
        assert "burstiness" not in doc["scenario"]  # a gamma shape belongs to the arrivals of a rate only
        assert doc["metrics"]["requests"]["sent"] == vllm["num_prompts"] == 16 * doc["scenario"]["concurrency"]
        assert doc["software"]["serving"]["api"] == "chat"
        assert doc["metrics"]["ttft_ms"]["p50"] == vllm["median_ttft_ms"]
        assert "latency_ms" not in doc["metrics"]  # vLLM's default --percentile-metrics has no e2el
        detailed = "errors" in vllm
        assert ("tokens_per_second_per_user" in doc["metrics"]) == detailed
        if detailed:
            # chat streams one chunk per token: the gaps are token gaps, checked against vLLM's summary
            itl = doc["metrics"]["itl_ms"]
            assert itl["mean"] == vllm["mean_itl_ms"] and itl["count"] == sum(len(g) for g in vllm["itls"])
        else:
            assert "itl_ms" not in doc["metrics"]
            assert "count is completed" in doc["provenance"]["origin"]["unparsed"]["tpot_ms"]


def test_failed_requests_are_counted_never_dropped(tmp_path, user):
    run_import(tmp_path, FAILURES)
    doc = Submission.objects.get().document
    vllm = json.loads(FAILURES.read_text())
    assert vllm["failed"] == 10
    assert doc["metrics"]["requests"] == {"sent": 40, "completed": 30, "errors": 10, "timeouts": 0, "incomplete": 0}
    assert doc["metrics"]["ttft_ms"]["count"] == 30
    assert (doc["scenario"]["arrival"], doc["scenario"]["burstiness"]) == ("gamma", 0.5)
    assert "Not Found" in doc["provenance"]["origin"]["unparsed"]["errors"]
    assert protocol.errors(doc) == []


def test_every_fixture_in_one_command_makes_three_sweeps_and_again_nothing_new(tmp_path, user):
    files = [*RATES.glob("*.json"), *CONCURRENCY.glob("*.json"), FAILURES]
    run_import(tmp_path, *files)
    first = {r.digest for r in Submission.objects.all()}
    run_import(tmp_path, *files)
    assert {r.digest for r in Submission.objects.all()} == first and len(first) == 7
    assert len({r.document["scenario"]["sweep"]["id"] for r in Submission.objects.all()}) == 3


def altered(tmp_path: Path, source: Path, change: Any) -> Path:
    data = json.loads(source.read_text())
    change(data)
    path = tmp_path / source.name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("source", "change", "words"),
    [
        (RATES / "rate-4qps.json", lambda d: d.update(new_figure=1.5), "key 'new_figure' is not one vllm bench serve"),
        (RATES / "rate-4qps.json", lambda d: d.pop("failed"), "has no failed: not a generation result"),
        (RATES / "rate-4qps.json", lambda d: d.update(backend="openai-embeddings"), "backend 'openai-embeddings'"),
        (RATES / "rate-4qps.json", lambda d: d.update(request_rate="inf"), "every request was sent at once"),
        (RATES / "rate-4qps.json", lambda d: d.update(ramp_up_strategy="linear"), "no single load level"),
        (RATES / "rate-4qps.json", lambda d: d["ttfts"].__setitem__(0, 9.0), "the mean of the per-request ttft"),
        (FAILURES, lambda d: d["errors"].__setitem__(0, "boom"), "errors has 29 empty entries"),
        (RATES / "rate-4qps.json", lambda d: d.update(total_output_tokens=1), "the sum of output_lens is 1280"),
        (SWEPT_RUN, lambda d: d.update(run_number="0"), "run_number '0' is not a run of vllm bench sweep serve"),
        (SWEPT_RUN, lambda d: d.update({f"k{i}": i for i in range(150)}), "151 overrides of vllm bench sweep serve"),
    ],
    ids=[
        "unknown-key",
        "no-failed",
        "embeddings",
        "inf-rate-no-cap",
        "ramp-up",
        "ttfts",
        "errors",
        "token-total",
        "sweep-run-number",
        "sweep-overrides",
    ],
)
def test_a_file_of_another_shape_or_disagreeing_with_itself_is_refused_and_nothing_stored(
    tmp_path, user, source, change, words
):
    bad = altered(tmp_path, source, change)
    with pytest.raises(CommandError) as refused:
        run_import(tmp_path, RATES / "rate-8qps.json", bad)  # a good file beside it is not stored either
    assert words in str(refused.value) and str(bad) in str(refused.value)
    assert "nothing was stored" in str(refused.value)
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("missing", "words"),
    [
        ("workload__request_shape", "do not state the request shape"),
        ("workload__name", "workload.name"),
        ("engine__name", "the serving engine"),
    ],
)
def test_what_vllm_does_not_record_is_asked_of_the_deployment(tmp_path, user, missing, words):
    with pytest.raises(CommandError, match=words):
        run_import(tmp_path, RATES / "rate-4qps.json", **{missing: None})
    assert Submission.objects.count() == 0


def test_a_level_shorter_than_the_protocols_window_is_refused_by_its_duration(tmp_path, user):
    vllm = json.loads(SHORT.read_text())
    assert vllm["duration"] < 1
    with pytest.raises(CommandError, match=r"duration .* s: the protocol needs a measurement window of at least 1 s"):
        run_import(tmp_path, *CONCURRENCY.glob("*.json"), SHORT)
    assert Submission.objects.count() == 0


def test_metadata_text_is_kept_as_a_note(tmp_path, user):
    run_import(tmp_path, altered(tmp_path, RATES / "rate-4qps.json", lambda d: d.update(gpu="probe")))
    notes = Submission.objects.get().document["provenance"]["origin"]["unparsed"]
    assert notes["metadata.gpu"] == "probe"


APPENDED = FIXTURES.parent / "vllm-0.34.0" / "append-result" / "rate-sweep.json"


@pytest.mark.parametrize("named", ["file", "folder"])
def test_vllm_appended_results_import_as_a_sweep_one_level_a_line(tmp_path, user, named):
    """`vllm bench serve --append-result` (vLLM 0.34.0) writes each run's result as a line of one file: each line is
    a level, the file a sweep; the levels share the file's digest and are told apart as measurements by their line."""
    run_import(tmp_path, APPENDED if named == "file" else APPENDED.parent)
    runs = by_load()
    lines = [json.loads(line) for line in APPENDED.read_text().splitlines()]
    assert [r.document["scenario"]["target_qps"] for r in runs] == [line["request_rate"] for line in lines] == [4, 8]
    assert len({r.document["scenario"]["sweep"]["id"] for r in runs}) == 1
    assert len({r.measurement for r in runs}) == 2  # two measurements, not one file counted once
    for n, (run, vllm) in enumerate(zip(runs, lines, strict=True), start=1):
        doc = run.document
        assert protocol.errors(doc) == []
        origin = doc["provenance"]["origin"]
        assert origin["files"] == {"rate-sweep.json": "sha256:" + hashlib.sha256(APPENDED.read_bytes()).hexdigest()}
        assert origin["scenario"] == f"line {n}: {vllm['request_rate']:g} req/s"
        assert origin["fields"]["/conditions/window/seconds"] == f"rate-sweep.json line {n}: duration (s)"
        assert doc["metrics"]["ttft_ms"]["p50"] == vllm["median_ttft_ms"]
        assert doc["metrics"]["requests"]["completed"] == vllm["completed"] == 40
    # the same file again: the same runs, nothing stored twice
    run_import(tmp_path, APPENDED)
    assert Submission.objects.count() == 2


@pytest.mark.parametrize(
    ("second", "words"),
    [
        (b'{"date": "x", "oops"', "line 2 of vLLM's appended results is not JSON"),
        (b'{"date": "x", "backend": "openai"}', "line 2 of vLLM's appended results is not a result of vLLM's"),
    ],
)
def test_an_appended_results_file_with_a_bad_line_is_refused_by_line_and_nothing_stored(tmp_path, user, second, words):
    bad = tmp_path / "rate-sweep.json"
    bad.write_bytes(APPENDED.read_bytes().splitlines()[0] + b"\n" + second)
    with pytest.raises(CommandError) as refused:
        run_import(tmp_path, bad)
    assert words in str(refused.value) and str(bad) in str(refused.value)
    assert Submission.objects.count() == 0


def test_a_bad_line_after_a_blank_one_is_refused_by_the_line_an_editor_shows(tmp_path, user):
    bad = tmp_path / "rate-sweep.json"
    first = APPENDED.read_bytes().splitlines()[0]
    bad.write_bytes(first + b"\n\n" + b'{"date": "x", "oops"')  # the bad result is on line 3
    with pytest.raises(CommandError) as refused:
        run_import(tmp_path, bad)
    assert "line 3 of vLLM's appended results is not JSON" in str(refused.value)


def test_appended_results_after_a_blank_line_name_their_own_line(tmp_path, user):
    spaced = tmp_path / "rate-sweep.json"
    first, second = APPENDED.read_bytes().splitlines()[:2]
    spaced.write_bytes(first + b"\n\n" + second + b"\n")
    run_import(tmp_path, spaced)
    assert [r.document["provenance"]["origin"]["scenario"] for r in by_load()] == ["line 1: 4 req/s", "line 3: 8 req/s"]


def test_a_folder_of_vllm_results_imports_whatever_their_names_and_leaves_other_json_alone(tmp_path, user):
    folder = tmp_path / "results"
    folder.mkdir()
    for source in RATES.glob("*.json"):
        (folder / f"openai-{source.stem}-simulated-20261126.json").write_bytes(source.read_bytes())
    (folder / "notes.json").write_text('{"what": "not a result"}')  # opens otherwise: left alone
    run_import(tmp_path, folder)
    assert [r.document["scenario"]["target_qps"] for r in by_load()] == [4.0, 8.0, 16.0]


def _sweeps() -> dict[str, list[Submission]]:
    out: dict[str, list[Submission]] = {}
    for run in by_load():
        out.setdefault(run.document["scenario"]["sweep"]["id"], []).append(run)
    return out


def test_a_vllm_sweep_serve_experiment_imports_each_run_as_a_sweep_tuned_per_load(tmp_path, user):
    """`vllm bench sweep serve` (vLLM 0.34.0), the engine relaunched per load with its capacity linked to the
    concurrency, two runs a combination after a warm-up run: two sweeps (one a run) of three levels, each level with
    its capacity as a setting, the first run's levels with the warm-up stated; the combinations' summaries and the
    warm-up runs are no levels."""
    run_import(tmp_path, SWEPT)
    sweeps = _sweeps()
    assert sorted(len(sweep) for sweep in sweeps.values()) == [3, 3]
    for sweep in sweeps.values():
        numbers = {lv.document["provenance"]["origin"]["unparsed"]["repetition"].split()[1] for lv in sweep}
        assert len(numbers) == 1  # one run number a sweep
        number = numbers.pop()
        for level in sweep:
            doc = level.document
            load = doc["scenario"]["concurrency"]
            folder = SWEPT / f"SERVE--cap{load}-BENCH--c{load}"
            vllm = json.loads((folder / f"run={number}.json").read_text())
            assert protocol.errors(doc) == []
            assert doc["software"]["settings"] == {"capacity": vllm["capacity"]} == {"capacity": load}
            assert doc["metrics"]["ttft_ms"]["mean"] == vllm["mean_ttft_ms"]
            files = doc["provenance"]["origin"]["files"]
            if number == "0":
                warmup = folder / "warmup.json"
                seconds = json.loads(warmup.read_text())["duration"]
                assert doc["conditions"]["warmup"] == {"iterations": 8, "seconds": seconds}
                assert files["warmup.json"] == "sha256:" + hashlib.sha256(warmup.read_bytes()).hexdigest()
            else:
                assert doc["conditions"]["warmup"] is None and set(files) == {"run=1.json"}


def test_a_decision_reads_a_sweep_serve_experiment_as_one_engine_tuned_per_load_with_two_runs_a_level(tmp_path, user):
    run_import(tmp_path, SWEPT)
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    question = {
        "workload": "random-fixed",
        "scenario": "server",
        "objectives": [{"metric": "ttft_ms", "percentile": "p50", "max_ms": 200}],
        "demand": {"value": 10, "unit": "requests/s"},
        "prices": {"system_hour": {"*": 4.0}},
    }
    response = client.post("/api/v1/decisions", {"title": "sweep", "question": question}, format="json")
    assert response.status_code == 201, response.content
    (candidate,) = response.json()["answer"]["candidates"]
    loads = candidate["sweep"]["levels"]
    assert [lv["load"] for lv in loads] == [2.0, 4.0, 8.0] and all(len(lv["runs"]) == 2 for lv in loads)
    assert "capacity set to the concurrency at every level (2 to 8)" in " ".join(response.json()["answer"]["summary"])


def test_a_sweep_serve_warm_up_named_alone_is_refused_in_words(tmp_path, user):
    with pytest.raises(CommandError, match=r"run_number -1: vllm bench sweep serve's warm-up run"):
        run_import(tmp_path, SWEPT / "SERVE--cap2-BENCH--c2" / "warmup.json")
    assert Submission.objects.count() == 0


def test_two_engines_measured_at_every_load_by_one_experiment_are_two_sweeps(tmp_path, user):
    """--serve-params with two capacities and no link: each load measured on both engines, so the capacity sets the
    engines apart and each engine's levels are a sweep (here the experiment's files, rewritten with capacities 16 and
    32 in place of the linked ones)."""
    experiment = tmp_path / "two-engines"
    for capacity in (16, 32):
        for folder in SWEPT.glob("SERVE--*"):
            load = folder.name.rsplit("c", 1)[1]
            target = experiment / f"SERVE--cap{capacity}-BENCH--c{load}"
            target.mkdir(parents=True)
            data = json.loads((folder / "run=0.json").read_text())
            (target / "run=0.json").write_text(json.dumps({**data, "capacity": capacity}, indent=4))
    run_import(tmp_path, experiment)
    sweeps = _sweeps()
    assert len(sweeps) == 2
    for sweep in sweeps.values():
        assert [lv.document["scenario"]["concurrency"] for lv in sweep] == [2, 4, 8]
        assert len({lv.document["software"]["settings"]["capacity"] for lv in sweep}) == 1


def test_lines_of_one_appended_file_that_are_two_sweeps_get_two_sweep_ids(tmp_path, user):
    lines = APPENDED.read_bytes().splitlines()
    other = json.loads(lines[1]) | {"label": "other-engine"}
    path = tmp_path / "rate-sweep.json"
    path.write_bytes(lines[0] + b"\n" + json.dumps(other).encode())
    run_import(tmp_path, path)
    sweeps = _sweeps()
    assert len(sweeps) == 2 and all(len(levels) == 1 for levels in sweeps.values())


def _experiment(tmp_path: Path, overrides: dict[str, dict[str, Any]]) -> Path:
    """An experiment of the fixture's run=0 results, one combination per (name, load), each with `overrides[name]`
    in place of the fixture's capacity (the driver adds only the overrides a combination sets)."""
    experiment = tmp_path / "experiment"
    for name, extra in overrides.items():
        for folder in SWEPT.glob("SERVE--*"):
            load = folder.name.rsplit("c", 1)[1]
            data = {k: v for k, v in json.loads((folder / "run=0.json").read_text()).items() if k != "capacity"}
            target = experiment / f"SERVE--{name}-BENCH--c{load}"
            target.mkdir(parents=True)
            (target / "run=0.json").write_text(json.dumps({**data, **extra}, indent=4))
    return experiment


def test_a_baseline_engine_beside_one_with_an_override_is_two_sweeps(tmp_path, user):
    """--serve-params [{}, {"enable_prefix_caching": true}]: the baseline's results carry no override at all."""
    run_import(tmp_path, _experiment(tmp_path, {"base": {}, "cached": {"enable_prefix_caching": True}}))
    sweeps = _sweeps()
    assert len(sweeps) == 2
    settings = sorted(str(levels[0].document["software"].get("settings")) for levels in sweeps.values())
    assert settings == ["None", "{'enable_prefix_caching': True}"]


def test_two_experiments_that_share_a_folder_name_stay_apart(tmp_path, user):
    """Two `vllm bench sweep serve` experiments copied under two parents with one name (an output folder named by
    the user) are two experiments: each run of each is a sweep, not one group refused as the same load twice."""
    for parent, capacity_step in (("monday", 0), ("tuesday", 1)):
        experiment = tmp_path / parent / "linked"
        for source in SWEPT.rglob("run=*.json"):
            target = experiment / source.relative_to(SWEPT)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = json.loads(source.read_text())
            data["duration"] += capacity_step  # another experiment's files: other digests
            target.write_text(json.dumps(data, indent=4))
    run_import(tmp_path, tmp_path / "monday", tmp_path / "tuesday")
    assert sorted(len(sweep) for sweep in _sweeps().values()) == [3, 3, 3, 3]


def test_run_files_lying_in_two_plain_folders_are_two_experiments(tmp_path, user):
    """Run files of one combination each, straight in folders of their own (no SERVE--…-BENCH--… folder): each
    folder's runs stand apart from the other's."""
    for load in (2, 4):
        source = SWEPT / f"SERVE--cap{load}-BENCH--c{load}" / "run=0.json"
        (tmp_path / f"c{load}").mkdir()
        (tmp_path / f"c{load}" / "run=0.json").write_bytes(source.read_bytes())
    run_import(tmp_path, tmp_path / "c2", tmp_path / "c4")
    assert sorted(len(sweep) for sweep in _sweeps().values()) == [1, 1]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"": 1}, "override '' of vllm bench sweep serve: not a setting's name"),
        ({"k" * 190: 1}, "not a setting's name (empty, or longer than a field's pointer holds: 200 characters)"),
    ],
)
def test_a_sweep_override_that_cannot_be_named_is_refused(tmp_path, user, extra, words):
    with pytest.raises(CommandError, match=re.escape(words)):
        run_import(tmp_path, _experiment(tmp_path, {"a": extra}))
    assert Submission.objects.count() == 0


def test_levels_of_an_experiment_asking_for_different_lengths_are_refused(tmp_path, user):
    experiment = _experiment(tmp_path, {"short": {"random_input_len": 32}, "long": {"random_input_len": 64}})
    with pytest.raises(CommandError, match="levels differ in random_input_len"):
        run_import(tmp_path, experiment)
    assert Submission.objects.count() == 0


@pytest.mark.parametrize("change", [{"completed": -5}, {"duration": -1.0}, {"duration": True}])
def test_a_sweep_warm_up_that_is_no_warm_up_is_refused_by_its_file(tmp_path, user, change):
    folder = tmp_path / "exp" / "SERVE--cap2-BENCH--c2"
    folder.mkdir(parents=True)
    source = SWEPT / "SERVE--cap2-BENCH--c2"
    (folder / "run=0.json").write_bytes((source / "run=0.json").read_bytes())
    (folder / "warmup.json").write_text(json.dumps(json.loads((source / "warmup.json").read_text()) | change))
    with pytest.raises(CommandError, match="not the requests and seconds of a warm-up run") as refused:
        run_import(tmp_path, folder / "run=0.json")
    assert "warmup.json" in str(refused.value) and Submission.objects.count() == 0


def test_a_fifo_named_like_a_result_in_a_folder_is_never_opened(tmp_path, user):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "rate-4qps.json").write_bytes((RATES / "rate-4qps.json").read_bytes())
    os.mkfifo(folder / "pipe.json")
    os.mkfifo(folder / "benchmarks.json")
    run_import(tmp_path, folder)  # returns: a read of either FIFO would wait for a writer for ever
    assert Submission.objects.count() == 1


def test_a_sweep_override_is_named_as_argparse_names_its_flag(tmp_path, user):
    """--serve-params {"max-num-seqs": 8} and {"max_num_seqs": 8} set one engine setting, max_num_seqs, the name the
    deployment's launch command gives it; the two spellings with two values in one file are refused."""
    run_import(tmp_path, _experiment(tmp_path, {"a": {"max-num-seqs": 8}}))
    assert {str(run.document["software"]["settings"]) for run in Submission.objects.all()} == {"{'max_num_seqs': 8}"}
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(CommandError, match="override 'max_num_seqs' of vllm bench sweep serve is given twice"):
        run_import(other, _experiment(other, {"b": {"max-num-seqs": 8, "max_num_seqs": 16}}))
