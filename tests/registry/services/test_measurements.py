"""One measurement, counted once: the same published results read from two folders are one piece of evidence
(protocol.measurement_identity), and a derived result is never independent evidence, wherever runs are counted."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

import protocol
from protocol import decisions as dec
from registry.choices import Trust
from registry.models import CatalogueCell, Submission
from registry.selectors.catalogue import CatalogueQuery
from registry.selectors.decisions import decision_candidate_runs
from registry.selectors.matrix import catalogue_matrix
from registry.selectors.series import run_history
from registry.services.catalogue import catalogue_cells_differ, counted_ids
from registry.services.comparisons import NotComparable, comparison_create
from registry.services.imports import mlperf_import
from registry.services.runs import runs_store
from registry.services.submissions import (
    SameMeasurement,
    submission_create,
    submission_create_batch,
    submission_withdraw,
)
from tests.conftest import SHARED
from tests.registry.importers.mlperf.power_tree import edge_submission

pytestmark = pytest.mark.django_db
SAMPLE = SHARED / "data" / "mlperf"
ROUND_AMD = SHARED / "data" / "mlperf-rounds" / "inference_v5.1" / "closed" / "AMD"
SYSTEM = "8xMI300X_2xEPYC_9575F"


@pytest.fixture
def admin() -> Any:
    user = get_user_model().objects.create_user("importer", password="x")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    return user


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    if not SAMPLE.exists():
        pytest.skip("the shared MLPerf sample tree is not beside this checkout")
    shutil.copytree(SAMPLE, tmp_path / "sample")
    return tmp_path / "sample"


def server_run() -> Submission:
    return Submission.objects.get(scenario_kind="server", workload_name="llama2-70b-99", measurement__gt="")


def moved(doc: dict[str, Any], root: str = "measurements") -> dict[str, Any]:
    """The document as an import of the same files laid out elsewhere writes it (the round keeps measurements.json
    and user.conf under measurements/, TEST06 under compliance/): only the files' paths differ."""
    out = copy.deepcopy(doc)
    files = out["provenance"]["origin"]["files"]
    out["provenance"]["origin"]["files"] = {f"{root}/{path}": value for path, value in files.items()}
    return out


def stored_twice(run: Submission, user: Any) -> Submission:
    """A second document of `run`'s measurement stored around the checks, as two concurrent imports of two
    folders, or a registry before migration 0021, stored them."""
    (again,) = runs_store(
        checked=[protocol.check(moved(run.document))], submitted_by=user, token=None, trust="imported"
    )
    return again


def matrix_cell(workload: str, scenario: str) -> Any:
    matrix = catalogue_matrix(CatalogueQuery())
    (column,) = [i for i, c in enumerate(matrix.columns) if (c.workload, c.scenario) == (workload, scenario)]
    (cell,) = [row.cells[column] for row in matrix.rows if row.cells[column] is not None]
    return cell


# --------------------------------------------------------------------------------- importing from two folders


def test_the_round_and_the_sample_hold_byte_identical_files_for_amds_llama2_results(sample: Path) -> None:
    if not ROUND_AMD.exists():
        pytest.skip("the shared trimmed MLPerf rounds are not beside this checkout")
    digests = {}
    for tree in (sample, ROUND_AMD):
        found = sorted(
            protocol.digest_of(p.read_bytes())
            for p in tree.rglob("*")
            if p.is_file()
            and (f"{SYSTEM}/llama2-70b-99/Server/" in p.as_posix() or p.as_posix().endswith(f"systems/{SYSTEM}.json"))
        )
        digests[tree] = found
    assert digests[sample] == digests[ROUND_AMD]


def test_the_same_results_imported_from_a_second_folder_are_known_as_the_first_runs(
    sample: Path, admin: Any, tmp_path: Path
) -> None:
    if not ROUND_AMD.exists():
        pytest.skip("the shared trimmed MLPerf rounds are not beside this checkout")
    first = mlperf_import(root=sample, submitted_by=admin)
    assert first.counts == {"stored": 3}
    shutil.copytree(ROUND_AMD, tmp_path / "round" / "closed" / "AMD")
    second = mlperf_import(root=tmp_path / "round" / "closed" / "AMD", submitted_by=admin, round_name="v5.1")
    amd = {o.key: o for o in second.outcomes if o.key.startswith(f"{SYSTEM}/llama2-70b-99/")}
    assert {o.status for o in amd.values()} == {"known"}
    server = amd[f"{SYSTEM}/llama2-70b-99/Server"]
    assert server.run_id == server_run().pk
    assert server.note == (
        f"same measurement as run {server.run_id} (identical source files, read from another folder): nothing stored"
    )
    assert f"same measurement as run {server.run_id} (identical source files" in second.render()
    assert Submission.objects.filter(workload_name="llama2-70b-99", system_name=server_run().system_name).count() == 3
    # AMD published the same logs for llama2-70b-99.9: another benchmark's result, stored
    assert {o.status for o in second.outcomes if "llama2-70b-99.9/" in o.key} == {"stored"}
    assert matrix_cell("llama2-70b-99", "server").runs == 1


def test_a_batch_document_restating_a_stored_measurement_says_which_run(sample: Path, admin: Any) -> None:
    mlperf_import(root=sample, submitted_by=admin)
    run = server_run()
    (outcome,) = submission_create_batch(documents=[moved(run.document)], submitted_by=admin, trust=Trust.IMPORTED)
    assert outcome.status == "known" and outcome.run == run
    assert outcome.note.startswith(f"same measurement as run {run.pk} (identical source files")
    again, created = submission_create(document=moved(run.document), submitted_by=admin, trust=Trust.IMPORTED)
    assert (again, created) == (run, False)


