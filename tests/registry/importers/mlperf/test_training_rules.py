"""MLPerf Training as MLCommons publishes it: the rules per round come from the committed JSON tables
(mlcommons/logging, source named), the published time to train is the olympic mean times scaling.json's
factor, and every run carries the quality it reached against the round's target.

Expectations are computed here from the log lines themselves (plain JSON per :::MLLOG line), not by the
importer's readers.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from registry.importers.mlperf import training
from registry.importers.mlperf.training_rules import RULES_DIR, known_rounds, round_rules

from . import logging_tree

ROOT = Path(__file__).resolve().parents[4]
TRIMMED = ROOT.parent / "shared" / "data" / "mlperf-rounds" / "training_v4.0"
LOGGING = Path(os.environ.get("BENCHREG_MLCOMMONS_LOGGING", "/work/.mirror/mlcommons+logging/repo"))
CHECKER = logging_tree.CHECKER
CHECKER_4 = f"{CHECKER}/training_4.0.0"
SUMMARIZER = "mlperf_logging/result_summarizer/result_summarizer.py"


# --- the rules files ---------------------------------------------------------------------------------------


def test_every_round_mlcommons_logging_knows_has_a_rules_file_with_its_source():
    assert {"v4.0", "v4.1", "v5.0", "v5.1", "v6.0"} <= set(known_rounds())
    for name in known_rounds():
        data = json.loads((RULES_DIR / f"{name}.json").read_text())
        assert data["source"]["repo"] == "mlcommons/logging" and len(data["source"]["commit"]) == 40
        for benchmark, rule in data["benchmarks"].items():
            assert rule["runs_required"] > 0 and rule["dropped_each_end"] >= 1, (name, benchmark)
            for quality in rule["quality"].values():
                assert quality["source"]["path"].startswith("mlperf_logging/compliance_checker/"), (name, benchmark)


def test_the_rules_state_mlperfs_targets_run_counts_and_dropped_runs():
    v40 = round_rules("v4.0")
    unet = v40.benchmark("unet3d", "closed")
    assert (unet.runs_required, unet.dropped_each_end) == (40, 4)
    bert = v40.benchmark("bert", "closed")
    assert (bert.runs_required, bert.dropped_each_end) == (10, 1)
    bound = bert.quality.metrics["eval_accuracy"]
    assert (bound.low, bound.low_inclusive, bound.high, bound.high_inclusive) == (0.72, True, 1.0, False)
    lora = round_rules("v5.0").benchmark("llama2_70b_lora", "closed").quality.metrics["eval_accuracy"]
    assert (lora.low, lora.high, lora.high_inclusive) == (0.0, 0.925, True)  # a loss: lower is better
    sd = round_rules("v4.0").benchmark("stable_diffusion", "closed").quality
    assert (sd.read, sd.group_by, list(sd.metrics)) == ("grouped", "samples_count", ["FID", "CLIP"])
    assert round_rules("v6.0").benchmark("deepseekv3_671b", "closed").runs_required == 3


def test_the_committed_rules_are_what_the_script_extracts_from_mlcommons_logging(tmp_path):
    """The script, run on an authored miniature of mlcommons/logging (logging_tree.py), writes exactly the rules
    its files state: one file per ruleset from 1.0.0 on, each benchmark's runs, dropped runs, title, division
    quality bounds with their source lines, and a reason for each check it cannot read. `--check` then agrees,
    and says which file differs once the checker changes. The committed tables themselves are compared with a
    real clone by the test below, where one is fetched."""
    repo = tmp_path / "logging"
    commit = logging_tree.commit(repo, logging_tree.files(), "rules")
    out = tmp_path / "rules"
    run = _rules_script(repo / ".git", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in out.iterdir()) == ["v1.0.json", "v4.0.json"]  # 0.7.0 and hpc are not read
    v40, v10 = (json.loads((out / name).read_text()) for name in ("v4.0.json", "v1.0.json"))
    assert v40 == _expected_v40(commit)
    assert v10["init_limit_minutes"] == {
        "closed": 30,
        "open": 30,
        "source": {
            "path": f"{CHECKER}/training_1.0.0/common.yaml",
            "lines": [logging_tree.line(logging_tree.COMMON_1_0, "(30*60*1e3)")],
        },
    }
    assert {b: (r["runs_required"], r["dropped_each_end"]) for b, r in v10["benchmarks"].items()} == {
        "bert": (10, 1),
        "unet3d": (40, 4),
    }
    assert v10["benchmarks"]["bert"]["quality"]["closed"]["metrics"]["eval_accuracy"]["min"] == 0.712
    changed = dict(logging_tree.files())
    changed[f"{CHECKER_4}/closed_bert.yaml"] = changed[f"{CHECKER_4}/closed_bert.yaml"].replace("0.720", "0.725")
    raised = logging_tree.commit(repo, changed, "bert's target raised")
    checked = _rules_script(repo / ".git", "--out", str(out), "--check", "--commit", commit)
    assert checked.returncode == 0, checked.stderr
    checked = _rules_script(repo / ".git", "--out", str(out), "--check")  # HEAD: every table names its commit
    assert checked.returncode == 1 and checked.stderr == f"differ from {raised[:12]}: v1.0.json, v4.0.json\n"
    assert json.loads((out / "v4.0.json").read_text()) == v40  # --check writes nothing
    run = _rules_script(repo / ".git", "--out", str(tmp_path / "raised"))
    assert run.returncode == 0, run.stderr
    bert = json.loads((tmp_path / "raised" / "v4.0.json").read_text())["benchmarks"]["bert"]
    assert bert["quality"]["closed"]["metrics"]["eval_accuracy"]["min"] == 0.725
    assert bert["quality"]["closed"]["check"] == "(v['value'] >= 0.725) and v['value'] < 1.0"


def test_the_script_stops_when_the_summarizer_no_longer_scales_the_score_as_it_states(tmp_path):
    repo = tmp_path / "logging"
    tree = logging_tree.files()
    tree[SUMMARIZER] = tree[SUMMARIZER].replace("    score *= scaling_factor\n", "")
    logging_tree.commit(repo, tree, "scaling moved")
    run = _rules_script(repo / ".git", "--out", str(tmp_path / "rules"))
    assert run.returncode == 1 and "'score *= scaling_factor' not found" in run.stderr, run.stderr
    assert not (tmp_path / "rules").exists()


@pytest.mark.skipif(not (LOGGING / "HEAD").exists(), reason=f"no clone of mlcommons/logging at {LOGGING}")
def test_the_committed_rules_match_a_real_clone_of_mlcommons_logging():
    commit = json.loads((RULES_DIR / "v5.0.json").read_text())["source"]["commit"]
    run = _rules_script(LOGGING, "--commit", commit, "--check")
    assert run.returncode == 0, run.stderr


def _rules_script(git_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = ROOT / "scripts" / "mlperf-training-rules"
    return subprocess.run([str(script), str(git_dir), *args], capture_output=True, text=True, check=False)


def _bound(low: float | None, low_in: bool | None, high: float | None, high_in: bool | None) -> dict[str, Any]:
    return {"min": low, "min_inclusive": low_in, "max": high, "max_inclusive": high_in}


def _value_rule(name: str, check: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """A plain-value quality rule of the miniature's training_4.0.0/<name>.yaml, its line found line by line."""
    path = f"{CHECKER_4}/{name}.yaml"
    line = logging_tree.line(logging_tree.FILES_4_0[f"{name}.yaml"], "ATLEAST_ONE_CHECK")
    return {
        "key": "eval_accuracy",
        "check": check,
        "source": {"path": path, "line": line},
        "read": "value",
        "metrics": metrics,
    }


