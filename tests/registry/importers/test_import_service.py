"""Importing the real MLPerf sample tree into the registry, through the one path in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from protocol import comparability
from registry.models import AuditEntry, Submission
from registry.services.imports import mlperf_import
from tests.conftest import SHARED, load_example

pytestmark = pytest.mark.django_db
SAMPLE = SHARED / "data" / "mlperf"
SYSTEM = "8xMI300X_2xEPYC_9575F"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    if not SAMPLE.exists():
        pytest.skip("the shared MLPerf sample tree is not beside this checkout")
    root = tmp_path / "mlperf"
    shutil.copytree(SAMPLE, root)
    return root


def import_submission(root: Path) -> Path:
    return next(root.glob("*/systems")).parent


def add_second_system(root: Path) -> None:
    """A second system in the same round: copy the first under a new name with another accelerator."""
    sub = import_submission(root)
    system = json.loads((sub / "systems" / f"{SYSTEM}.json").read_text())
    system["accelerator_model_name"] = "AMD Instinct MI325X 256GB HBM3E"
    system["accelerator_memory_capacity"] = "256 GB"
    (sub / "systems" / "8xMI325X.json").write_text(json.dumps(system))
    shutil.copytree(sub / "results" / SYSTEM, sub / "results" / "8xMI325X")


def test_the_sample_tree_imports_as_three_runs_marked_as_imports(tree, user):
    result = mlperf_import(root=tree, submitted_by=user)
    assert result.counts == {"stored": 3}
    runs = Submission.objects.all()
    assert {r.scenario_kind for r in runs} == {"server", "offline", "interactive"}
    for run in runs:
        provenance = run.document["provenance"]
        assert provenance["source"] == "import" and run.source == "import" and run.trust == "imported"
        assert provenance["origin"]["kind"] == "mlperf-inference"
        assert provenance["origin"]["submitter"] == "AMD" and provenance["origin"]["division"] == "closed"
        assert all(d.startswith("sha256:") for d in provenance["origin"]["files"].values())
    assert AuditEntry.objects.filter(kind="import.completed").count() == 1


def test_importing_the_same_tree_twice_stores_nothing_new(tree, user):
    mlperf_import(root=tree, submitted_by=user)
    again = mlperf_import(root=tree, submitted_by=user)
    assert again.counts == {"known": 3}
    assert Submission.objects.count() == 3


def test_a_broken_part_stores_nothing_and_the_valid_rest_is_kept(tree, user):
    broken = import_submission(tree) / "results" / SYSTEM / "llama2-70b-99" / "Server" / "measurements.json"
    broken.write_text("{ not json")
    result = mlperf_import(root=tree, submitted_by=user)
    assert result.counts == {"stored": 2, "refused": 1}
    refused = next(o for o in result.outcomes if o.status == "refused")
    assert refused.key.endswith("/Server") and refused.errors
    assert set(Submission.objects.values_list("scenario_kind", flat=True)) == {"offline", "interactive"}
    assert "measurements.json" in result.render()


def test_same_round_benchmark_and_scenario_compare_across_systems(tree, user):
    add_second_system(tree)
    mlperf_import(root=tree, submitted_by=user)
    servers = [r.document for r in Submission.objects.filter(scenario_kind="server")]
    assert len(servers) == 2
    verdict = comparability.check(servers, "system")
    assert verdict.comparable, [d.words for d in verdict.refusals]
    assert len({r.comparability_key for r in Submission.objects.filter(scenario_kind="server")}) == 1


def test_different_scenarios_are_refused_with_reasons(tree, user):
    mlperf_import(root=tree, submitted_by=user)
    server = Submission.objects.get(scenario_kind="server").document
    offline = Submission.objects.get(scenario_kind="offline").document
    verdict = comparability.check([server, offline], "system")
    assert not verdict.comparable
    assert any(d.field.startswith("scenario.kind") and "server" in d.words for d in verdict.refusals)


def test_an_mlperf_run_is_never_silently_comparable_with_a_lab_run(tree, user):
    mlperf_import(root=tree, submitted_by=user)
    server = Submission.objects.get(scenario_kind="server").document
    lab = load_example("inference-server-h100-bf16")
    verdict = comparability.check([server, lab], "system")
    assert not verdict.comparable and verdict.refusals
    assert comparability.comparability_key(server) != comparability.comparability_key(lab)


def test_the_command_prints_a_per_file_report_and_fails_when_a_part_was_refused(tree, user, capsys):
    (
        import_submission(tree)
        / "results"
        / SYSTEM
        / "llama2-70b-99"
        / "Offline"
        / "performance"
        / "run_1"
        / "mlperf_log_summary.txt"
    ).write_text("truncated")
    with pytest.raises(CommandError, match="1 result"):
        call_command("import_results", "mlperf", str(tree), "--full", "--no-progress")
    out = capsys.readouterr().out
    assert "mlperf_log_summary.txt" in out and "Offline: refused" in out
    assert Submission.objects.count() == 2


def _system_status(root: Path, system: str, **fields: str) -> None:
    path = import_submission(root) / "systems" / f"{system}.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def test_round_division_category_and_availability_are_columns_the_api_filters_on(tree, user, api):
    add_second_system(tree)
    _system_status(tree, "8xMI325X", status="preview", division="open")
    mlperf_import(root=tree, submitted_by=user)
    preview = set(Submission.objects.filter(origin_availability="preview").values_list("system_name", flat=True))
    assert len(preview) == 1 and Submission.objects.filter(origin_availability="available").count() == 3
    assert set(Submission.objects.values_list("origin_round", flat=True)) == {"v5.1"}
    for query, count in (
        ("availability=preview", 3),
        ("availability=available", 3),
        ("division=open", 3),
        ("division=closed&availability=available", 3),
        ("round=v5.1", 6),
        ("round=v4.1", 0),
        ("category=datacenter", 6),
        ("category=edge", 0),
    ):
        response = api.get(f"/api/v1/submissions?{query}")
        assert response.status_code == 200
        assert len(response.json()["results"]) == count, query


def test_a_refused_run_in_a_batch_leaves_the_rest_of_the_batch_stored(tree, user):
    add_second_system(tree)
    broken = import_submission(tree) / "results" / SYSTEM / "llama2-70b-99" / "Offline" / "measurements.json"
    broken.write_text("{ not JSON\n")
    seen: list[tuple[int, int]] = []
    result = mlperf_import(root=tree, submitted_by=user, batch_size=4, progress=lambda d, t: seen.append((d, t)))
    assert result.counts == {"stored": 5, "refused": 1}
    assert seen[-1] == (6, 6) and len(seen) == 6
    assert Submission.objects.count() == 5
    assert AuditEntry.objects.filter(kind="run.submitted").count() == 5


def test_a_folder_that_is_no_scenario_is_reported_skipped_and_does_not_fail_the_command(tree, user, capsys):
    weird = import_submission(tree) / "results" / SYSTEM / "llama2-70b-99" / "Offline_backup"
    weird.mkdir()
    (weird / "notes.txt").write_text("old run")
    call_command("import_results", "mlperf", str(tree), "--no-progress")
    out = capsys.readouterr().out
    assert "SKIPPED" in out and "Offline_backup" in out and "not an MLPerf scenario folder" in out


def test_the_command_writes_a_json_report_with_every_result_folder(tree, user, tmp_path):
    report = tmp_path / "report.json"
    call_command("import_results", "mlperf", str(tree), "--no-progress", "--report", str(report))
    data = json.loads(report.read_text())
    assert {o["status"] for o in data["registry"]} == {"stored"} and len(data["registry"]) == 3
    assert data["suite"] == "inference" and all(i["files"] for i in data["items"])


def test_a_training_round_imports_as_time_to_quality_runs(tmp_path, user):
    root = tmp_path / "training_results_v4.0" / "Acme"
    (root / "systems").mkdir(parents=True)
    (root / "systems" / "box.json").write_text(
        json.dumps(
            {
                "system_name": "Box",
                "number_of_nodes": 1,
                "submitter": "Acme",
                "division": "closed",
                "status": "available",
                "accelerators_per_node": 8,
                "accelerator_model_name": "NVIDIA H100",
            }
        )
    )
    folder = root / "results" / "box" / "bert"
    folder.mkdir(parents=True)
    # MLPerf Training v4.0 scores bert over 10 runs, each reaching eval_accuracy >= 0.72 (mlcommons/logging)
    for n, minutes in enumerate([10, 11, 12, 12, 12, 12, 12, 12, 13, 14]):
        start = 1_700_000_000_000 + n * 100_000_000
        stop = start + minutes * 60_000
        lines = [
            {"key": "global_batch_size", "value": 48, "time_ms": start},
            {"key": "run_start", "value": None, "time_ms": start},
            {"key": "eval_accuracy", "value": 0.721, "time_ms": stop, "metadata": {"epoch_num": 1}},
            {"key": "run_stop", "value": None, "time_ms": stop, "metadata": {"status": "success"}},
        ]
        (folder / f"result_{n}.txt").write_text("".join(f":::MLLOG {json.dumps(r)}\n" for r in lines))
    result = mlperf_import(root=tmp_path / "training_results_v4.0", submitted_by=user)
    assert result.suite == "training" and result.counts == {"stored": 1}
    run = Submission.objects.get()
    assert (run.phase, run.scenario_kind, run.headline_metric) == ("training", "time-to-quality", "time_to_quality")
    assert run.headline_value == 12 * 60 and run.origin_round == "v4.0" and run.origin_availability == "available"