def test_a_corrected_document_of_the_same_files_replaces_the_imported_run_which_stays_withdrawn(
    sample: Path, admin: Any
) -> None:
    mlperf_import(root=sample, submitted_by=admin)
    old = server_run()
    corrected = moved(old.document)
    corrected["provenance"]["runner"]["version"] = "a newer importer"
    (outcome,) = submission_create_batch(documents=[corrected], submitted_by=admin, trust=Trust.IMPORTED)
    new = outcome.run
    assert outcome.status == "stored" and new is not None and new.measurement == old.measurement
    assert outcome.note == (
        f"replaces run {old.pk}: same measurement (identical source files), a newer document; withdrawn, kept on record"
    )
    old.refresh_from_db()
    assert old.withdrawal.reason.startswith(f"superseded by run {new.pk}, a newer document of the same measurement")
    assert matrix_cell("llama2-70b-99", "server").runs == 1
    assert catalogue_cells_differ() == []


def test_a_token_holder_cannot_push_an_imported_measurement_aside(sample: Path, admin: Any, user: Any) -> None:
    mlperf_import(root=sample, submitted_by=admin)
    run = server_run()
    claimed = moved(run.document)
    claimed["provenance"]["runner"]["version"] = "my own reading"
    with pytest.raises(SameMeasurement) as refused:
        submission_create(document=claimed, submitted_by=user)
    (error,) = refused.value.errors
    assert error["pointer"] == "/provenance/origin/files" and error["code"] == "same-measurement"
    assert error["message"] == (
        f"run {run.pk} already states this measurement (identical source files) in a different document, stored as "
        f"imported: withdraw run {run.pk} first to replace it"
    )
    assert not hasattr(Submission.objects.get(pk=run.pk), "withdrawal")


# --------------------------------------------------------------------------- one measurement stored twice


def test_an_equal_quality_comparison_of_one_measurement_stored_twice_is_refused_naming_both(
    sample: Path, admin: Any
) -> None:
    mlperf_import(root=sample, submitted_by=admin)
    run = server_run()
    again = stored_twice(run, admin)
    with pytest.raises(NotComparable) as refused:
        comparison_create(runs=[run, again], axis="iso-quality", created_by=admin)
    assert refused.value.code == "same-measurement"
    (error,) = refused.value.errors
    assert error["pointer"] == "/runs/1"
    assert error["message"] == (
        f"run {again.pk} and run {run.pk} are the same measurement (identical source files): keep one of them"
    )


def test_the_matrix_counts_one_measurement_stored_twice_as_one_run(sample: Path, admin: Any) -> None:
    mlperf_import(root=sample, submitted_by=admin)
    run = server_run()
    again = stored_twice(run, admin)
    cell = matrix_cell("llama2-70b-99", "server")
    assert (cell.runs, cell.not_counted) == (1, 1)
    assert cell.estimate.value == pytest.approx(run.headline_value)
    assert catalogue_cells_differ() == []
    assert set(Submission.objects.independent().filter(measurement=run.measurement)) == {again}
    # withdrawing the newer document makes the older one count again, exactly
    submission_withdraw(submission=again, reason="stored twice", actor=admin)
    assert catalogue_cells_differ() == []
    assert matrix_cell("llama2-70b-99", "server").runs == 1
    assert set(Submission.objects.independent().filter(measurement=run.measurement)) == {run, again}


def test_a_decision_reads_one_measurement_stored_twice_once(sample: Path, admin: Any) -> None:
    mlperf_import(root=sample, submitted_by=admin)
    run = server_run()
    again = stored_twice(run, admin)
    question = dec.Question.from_dict(
        {
            "workload": "llama2-70b-99",
            "scenario": "server",
            "objectives": [],
            "quality": {"target_ratio": 0.99},
            "demand": {"value": 50000, "unit": "tokens/s"},
        }
    )
    cited = [r for r in decision_candidate_runs(question=question) if r.system_name == run.system_name]
    assert cited == [again]


def test_the_rule_over_runs_in_memory_is_the_querysets() -> None:
    # (id, derived, withdrawn): the newest not withdrawn counts; withdrawn ones newer than it still count
    assert counted_ids([(1, False, False), (2, False, False)]) == {2}
    assert counted_ids([(1, False, False), (2, False, True)]) == {1, 2}
    assert counted_ids([(1, False, False), (2, True, False)]) == set()
    assert counted_ids([(1, True, False)]) == set()


# --------------------------------------------------------------------------------------------- derived runs


def test_a_derived_run_is_not_counted_in_the_matrix_or_a_history(tmp_path: Path, admin: Any) -> None:
    edge_submission(tmp_path / "round")
    mlperf_import(root=tmp_path / "round", submitted_by=admin, round_name="v5.1")
    inferred = Submission.objects.get(scenario_kind="offline")
    measured = Submission.objects.get(scenario_kind="single-stream")
    assert inferred.derived and not measured.derived and inferred.measurement != measured.measurement
    cell = matrix_cell("resnet50", "offline")
    assert (cell.runs, cell.not_counted) == (0, 1)
    assert cell.estimate.value == pytest.approx(inferred.headline_value) and cell.estimate.ci_low is None
    assert CatalogueCell.objects.get(scenario_kind="offline").valued == 0
    assert inferred.pk not in {p.run.pk for p in run_history(run=inferred).points}
    assert measured.pk in {p.run.pk for p in run_history(run=measured).points}
    assert catalogue_cells_differ() == []
