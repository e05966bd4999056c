"""The published table referees an import: rows written here from MLCommons' summary_results.json of Inference
v5.1 (the published values are facts of this test) agree with the import of the AMD sample, and each altered
row is reported as the disagreement it is; the command exits non-zero and stores nothing it disagrees about.
A round kept in ../shared/data/mlperf-rounds/ with its summary_results.json is refereed whole.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import tarfile
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from registry.importers import mlperf
from registry.importers.mlperf.published import (
    PublishedTableError,
    find_table,
    half_unit,
    read_table,
    scope_of,
)
from registry.importers.mlperf.referee import compare, referee
from registry.models import Submission
from tests.conftest import SHARED

SAMPLE = SHARED / "data" / "mlperf" / "inference_sample1_AMD_v5.1"  # MLPerf's closed/AMD folder, one system
# BENCHREG_MLPERF_ROUNDS points the whole-round test at rounds kept elsewhere (one folder per round).
ROUNDS = Path(os.environ.get("BENCHREG_MLPERF_ROUNDS") or SHARED / "data" / "mlperf-rounds")
SYSTEM = "closed/AMD/results/8xMI300X_2xEPYC_9575F/llama2-70b-99"

# MLCommons' published figures for the sample's three results (inference_results_v5.1 summary_results.json).
PUBLISHED = {
    "Offline": (27803.9, "ROUGE1: 44.4465  ROUGE2: 22.0638  ROUGEL: 28.625  TOKENS_PER_SAMPLE: 301.1"),
    "Interactive": (8840.42, "ROUGE1: 44.4542  ROUGE2: 22.0419  ROUGEL: 28.6112  TOKENS_PER_SAMPLE: 301.1"),
    "Server": (24593.8, "ROUGE1: 44.4406  ROUGE2: 22.0593  ROUGEL: 28.6063  TOKENS_PER_SAMPLE: 301.3"),
}

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"no MLPerf sample at {SAMPLE}")


def row(scenario: str, **changes: Any) -> dict[str, Any]:
    """A row as MLCommons' generate_final_report.py writes it (the fields the referee reads, and some others)."""
    result, accuracy = PUBLISHED[scenario]
    return {
        "ID": "5.1-0001",
        "Submitter": "AMD",
        "Availability": "available",
        "Category": "closed",
        "Suite": "datacenter",
        "Platform": "8xMI300X_2xEPYC_9575F",
        "UsedModel": "llama2-70b-99",
        "Model": "llama2-70b-99",
        "Scenario": scenario,
        "Accuracy": accuracy,
        "a#": 8,
        "Location": f"{SYSTEM}/{scenario}",
        "version": "v5.1",
        "inferred": 0,
        "has_power": False,
        "weight_data_types": "fp8",
        "Performance_Result": result,
        "Performance_Units": "Tokens/s",
        **changes,
    }


def write_table(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(rows, indent=2))
    return path


@pytest.fixture(scope="module")
def plan() -> mlperf.ImportPlan:
    return mlperf.parse_tree(SAMPLE)


def judge(plan: mlperf.ImportPlan, tmp_path: Path, rows: list[dict[str, Any]]) -> Any:
    table = write_table(tmp_path / "summary_results.json", rows)
    return referee(plan, read_table(table), root=SAMPLE, scope="closed/AMD", table=table.name)


def every_row(**changes_by_scenario: dict[str, Any]) -> list[dict[str, Any]]:
    return [row(scenario, **changes_by_scenario.get(scenario, {})) for scenario in PUBLISHED]


def test_the_published_rows_agree_with_the_import(plan, tmp_path):
    report = judge(plan, tmp_path, every_row())
    assert report.disagreements == [] and report.refused == []
    assert report.compared == 3 and report.in_scope == 3 and report.held == frozenset()


def test_scenario_folders_match_in_any_case_as_mlperf_accepts_them(plan, tmp_path):
    report = judge(plan, tmp_path, every_row(Offline={"Location": f"{SYSTEM}/offline"}))
    assert report.disagreements == [] and report.compared == 3


