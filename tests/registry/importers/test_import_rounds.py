"""A folder holding several MLPerf rounds (an Inference round beside a Training round) is imported one round at a
time, each with the suite of its contents and the round of its own folder's name, and the command says what was
kept in numbers."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from registry.importers.mlperf import round_folders
from registry.models import Submission
from tests.conftest import SHARED

ROUNDS = SHARED / "data" / "mlperf-rounds"
RULES = Path(__file__).resolve().parents[3] / "registry" / "importers" / "mlperf" / "rounds"


def _inference(root: Path, submitter: str = "Acme") -> None:
    (root / "closed" / submitter / "results" / "sut" / "resnet50" / "Offline").mkdir(parents=True)


def _training(root: Path, submitter: str = "Acme") -> None:
    folder = root / submitter / "results" / "sut" / "resnet"
    folder.mkdir(parents=True)
    (folder / "result_0.txt").write_text("")


def test_a_round_folder_is_one_round_of_its_own_suite(tmp_path):
    _inference(tmp_path / "inference_results_v5.1")
    _training(tmp_path / "training_results_v4.0")
    assert [(f.path, f.suite) for f in round_folders(tmp_path / "inference_results_v5.1")] == [
        (tmp_path / "inference_results_v5.1", "inference")
    ]
    assert [(f.path, f.suite) for f in round_folders(tmp_path / "training_results_v4.0")] == [
        (tmp_path / "training_results_v4.0", "training")
    ]


def test_a_folder_holding_an_inference_and_a_training_round_is_split_into_both(tmp_path):
    _inference(tmp_path / "mlperf" / "inference_v5.1")
    _training(tmp_path / "mlperf" / "training_v4.0")
    (tmp_path / "mlperf" / "README.md").write_text("two rounds")
    assert [(f.path.name, f.suite) for f in round_folders(tmp_path / "mlperf")] == [
        ("inference_v5.1", "inference"),
        ("training_v4.0", "training"),
    ]


def test_inference_rounds_side_by_side_are_split_by_their_names(tmp_path):
    _inference(tmp_path / "all" / "inference_results_v5.0")
    _inference(tmp_path / "all" / "inference_results_v5.1")
    assert [f.path.name for f in round_folders(tmp_path / "all")] == [
        "inference_results_v5.0",
        "inference_results_v5.1",
    ]
    # one round's divisions are not rounds: a round folder is not split further
    _inference(tmp_path / "inference_results_v5.1", "Zed")
    assert [f.path for f in round_folders(tmp_path / "inference_results_v5.1")] == [tmp_path / "inference_results_v5.1"]


def test_a_folder_with_no_results_is_left_to_the_importer_to_explain(tmp_path):
    assert [(f.path, f.suite) for f in round_folders(tmp_path)] == [(tmp_path, None)]


@pytest.fixture
def two_rounds(tmp_path: Path) -> Path:
    """One submitter of each real trimmed round, under a folder that names neither."""
    if not ROUNDS.exists():
        pytest.skip("the shared MLPerf rounds (../shared/data/mlperf-rounds) are not beside this checkout")
    root = tmp_path / "mlperf-rounds"
    shutil.copytree(ROUNDS / "inference_v5.1" / "closed" / "Dell", root / "inference_v5.1" / "closed" / "Dell")
    shutil.copytree(ROUNDS / "training_v4.0" / "Google", root / "training_v4.0" / "Google")
    return root


@pytest.mark.django_db
def test_importing_a_folder_of_two_rounds_imports_both_each_with_its_own_round(two_rounds, capsys):
    """It used to pick one suite, refuse everything with "pass --round" and end with "the valid ones were kept"."""
    call_command("import_results", "mlperf", str(two_rounds), "--no-progress")
    out = capsys.readouterr().out
    rounds = {
        (r.document["provenance"]["origin"]["kind"], r.document["provenance"]["origin"]["round"])
        for r in Submission.objects.all()
    }
    assert rounds == {("mlperf-inference", "v5.1"), ("mlperf-training", "v4.0")}
    assert "MLPerf inference import of inference_v5.1, round v5.1" in out
    assert "MLPerf training import of training_v4.0, round v4.0" in out
    assert "2 rounds imported" in out and "pass --round" not in out


@pytest.mark.django_db
def test_one_round_named_for_a_folder_of_two_is_refused_before_anything_is_stored(two_rounds):
    with pytest.raises(CommandError, match=r"--round v5.1 names one round, but .* holds 2") as refused:
        call_command("import_results", "mlperf", str(two_rounds), "--round", "v5.1", "--no-progress")
    assert "nothing was stored" in str(refused.value)
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_a_round_whose_results_are_all_refused_says_nothing_was_stored(two_rounds, tmp_path):
    """No round in the folder's name: every Training result is refused; the command must not claim it kept any."""
    unnamed = tmp_path / "somewhere"
    shutil.copytree(two_rounds / "training_v4.0", unnamed)
    with pytest.raises(CommandError) as refused:
        call_command("import_results", "mlperf", str(unnamed), "--no-progress")
    assert "refused; nothing was stored" in str(refused.value)
    assert "valid ones were kept" not in str(refused.value)
    assert not Submission.objects.exists()