def _unsupported(name: str, check: str, why: str) -> dict[str, Any]:
    line = logging_tree.line(logging_tree.FILES_4_0[f"{name}.yaml"], "ATLEAST_ONE_CHECK")
    source = {"path": f"{CHECKER_4}/{name}.yaml", "line": line}
    return {
        "unsupported": f"quality check not read as bounds on constants: {why}",
        "key": "eval_accuracy",
        "check": check,
        "source": source,
    }


def _expected_v40(commit: str) -> dict[str, Any]:
    """What the miniature's files say for ruleset 4.0.0, written out by hand from logging_tree.py's text."""
    summarizer = logging_tree.SUMMARIZER
    scaling = [
        "scaling_factor = 1.0",
        "scaling_file = os.path.join(folder, 'scaling.json')",
        "if os.path.isfile(scaling_file):",
        "scaling_factor = contents['scaling_factor']",
        "score *= scaling_factor",
    ]
    dropped = 'max_dropped_scores = 4 if benchmark == "unet3d" else 1'
    sd_line = logging_tree.line(logging_tree.FILES_4_0["closed_stable_diffusion.yaml"], "ATLEAST_ONE_CHECK")
    accuracy = "eval_accuracy"
    return {
        "kind": "mlperf-training-rules",
        "round": "v4.0",
        "ruleset": "4.0.0",
        "source": {"repo": "mlcommons/logging", "commit": commit, "date": "2026-01-15"},
        "benchmarks_source": {
            "path": "mlperf_logging/benchmark_meta.py",
            "names": ["_ALL_ALLOWED_BENCHMARKS", "_ALL_RESULT_FILE_COUNTS"],
        },
        "titles_source": {"path": "mlperf_logging/result_summarizer/config.yaml", "key": "columns.training.4.0.0"},
        "scoring": {
            "dropped_each_end": {"default": 1, "unet3d": 4},
            "dropped_source": {"path": SUMMARIZER, "line": logging_tree.line(summarizer, dropped), "text": dropped},
            "scaling": {
                "file": "scaling.json",
                "key": "scaling_factor",
                "applies_to": "olympic mean",
                "when_missing": 1.0,
                "source": {
                    "path": SUMMARIZER,
                    "lines": sorted(logging_tree.line(summarizer, text) for text in scaling),
                    "text": scaling,
                },
            },
        },
        "init_limit_minutes": {
            "closed": 30,
            "open": 240,
            "source": {
                "path": f"{CHECKER_4}/common.yaml",
                "lines": [
                    logging_tree.line(logging_tree.COMMON_4_0, "s['compile_time_mins'] = 240"),
                    logging_tree.line(logging_tree.COMMON_4_0, "(s['compile_time_mins']*60*1e3)"),
                ],
            },
        },
        "benchmarks": {
            "bert": {
                "title": {"area": "NLP", "dataset": "Wikipedia", "model": "BERT"},
                "runs_required": 10,
                "dropped_each_end": 1,
                "quality": {
                    "closed": _value_rule(
                        "closed_bert",
                        "(v['value'] >= 0.720) and v['value'] < 1.0",
                        {accuracy: _bound(0.72, True, 1.0, False)},
                    ),
                    "open": _value_rule("open_bert", "v['value'] < 1.0", {accuracy: _bound(None, None, 1.0, False)}),
                },
            },
            "gpt3": {
                "title": {"area": "LLM", "dataset": "C4", "model": "GPT3"},
                "runs_required": 3,
                "dropped_each_end": 1,
                "quality": {
                    "closed": _unsupported(
                        "closed_gpt3",
                        "v['value'] > s['target_accuracy']",
                        "'v['value'] > s['target_accuracy']' does not compare the logged value with a constant",
                    ),
                    "open": _unsupported(
                        "open_gpt3",
                        "v['value'] < 1.0 or v['value'] > 2.0",
                        "'v['value'] < 1.0 or v['value'] > 2.0' is not a comparison of the logged value"
                        " with a constant",
                    ),
                },
            },
            "llama2_70b_lora": {
                "title": {"area": "LLM finetune", "dataset": "SCROLSS Gov Report", "model": "LLama2 70B-LoRA"},
                "runs_required": 10,
                "dropped_each_end": 1,
                "quality": {
                    "closed": _value_rule(
                        "closed_llama2_70b_lora",
                        "v['value'] <= 0.925 and v['value'] > -0.5",
                        {accuracy: _bound(-0.5, False, 0.925, True)},
                    ),
                    "open": _value_rule(
                        "open_llama2_70b_lora", "v['value'] <= 0.925", {accuracy: _bound(None, None, 0.925, True)}
                    ),
                },
            },
            "stable_diffusion": {
                "title": None,  # config.yaml has no column for it in 4.0.0
                "runs_required": 10,
                "dropped_each_end": 1,
                "quality": {
                    "closed": {
                        "key": accuracy,
                        "check": logging_tree.CLOSED_SD_CHECK,
                        "source": {"path": f"{CHECKER_4}/closed_stable_diffusion.yaml", "line": sd_line},
                        "read": "grouped",
                        "group_by": "samples_count",
                        "metric_from": "metric",
                        "virtual_key": "aggregated_eval_accuracy",
                        "metrics": {"FID": _bound(0.0, True, 90.0, True), "CLIP": _bound(0.15, True, 1.0, True)},
                    },
                    "open": {
                        "unsupported": f"{CHECKER_4}/open_stable_diffusion.yaml does not exist",
                        "source": {"path": f"{CHECKER_4}/open_stable_diffusion.yaml"},
                    },
                },
            },
            "unet3d": {
                "title": {"area": "Image segmentation (medical)", "dataset": "KiTS19", "model": "3D U-Net"},
                "runs_required": 40,
                "dropped_each_end": 4,
                "quality": {
                    "closed": _value_rule(
                        "closed_unet3d", "v['value'] >= 0.908", {accuracy: _bound(0.908, True, None, None)}
                    ),
                    "open": {
                        "unsupported": "no ATLEAST_ONE_CHECK: no quality target",
                        "source": {"path": f"{CHECKER_4}/open_unet3d.yaml"},
                    },
                },
            },
        },
    }