def test_a_figure_is_compared_at_the_precision_the_table_prints(plan, tmp_path):
    # stored 27803.9: '27804' (half unit 0.5) covers it, '27803.94' (half unit 0.005) does not
    assert judge(plan, tmp_path, every_row(Offline={"Performance_Result": 27804})).disagreements == []
    found = judge(plan, tmp_path, every_row(Offline={"Performance_Result": 27803.94})).disagreements
    assert [(d.field, d.published, d.stored) for d in found] == [("headline", "27803.94 Tokens/s", "27803.9 tokens/s")]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"Performance_Result": 27813.9}, "headline"),
        ({"Performance_Units": "Samples/s"}, "unit"),
        ({"Performance_Units": "Widgets/s"}, "unit"),
        ({"Accuracy": PUBLISHED["Offline"][1].replace("44.4465", "44.4565")}, "accuracy.ROUGE1"),
        ({"Accuracy": PUBLISHED["Offline"][1] + "  GSM8K_ACCURACY: 73.2"}, "accuracy.GSM8K_ACCURACY"),
        ({"inferred": 1}, "inferred"),
        ({"has_power": True, "Power_Result": 10400.99, "Power_Units": "Watts"}, "power"),
        ({"weight_data_types": "fp4"}, "precision"),
        ({"weight_data_types": "uint8"}, "precision"),
        ({"Category": "open"}, "division"),
        ({"Availability": "preview"}, "availability"),
    ],
)
def test_each_altered_row_is_reported_and_its_run_held(plan, tmp_path, changes, field):
    report = judge(plan, tmp_path, every_row(Offline=changes))
    assert [(d.location, d.field) for d in report.disagreements] == [(f"{SYSTEM}/Offline", field)]
    offline = next(n for n, item in enumerate(plan.items) if item.key.endswith("/Offline"))
    assert report.held == {offline}
    assert all(d.published and d.stored for d in report.disagreements)


def test_a_published_result_that_fails_mlperfs_checks_here_is_a_verdict_disagreement(plan, tmp_path):
    published = _read_one(row("Offline"), tmp_path)
    document = copy.deepcopy(next(i.document for i in plan.items if i.key.endswith("/Offline")))
    assert compare(published, document) == []
    document["metrics"]["quality"]["passed"] = None
    document["conditions"]["validity"]["valid"] = False
    found = {(d.field, d.published, d.stored) for d in compare(published, document)}
    assert found == {("verdict", "passed", "not judged"), ("validity", "valid", "False")}


def _read_one(raw: dict[str, Any], tmp_path: Path) -> Any:
    """One row as the table reader reads it."""
    return read_table(write_table(tmp_path / "one.json", [raw]))[0]


def test_a_run_the_table_does_not_publish_is_reported_and_held(plan, tmp_path):
    report = judge(plan, tmp_path, [row("Offline"), row("Interactive")])
    assert [(d.location, d.field, d.published) for d in report.disagreements] == [
        (f"{SYSTEM}/Server", "unpublished", "no row")
    ]
    assert len(report.held) == 1


def test_a_published_result_outside_the_tree_is_counted_absent_not_judged(plan, tmp_path):
    elsewhere = row("Offline", Location="closed/AMD/results/8xMI325X_2xEPYC_9575F_1/llama2-70b-99/Offline")
    report = judge(
        plan, tmp_path, [*every_row(), elsewhere, row("Offline", Location="closed/NVIDIA/results/x/y/Offline")]
    )
    assert report.disagreements == [] and report.in_scope == 4 and report.absent == [elsewhere["Location"]]


def test_a_published_folder_the_importer_does_not_read_is_a_disagreement(plan, tmp_path):
    tree = tmp_path / "AMD"
    shutil.copytree(SAMPLE, tree)
    backup = tree / "results" / "8xMI300X_2xEPYC_9575F" / "llama2-70b-99" / "Offline_backup"
    backup.mkdir()
    (backup / "notes.txt").write_text("an older run")
    stray = row("Offline", Location=f"{SYSTEM}/Offline_backup")
    table = write_table(tmp_path / "summary_results.json", [*every_row(), stray])
    report = referee(mlperf.parse_tree(tree), read_table(table), root=tree, scope="closed/AMD", table="t")
    assert [(d.field, d.stored) for d in report.disagreements] == [("not-imported", "skipped")]
    assert "not an MLPerf scenario folder" in report.disagreements[0].note


def test_a_table_of_another_round_is_a_disagreement(plan, tmp_path):
    report = judge(plan, tmp_path, [row(s, version="v5.0") for s in PUBLISHED])
    assert [(d.field, d.published, d.stored) for d in report.disagreements] == [("round", "v5.0", "v5.1")]