# The audit tests' verdict files, as MLCommons' checker names them (compliance_check.py, check_compliance_*_dir).
VERDICT_FILES = {
    "TEST01": ("verify_accuracy.txt", "verify_performance.txt"),
    "TEST04": ("verify_performance.txt",),
    "TEST05": ("verify_performance.txt",),
    "TEST06": ("verify_accuracy.txt",),
    "TEST07": ("verify_accuracy.txt",),
    "TEST08": ("verify_accuracy.txt",),
    "TEST09": ("verify_output_len.txt",),
}
INFERENCE_ROUNDS = sorted(p for p in ROUNDS.glob("inference_v*") if p.is_dir()) if ROUNDS.exists() else []


def _audit_expectation(root: Path, detail: str, rules: dict[str, Any]) -> tuple[set[str], dict[str, Path]]:
    """(the `audit_<test>_present` keys a result must carry as false, {test: folder} of the tests found), read here from
    the round's rule table and the tree: the result folder's TESTxx/ (v6.0) or compliance/<...>/TESTxx/ (v4.x-v5.x)."""
    folder = (root / detail).parents[2]
    submission = folder.parents[3]
    compliance = submission / "compliance" / Path(*folder.parts[-3:])
    system = json.loads((submission / "systems" / f"{folder.parts[-3]}.json").read_text(encoding="utf-8"))
    config, table = rules["model_config"], rules["audit_tests"]
    benchmark = folder.parts[-2]
    model = benchmark if benchmark in config["models"] else config["model_mapping"].get(benchmark, benchmark)
    required = table["by_model"].get(model, []) if system["division"].lower() in table["divisions"] else []
    found = {}
    for test, names in VERDICT_FILES.items():
        here = [d for d in (folder / test, compliance / test) if any((d / n).is_file() for n in names)]
        if here:
            found[test] = here[0]
    missing = {
        f"audit_{t.lower()}_present"
        for t in required
        if not all((folder / t / n).is_file() or (compliance / t / n).is_file() for n in VERDICT_FILES[t])
    }
    return missing, found


@pytest.mark.django_db
@pytest.mark.parametrize("round_dir", INFERENCE_ROUNDS, ids=lambda p: p.name)
def test_every_stored_result_of_a_shared_round_states_its_audit_tests(round_dir, tmp_path):
    """Through the command, every result folder of the round: each required test the tree lacks is stated missing,
    each verdict file found is stored as its verdict line says, and nothing else is claimed."""
    report = tmp_path / "report.json"
    # a round holds results refused for other reasons (named in the report): the command exits non-zero, and the
    # stored ones are checked
    with contextlib.suppress(CommandError):
        call_command(
            "import_results",
            "mlperf",
            str(round_dir),
            "--no-progress",
            "--accept-disagreements",
            "--report",
            str(report),
        )
    data = json.loads(report.read_text(encoding="utf-8"))
    rules = json.loads((RULES / f"inference_{round_dir.name.removeprefix('inference_')}.json").read_text())
    runs = {o["key"]: o["run_id"] for o in data["registry"] if o["run_id"]}
    assert runs, "nothing stored"
    for item in data["items"]:
        if item["key"] not in runs:
            continue
        detail = next(
            f["path"]
            for f in item["files"]
            if f["status"] == "used" and f["path"].endswith("performance/run_1/mlperf_log_detail.txt")
        )
        missing, found = _audit_expectation(round_dir, detail, rules)
        checks = Submission.objects.get(pk=runs[item["key"]]).document["conditions"]["validity"]["checks"]
        assert {k for k, v in checks.items() if k.endswith("_present") and v is False} == missing, item["key"]
        stated = {k for k in checks if k.startswith(("audit_", "test06_")) and not k.endswith("_present")}
        assert {k.split("_")[1].upper() if k.startswith("audit_") else "TEST06" for k in stated} <= set(found)
        for test, where in found.items():
            if test == "TEST06":
                continue
            for name in VERDICT_FILES[test]:
                if (where / name).is_file():
                    passed = "TEST PASS" in (where / name).read_text(encoding="utf-8", errors="replace")
                    key = next(k for k in stated if k.startswith(f"audit_{test.lower()}_"))
                    assert checks[key] is passed or (test == "TEST01" and not passed), (item["key"], key)