# --- an authored tree: scaling, quality, refusals ------------------------------------------------------------


def _run(path: Path, start: int, minutes: float | None, quality: float = 0.7203, status: str = "success") -> None:
    stop = start + int((minutes or 1) * 60_000)
    records = [
        {"key": "submission_org", "value": "Acme"},
        {"key": "submission_division", "value": "closed"},
        {"key": "global_batch_size", "value": 256},
        {"key": "init_start", "value": None, "time_ms": start - 60_000},
        {"key": "init_stop", "value": None, "time_ms": start},
        {"key": "run_start", "value": None, "time_ms": start},
        {"key": "eval_accuracy", "value": 0.70, "time_ms": stop - 1000, "metadata": {"epoch_num": 1}},
        {"key": "eval_accuracy", "value": quality, "time_ms": stop, "metadata": {"epoch_num": 2}},
    ]
    if minutes is not None:
        records.append({"key": "run_stop", "value": None, "time_ms": stop, "metadata": {"status": status}})
    path.write_text("".join(":::MLLOG " + json.dumps({"namespace": "", **r}) + "\n" for r in records))


def _tree(tmp_path: Path, minutes: list[float | None], *, round_name: str = "v4.0", bench: str = "bert") -> Path:
    root = tmp_path / f"training_results_{round_name}"
    submission = root / "Acme"
    (submission / "systems").mkdir(parents=True)
    (submission / "systems" / "box.json").write_text(
        json.dumps(
            {
                "system_name": "Box",
                "submitter": "Acme",
                "division": "closed",
                "status": "available",
                "number_of_nodes": 1,
                "accelerators_per_node": 8,
                "accelerator_model_name": "NVIDIA H100",
            }
        )
    )
    folder = submission / "results" / "box" / bench
    folder.mkdir(parents=True)
    for n, value in enumerate(minutes):
        _run(folder / f"result_{n}.txt", 1_700_000_000_000 + n * 10_000_000, value, quality=0.7200 + n / 10_000)
    return root