def test_a_label_mlcommons_prints_wrongly_is_read_as_the_figure_it_labels(tmp_path):
    # whisper's published figure is result_tokens_per_second, labelled 'Samples/s' by the report generator
    whisper = _read_one(
        row(
            "Offline",
            Model="whisper",
            UsedModel="whisper",
            Accuracy="",
            Performance_Result=34450.7,
            Performance_Units="Samples/s",
            Location="closed/HPE/results/h/whisper/Offline",
            weight_data_types="fp8",
        ),
        tmp_path,
    )
    document = {
        "metrics": {"primary": "throughput", "throughput": {"value": 34450.7, "unit": "tokens/s"}},
        "precision": {"weights": "fp8"},
        "conditions": {"validity": {"valid": True}},
        "provenance": {"origin": {"division": "closed", "availability": "available"}},
    }
    found = [d.field for d in compare(whisper, document)]
    assert found == ["verdict"]  # no accuracy in this document: the unit and the figure agree
    older = _read_one(
        {**row("Offline"), "Model": "whisper", "version": "v5.0", "Performance_Units": "Samples/s"}, tmp_path
    )
    assert "unit" in [d.field for d in compare(older, document)]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ({"not": "a list"}, "a JSON object with keys 'not', not a results table"),
        ([{"Location": "x"}], "row 0: no 'version'"),
        ([{**row("Offline"), "Performance_Result": "27803.9"}], "row 0: 'Performance_Result'"),
        ([{**row("Offline"), "inferred": 2}], "row 0: 'inferred'"),
        ([row("Offline"), row("Offline", Location=f"{SYSTEM}/OFFLINE")], "rows 0 and 1: the same Location"),
    ],
)
def test_a_table_that_is_not_mlcommons_format_is_refused_by_row_and_field(tmp_path, rows, message):
    path = tmp_path / "summary_results.json"
    path.write_text(json.dumps(rows))
    with pytest.raises(PublishedTableError, match=message):
        read_table(path)


def test_half_a_printed_unit_is_the_tolerance():
    assert half_unit(Decimal("27803.9")) == Decimal("0.05")
    assert half_unit(Decimal("102909.0")) == Decimal("0.5")  # Python prints '.0' on every whole float
    assert half_unit(Decimal("18.526136")) == Decimal("0.0000005")


def test_the_table_is_found_at_the_round_root_and_the_tree_placed_in_the_round(tmp_path):
    submitter = tmp_path / "inference_results_v5.1" / "closed" / "AMD"
    submitter.mkdir(parents=True)
    assert find_table(submitter) is None
    table = write_table(tmp_path / "inference_results_v5.1" / "summary_results.json", [])
    assert find_table(submitter) == (table, "closed/AMD", "")
    assert find_table(submitter.parent) == (table, "closed", "")
    assert find_table(tmp_path / "inference_results_v5.1") == (table, "", "")
    assert find_table(tmp_path) == (table, "", "inference_results_v5.1")  # an archive's one top folder
    assert scope_of(submitter) == "closed/AMD" and scope_of(submitter.parent) == "closed"
    assert scope_of(tmp_path) == ""  # not a results repository's layout: taken as the round root


# --- through the command: disagreements fail it and hold their runs back --------------------------------------


@pytest.fixture
def round_tree(tmp_path: Path) -> Path:
    root = tmp_path / "inference_results_v5.1"
    shutil.copytree(SAMPLE, root / "closed" / "AMD")
    return root


@pytest.mark.django_db
def test_the_command_agrees_with_the_published_table_and_stores_every_run(round_tree, user, capsys):
    write_table(round_tree / "summary_results.json", every_row())
    call_command("import_results", "mlperf", str(round_tree / "closed" / "AMD"), "--no-progress")
    assert Submission.objects.count() == 3
    assert "3 compared" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("word", "weights"), [("float8", "fp8"), ("FP8", "fp8"), ("w4a8", "int4"), ("UINT4", "unspecified")]
)
@pytest.mark.django_db
def test_a_precision_word_is_read_by_one_table_for_the_document_and_the_referee(round_tree, user, word, weights):
    """measurements.json and the table write the same word; the command stores every run, each with the format the
    word names ('unspecified' where it names none), and the memory sizes as the description writes them."""
    for measurements in (round_tree / "closed" / "AMD").glob("results/*/*/*/measurements.json"):
        data = json.loads(measurements.read_text())
        data["weight_data_types"] = word
        measurements.write_text(json.dumps(data))
    write_table(round_tree / "summary_results.json", every_row(**{s: {"weight_data_types": word} for s in PUBLISHED}))
    call_command("import_results", "mlperf", str(round_tree), "--no-progress")
    assert Submission.objects.count() == 3
    assert set(Submission.objects.values_list("precision_weights", flat=True)) == {weights}
    system = Submission.objects.first().document["system"]
    assert system["accelerators"][0]["memory_gib"] == 192e9 / 2**30  # "192 GB": 192 x 10^9 bytes, as written
    assert system["host"]["memory_gib"] == 1536  # "1.5TiB"


