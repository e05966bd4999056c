"""A folder holding several MLPerf rounds (an Inference round beside a Training round) is imported one round at a
time, each with the suite of its contents and the round of its own folder's name, and the command says what was
kept in numbers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from registry.importers.mlperf import round_folders
from registry.models import Submission
from tests.conftest import SHARED

ROUNDS = SHARED / "data" / "mlperf-rounds"


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