TEN = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 40.0]


def _only(root: Path):
    plan = training.parse_tree(root)
    assert len(plan.items) == 1
    return plan.items[0]


def test_the_published_time_is_the_olympic_mean_times_the_scaling_factor(tmp_path):
    root = _tree(tmp_path, TEN)
    (root / "Acme/results/box/bert/scaling.json").write_text('{"scaling_factor": 1.0625}')
    item = _only(root)
    assert item.status == "ready", item.errors
    ttq = item.document["metrics"]["time_to_quality"]
    unscaled = sum(TEN[1:9]) / 8 * 60
    assert ttq["unscaled_seconds"] == pytest.approx(unscaled)
    assert ttq["scaling_factor"] == 1.0625 and ttq["seconds"] == pytest.approx(unscaled * 1.0625)
    assert "scaling_factor 1.0625 of scaling.json" in ttq["method"]
    assert item.document["protocol"] == "benchreg.submission/1.1"
    used = {f.path: f.status for f in item.files}
    assert used["Acme/results/box/bert/scaling.json"] == "used"
    assert "results/box/bert/scaling.json" in item.document["provenance"]["origin"]["files"]


def test_without_scaling_json_the_factor_is_one_as_mlcommons_summarizer_does(tmp_path):
    ttq = _only(_tree(tmp_path, TEN)).document["metrics"]["time_to_quality"]
    assert ttq["scaling_factor"] == 1.0 and ttq["seconds"] == ttq["unscaled_seconds"]
    assert "no scaling.json, so factor 1" in ttq["method"]