@pytest.mark.django_db
def test_the_command_fails_on_a_disagreement_and_stores_only_what_agrees(round_tree, user, capsys):
    write_table(round_tree / "summary_results.json", every_row(Server={"Performance_Result": 2459.38}))
    with pytest.raises(CommandError, match=r"1 disagreement.*1 headline.*1 run.* held back"):
        call_command("import_results", "mlperf", str(round_tree), "--no-progress")
    out = capsys.readouterr().out
    assert f"DISAGREES {SYSTEM}/Server: headline: published 2459.38 Tokens/s, stored 24593.77 tokens/s" in out
    assert Submission.objects.count() == 2 and not Submission.objects.filter(scenario_kind="server").exists()


@pytest.mark.django_db
def test_accepting_disagreements_stores_the_runs_but_still_fails(round_tree, user, tmp_path):
    table = write_table(tmp_path / "elsewhere.json", every_row(Server={"weight_data_types": "int4"}))
    report = tmp_path / "report.json"
    with pytest.raises(CommandError, match="1 disagreement"):
        call_command(
            "import_results",
            "mlperf",
            str(round_tree / "closed" / "AMD"),
            "--no-progress",
            "--published",
            str(table),
            "--accept-disagreements",
            "--report",
            str(report),
        )
    assert Submission.objects.count() == 3
    referee_report = json.loads(report.read_text())["referee"]
    assert referee_report["counts"] == {"precision": 1} and referee_report["compared"] == 3


@pytest.mark.django_db
def test_an_unreadable_table_stores_nothing_and_none_turns_the_referee_off(round_tree, user, capsys):
    (round_tree / "summary_results.json").write_text("[{")
    with pytest.raises(CommandError, match=r"cannot referee this import.*not JSON"):
        call_command("import_results", "mlperf", str(round_tree), "--no-progress")
    assert Submission.objects.count() == 0
    call_command("import_results", "mlperf", str(round_tree), "--no-progress", "--published", "none")
    assert Submission.objects.count() == 3 and "not refereed" in capsys.readouterr().out


# --- every round kept with its published table -------------------------------------------------------------------

TABLED = sorted(p for p in ROUNDS.glob("*/summary_results.json")) if ROUNDS.is_dir() else []


@pytest.mark.skipif(not TABLED, reason=f"no round with a summary_results.json in {ROUNDS}")
@pytest.mark.parametrize("table", TABLED, ids=[p.parent.name for p in TABLED])
def test_every_published_result_of_a_kept_round_agrees_with_its_import(table):
    root = table.parent
    report = referee(mlperf.parse_tree(root), read_table(table), root=root, scope="", table=str(table))
    kinds = Counter(d.kind for d in report.disagreements)
    shown = "\n".join(d.line()[:300] for d in report.disagreements[:40])
    assert report.disagreements == [], f"{dict(kinds)}; the first ones:\n{shown}"
    assert report.compared > 0


@pytest.mark.django_db
def test_the_admin_upload_is_refereed_by_the_table_inside_the_archive(client, django_user_model, tmp_path):
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-for-tests-only"))

    def upload(table: str) -> str:
        buffer = io.BytesIO()
        (tmp_path / "summary_results.json").write_text(table)
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            archive.add(SAMPLE, arcname="inference_results_v5.1/closed/AMD")
            archive.add(tmp_path / "summary_results.json", arcname="inference_results_v5.1/summary_results.json")
        buffer.seek(0)
        buffer.name = "round.tar.gz"
        response = client.post("/admin/registry/submission/import-mlperf/", {"archive": buffer, "round": ""})
        return response.content.decode()

    assert "cannot referee this import" in upload("[{") and not Submission.objects.exists()
    page = upload(json.dumps(every_row(Server={"Performance_Units": "Samples/s"})))
    assert "2 stored" in page and "1 held" in page and "DISAGREES" in page