@pytest.mark.parametrize(
    "text, why",
    [
        ("{not json", "malformed JSON"),
        ('{"factor": 1.1}', "no 'scaling_factor' key"),
        ('{"scaling_factor": "1.1"}', "not a number above zero"),
        ('{"scaling_factor": 0}', "not a number above zero"),
        ("[1.1]", "no 'scaling_factor' key"),
    ],
)
def test_a_malformed_scaling_json_refuses_the_result_and_names_the_file(tmp_path, text, why):
    root = _tree(tmp_path, TEN)
    (root / "Acme/results/box/bert/scaling.json").write_text(text)
    item = _only(root)
    assert item.status == "refused"
    assert any(e.startswith("Acme/results/box/bert/scaling.json: ") and why in e for e in item.errors), item.errors


def test_each_run_records_the_quality_it_reached_and_the_result_the_median(tmp_path):
    item = _only(_tree(tmp_path, TEN))
    origin = item.document["provenance"]["origin"]
    assert origin["targets"] == {"eval_accuracy": {"min": 0.72, "max": 1.0}}
    assert [r["quality"] for r in origin["runs"]] == pytest.approx([0.7200 + n / 10_000 for n in range(10)])
    used = [r["quality"] for r in origin["runs"] if r["used"]]
    quality = item.document["metrics"]["quality"]
    assert quality["metric"] == "eval_accuracy" and quality["passed"] is True
    assert quality["value"] == pytest.approx(statistics.median(used))
    assert "training_4.0.0/closed_bert.yaml:48" in origin["rules_source"]


def test_a_run_that_never_meets_the_target_counts_as_slowest_whatever_its_status_says(tmp_path):
    root = _tree(tmp_path, TEN)
    # the fastest run logs success but stops short of 0.72: MLPerf's checker drops it
    _run(root / "Acme/results/box/bert/result_0.txt", 1_700_000_000_000, 10.0, quality=0.7199)
    item = _only(root)
    ttq = item.document["metrics"]["time_to_quality"]
    assert ttq["seconds"] == pytest.approx(sum(TEN[2:10]) / 8 * 60)
    assert item.document["provenance"]["origin"]["runs"][0]["used"] is False
    assert any("result_0.txt: run_stop status is 'success'" in w for w in item.warnings)


def test_a_run_whose_initialization_exceeds_the_limit_does_not_count(tmp_path):
    root = _tree(tmp_path, TEN)
    path = root / "Acme/results/box/bert/result_0.txt"
    lines = [json.loads(line[len(":::MLLOG ") :]) for line in path.read_text().splitlines()]
    lines[3]["time_ms"] -= 31 * 60_000  # init_start 32 minutes before init_stop; closed allows 30
    path.write_text("".join(":::MLLOG " + json.dumps(r) + "\n" for r in lines))
    item = _only(root)
    assert item.document["provenance"]["origin"]["runs"][0]["used"] is False
    assert any("over the 30 min limit" in w for w in item.warnings)


def test_two_failed_runs_leave_no_score_and_say_which_and_why(tmp_path):
    item = _only(_tree(tmp_path, [10.0, None, 12.0, None, *TEN[4:]]))
    assert item.status == "refused"
    assert "no MLPerf score" in item.errors[0] and "result_1.txt: no run_start..run_stop time" in item.errors[0]


def test_fewer_runs_than_the_benchmark_needs_is_refused_with_the_rule_named(tmp_path):
    item = _only(_tree(tmp_path, TEN[:5]))
    assert item.status == "refused"
    assert "needs 10 for bert (mlperf_logging/benchmark_meta.py)" in item.errors[0]


def test_a_round_without_rules_is_refused_never_given_another_rounds_rules(tmp_path):
    item = _only(_tree(tmp_path, TEN, round_name="v9.9"))
    assert item.status == "refused"
    assert "no MLPerf Training rules for round v9.9" in item.errors[0]
    assert "scripts/mlperf-training-rules" in item.errors[0]


def test_a_benchmark_the_round_does_not_have_is_refused_by_name(tmp_path):
    item = _only(_tree(tmp_path, TEN, round_name="v5.1", bench="bert"))
    assert item.status == "refused"
    assert "benchmark 'bert' is not in MLPerf Training v5.1's rules" in item.errors[0]


def test_a_quality_check_the_rules_could_not_read_refuses_with_the_reason(tmp_path):
    item = _only(_tree(tmp_path, [10.0, 11.0, 12.0], round_name="v6.1", bench="qwen35_397b_grpo"))
    assert item.status == "refused"
    assert "no quality rule for qwen35_397b_grpo (closed) in v6.1" in item.errors[0]
    assert "s['target_accuracy']" in item.errors[0]


# --- real published files (the trimmed v4.0 round) with an authored scaling.json ------------------------------


@pytest.mark.skipif(not TRIMMED.is_dir(), reason=f"no trimmed round at {TRIMMED}")
def test_a_published_result_with_an_authored_scaling_json_shows_the_scaled_time(tmp_path):
    source = TRIMMED / "Dell"
    root = tmp_path / "training_results_v4.0"
    shutil.copytree(source, root / "Dell")
    bert = root / "Dell/results/R760xax4L40S/bert"
    before = {i.key: i.document for i in training.parse_tree(root).items}["R760xax4L40S/bert"]
    (bert / "scaling.json").write_text(json.dumps({"scaling_factor": 1.0735}))  # as the RCP checker writes it
    after = {i.key: i.document for i in training.parse_tree(root).items}["R760xax4L40S/bert"]
    b, a = before["metrics"]["time_to_quality"], after["metrics"]["time_to_quality"]
    assert a["unscaled_seconds"] == b["seconds"] and a["seconds"] == pytest.approx(b["seconds"] * 1.0735)
    assert (b["scaling_factor"], a["scaling_factor"]) == (1.0, 1.0735)
    # the reached quality is the log's own last eval_accuracy before run_stop, read here line by line
    for run in after["provenance"]["origin"]["runs"]:
        records = [
            json.loads(line.split(":::MLLOG ", 1)[1])
            for line in (bert / run["file"]).read_text().splitlines()
            if ":::MLLOG " in line
        ]
        stop = next(i for i, r in enumerate(records) if r["key"] == "run_stop")
        last = [r["value"] for r in records[:stop] if r["key"] == "eval_accuracy"][-1]
        assert run["quality"] == pytest.approx(last)
    assert after["metrics"]["quality"]["value"] >= 0.72


@pytest.mark.skipif(not TRIMMED.is_dir(), reason=f"no trimmed round at {TRIMMED}")
def test_stable_diffusion_reaches_fid_and_clip_together():
    plan = training.parse_tree(TRIMMED / "Oracle")
    document = plan.items[0].document
    quality, origin = document["metrics"]["quality"], document["provenance"]["origin"]
    assert quality["metric"] == "FID" and set(quality["values"]) == {"FID", "CLIP"}
    assert quality["values"]["FID"] <= 90.0 and quality["values"]["CLIP"] >= 0.15 and quality["passed"]
    assert origin["targets"] == {"FID": {"min": 0.0, "max": 90.0}, "CLIP": {"min": 0.15, "max": 1.0}}
