"""Every form in which MLCommons publishes an Inference round's results table is read as the referee, through the
command users run: v4.x-v5.x `summary_results.json` (`Location` 'closed/.../<Scenario>'), v6.0's
'./closed/.../<Scenario>/performance/run_1', and v6.1's index-oriented `summary.json` with its own column names. A
table in no known form, or a hostile one, is refused in words before anything is read or stored. Each stored run
carries MLCommons' citation of it (result ID, audit ID, Details link, date of retrieval).

The rows here restate MLCommons' published figures for the AMD sample (inference_results_v5.1 summary_results.json);
the v6.1 column names are those of inference_results_v6.1's summary.json.
"""

from __future__ import annotations

import html
import io
import json
import shutil
import tarfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from registry.importers import mlperf
from registry.importers.mlperf.published import (
    PublishedTableError,
    find_table,
    read_table,
    result_folder,
)
from registry.importers.mlperf.referee import referee
from registry.models import PublishedCitation, Submission
from tests.conftest import SHARED
from tests.registry.importers.mlperf.test_referee import PUBLISHED, SAMPLE, SYSTEM, every_row

ROUNDS = SHARED / "data" / "mlperf-rounds"

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"no MLPerf sample at {SAMPLE}")


def v61_row(scenario: str, **changes: Any) -> dict[str, Any]:
    """A row as inference_results_v6.1's summary.json writes it (its column names, null for a missing text)."""
    result, accuracy = PUBLISHED[scenario]
    return {
        "Organization": "AMD",
        "Availability": "available",
        "Division": "closed",
        "SystemType": "datacenter",
        "SystemName": "Supermicro AS-8125GS-TNMR2",
        "Platform": "8xMI300X_2xEPYC_9575F",
        "Model": "llama2-70b-99",
        "MlperfModel": "llama2-70b-99",
        "Scenario": scenario,
        "Result": result,
        "Accuracy": accuracy,
        "number_of_nodes": 1,
        "Location": f"./{SYSTEM}/{scenario}/performance/run_1",
        "notes": None,
        "compliance": "closed",
        "errors": 0,
        "version": "v5.1",
        "inferred": 0,
        "has_power": False,
        "Units": "Tokens/s",
        "weight_data_types": "fp8",
        "design_power_watts": None,
        "PrivateID": None,
        **changes,
    }


def index_table(rows: list[dict[str, Any]]) -> str:
    return json.dumps({str(n): r for n, r in enumerate(rows)}, indent=4)


@pytest.fixture(scope="module")
def plan() -> mlperf.ImportPlan:
    return mlperf.parse_tree(SAMPLE)


def _judge(plan: mlperf.ImportPlan, table: Path) -> Any:
    return referee(plan, read_table(table), root=SAMPLE, scope="closed/AMD", table=table.name)


# --- the forms -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "folder"),
    [
        (f"{SYSTEM}/Offline", f"{SYSTEM}/Offline"),
        (f"./{SYSTEM}/Offline/performance/run_1", f"{SYSTEM}/Offline"),
        (f"./{SYSTEM}/Offline/performance/run_12/", f"{SYSTEM}/Offline"),
        (f"{SYSTEM}/Offline/performance", f"{SYSTEM}/Offline"),
    ],
)
def test_each_rounds_location_names_the_same_result_folder(location, folder):
    assert result_folder(location) == folder


def test_v6_0_locations_inside_the_run_folder_agree_with_the_import(plan, tmp_path):
    rows = every_row(**{s: {"Location": f"./{SYSTEM}/{s}/performance/run_1"} for s in PUBLISHED})
    table = tmp_path / "summary_results.json"
    table.write_text(json.dumps(rows))
    report = _judge(plan, table)
    assert report.disagreements == [] and report.compared == 3
    assert {row.published_location for row in report.matched.values()} == {
        f"./{SYSTEM}/{s}/performance/run_1" for s in PUBLISHED
    }


def test_v6_1s_index_table_is_read_by_its_own_column_names(plan, tmp_path):
    table = tmp_path / "summary.json"
    table.write_text(index_table([v61_row(s) for s in PUBLISHED]))
    rows = read_table(table)
    assert [(r.division, r.model, r.units, r.citation.suite, r.citation.result_id) for r in rows] == [
        ("closed", "llama2-70b-99", "Tokens/s", "datacenter", "")
    ] * 3
    report = _judge(plan, table)
    assert report.disagreements == [] and report.compared == 3
    altered = tmp_path / "altered" / "summary.json"
    altered.parent.mkdir()
    altered.write_text(index_table([v61_row("Offline", Result=27813.9), v61_row("Server"), v61_row("Interactive")]))
    assert [d.field for d in _judge(plan, altered).disagreements] == ["headline"]


def test_the_index_tables_rows_are_read_in_index_order_not_text_order(tmp_path):
    table = tmp_path / "summary.json"
    rows = {str(n): v61_row("Offline", Location=f"./{SYSTEM}/s{n}/Offline") for n in (10, 2, 1)}
    table.write_text(json.dumps(rows))
    assert [r.location.split("/")[-2] for r in read_table(table)] == ["s1", "s2", "s10"]


def test_a_round_root_with_summary_json_is_found(tmp_path):
    submitter = tmp_path / "inference_results_v6.1" / "closed" / "AMD"
    submitter.mkdir(parents=True)
    (tmp_path / "inference_results_v6.1" / "summary.json").write_text(index_table([]))
    assert find_table(submitter) == (tmp_path / "inference_results_v6.1" / "summary.json", "closed/AMD", "")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        # pandas' other orients of the same table
        (json.dumps({"Organization": {"0": "AMD"}, "Result": {"0": 1.0}}), "a JSON object with keys 'Organization'"),
        (json.dumps({"columns": ["Result"], "index": [0], "data": [[1.0]]}), "keys 'columns', 'data', 'index'"),
        (json.dumps([v61_row("Offline")]), "a table form the importer does not know (a list of rows"),
        (json.dumps({"0": every_row()[0]}), "a table form the importer does not know (an index of rows"),
        (json.dumps("closed/AMD"), "a JSON string, not a results table"),
        ("ID,Submitter\n5.1-0001,AMD\n", "not JSON text"),
    ],
)
def test_a_table_form_the_importer_does_not_know_is_refused_by_name(tmp_path, text, words):
    table = tmp_path / "summary_results.json"
    table.write_text(text)
    with pytest.raises(PublishedTableError) as refused:
        read_table(table)
    assert words in str(refused.value)
    if "form" in words or "results table" in words:
        assert "the forms read are results list (summary_results.json" in str(refused.value)
        assert "index table (summary.json" in str(refused.value)


# --- hostile tables: refused in words, never a traceback or a 500 -------------------------------------------------

HOSTILE = [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 8 levels"),
    ('[{"a": ' * 5 + "1" + "}]" * 5, "nested deeper than 8 levels"),
    (None, "'Performance_Result' = 1E+999999999 is beyond 1e30"),
    (None, "'Performance_Result' = 1E-999999999 is beyond 1e30"),
    (None, "row 0: 'Performance_Result' = 11111111111111111111"),
]


def _hostile(index: int, text: str | None) -> str:
    if text is not None:
        return text
    figure = ["1e999999999", "1e-999999999", "1" * 400][index - 2]
    rows = json.dumps(every_row(Offline={"Performance_Result": 0}))
    return rows.replace('"Performance_Result": 0', f'"Performance_Result": {figure}', 1)


@pytest.mark.parametrize(("index", "words"), [(n, w) for n, (_, w) in enumerate(HOSTILE)])
def test_a_hostile_table_is_refused_in_words(tmp_path, index, words):
    table = tmp_path / "summary_results.json"
    table.write_text(_hostile(index, HOSTILE[index][0]))
    with pytest.raises(PublishedTableError) as refused:
        read_table(table)
    assert words in str(refused.value) and len(str(refused.value)) < 600


@pytest.fixture
def round_tree(tmp_path: Path) -> Path:
    root = tmp_path / "inference_results_v5.1"
    shutil.copytree(SAMPLE, root / "closed" / "AMD")
    return root


@pytest.mark.django_db
@pytest.mark.parametrize(("index", "words"), [(n, w) for n, (_, w) in enumerate(HOSTILE)])
def test_the_command_refuses_a_hostile_table_before_reading_the_tree(round_tree, user, index, words):
    (round_tree / "summary_results.json").write_text(_hostile(index, HOSTILE[index][0]))
    with pytest.raises(CommandError) as refused:
        call_command("import_results", "mlperf", str(round_tree), "--no-progress")
    assert "cannot referee this import" in str(refused.value) and words in str(refused.value)
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_the_admin_upload_answers_a_hostile_table_with_a_page_not_a_500(client, django_user_model, tmp_path):
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-for-tests-only"))
    for index, (text, words) in enumerate(HOSTILE[:3]):
        table = tmp_path / "summary_results.json"
        table.write_text(_hostile(index, text))
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            archive.add(SAMPLE, arcname="inference_results_v5.1/closed/AMD")
            archive.add(table, arcname="inference_results_v5.1/summary_results.json")
        buffer.seek(0)
        buffer.name = "round.tar.gz"
        response = client.post("/admin/registry/submission/import-mlperf/", {"archive": buffer, "round": ""})
        assert response.status_code == 200, (index, response.status_code)
        page = html.unescape(response.content.decode())
        assert words in page and "Traceback" not in page
    assert not Submission.objects.exists()


# --- through the command: the forms, the citation -----------------------------------------------------------------


@pytest.mark.django_db
def test_an_index_table_referees_the_command_and_each_run_is_cited(round_tree, user, capsys):
    (round_tree / "summary.json").write_text(index_table([v61_row(s) for s in PUBLISHED]))
    call_command("import_results", "mlperf", str(round_tree / "closed" / "AMD"), "--no-progress")
    assert Submission.objects.count() == 3 and "3 compared" in capsys.readouterr().out
    citations = PublishedCitation.objects.order_by("scenario")
    assert [
        (c.scenario, c.result_id, c.suite, c.table_name, c.location.endswith("/performance/run_1")) for c in citations
    ] == [
        ("Interactive", "", "datacenter", "summary.json", True),
        ("Offline", "", "datacenter", "summary.json", True),
        ("Server", "", "datacenter", "summary.json", True),
    ]


@pytest.mark.django_db
def test_importing_again_with_the_same_table_adds_no_citation_and_a_corrected_table_adds_its_own(round_tree, user):
    table = round_tree / "summary_results.json"
    rows = every_row(Offline={"ID": "5.1-0007", "Details": "https://github.com/mlcommons/inference_results_v5.1/x"})
    table.write_text(json.dumps(rows))
    for _ in range(2):
        call_command("import_results", "mlperf", str(round_tree), "--no-progress")
    assert PublishedCitation.objects.count() == 3
    offline = PublishedCitation.objects.get(scenario="Offline")
    assert (offline.result_id, offline.details, offline.division) == (
        "5.1-0007",
        "https://github.com/mlcommons/inference_results_v5.1/x",
        "closed",
    )
    assert offline.unique_id == "" and offline.retrieved_at is not None  # the test's rows have no Unique ID
    table.write_text(json.dumps(every_row(Offline={"ID": "5.1-0008"})))
    call_command("import_results", "mlperf", str(round_tree), "--no-progress")
    assert Submission.objects.count() == 3 and PublishedCitation.objects.count() == 6
    assert sorted(PublishedCitation.objects.filter(scenario="Offline").values_list("result_id", flat=True)) == [
        "5.1-0007",
        "5.1-0008",
    ]


@pytest.mark.django_db
def test_a_link_that_is_not_https_is_not_kept_as_the_details_link(round_tree, user):
    rows = every_row(Offline={"Details": "javascript:alert(1)"})
    (round_tree / "summary_results.json").write_text(json.dumps(rows))
    call_command("import_results", "mlperf", str(round_tree), "--no-progress")
    assert PublishedCitation.objects.get(scenario="Offline").details == ""


# --- every shared round with its table, through the command --------------------------------------------------------

TABLED = sorted(p.parent for name in ("summary_results.json", "summary.json") for p in ROUNDS.glob(f"*/{name}"))


@pytest.mark.django_db
@pytest.mark.xdist_group("published-rounds")
@pytest.mark.skipif(not TABLED, reason=f"no round with a published table in {ROUNDS}")
@pytest.mark.parametrize("root", TABLED, ids=[p.name for p in TABLED])
def test_the_command_stores_every_published_result_of_a_kept_round_as_published(root, user, capsys):
    """`benchreg import mlperf <round>`: no disagreement, nothing held, every row whose folder is in the tree stored
    and cited with the table's own result ID and audit ID, or refused with the importer's reason."""
    found = find_table(root)
    assert found is not None
    rows = read_table(found.table)
    try:
        call_command("import_results", "mlperf", str(root), "--no-progress")
        failed = ""
    except CommandError as exc:
        failed = str(exc)
    out = capsys.readouterr().out
    assert " 0 disagreement(s)" in out and "held" not in failed and "disagree" not in failed
    refused = [line for line in out.splitlines() if line.startswith("  REFUSED ") and ": refused: published" in line]
    # the only refusals: open benchmarks renamed without their model_mapping.json (trimmed away), and v6.0's
    # Supermicro rgat Offline, published with an empty mlperf_log_detail.txt (0 bytes in MLCommons' repository)
    explained = ("have no benchmark", "not a LoadGen performance log")
    assert all(any(why in line for why in explained) for line in refused), refused
    in_tree = [r for r in rows if (root / r.location).is_dir()]
    cited = {c.location: c for c in PublishedCitation.objects.select_related("submission")}
    assert len(in_tree) > 0 and len(cited) + len(refused) == len(in_tree)
    for row in in_tree:
        citation = cited.get(row.published_location)
        if citation is None:
            assert any(row.location in line for line in refused)
            continue
        assert row.citation is not None
        assert (citation.result_id, citation.unique_id, citation.details) == (
            row.citation.result_id,
            row.citation.unique_id,
            row.citation.details,
        )
        assert citation.submission.origin_round == row.version


# --- the citation where users look: the run page, the API, a comparison, a signed report ----------------------------


@pytest.mark.django_db
def test_the_citation_is_shown_on_the_run_page_the_api_and_a_comparison(round_tree, user, client, django_user_model):
    rows = every_row(
        Offline={"ID": "5.1-0001", "Unique ID (e.g. for Audit)": "datacenter/closed/AMD/8xMI300X_2xEPYC_9575F"},
        Server={"ID": "5.1-0002", "Details": "https://github.com/mlcommons/inference_results_v5.1/tree/main/x"},
    )
    (round_tree / "summary_results.json").write_text(json.dumps(rows))
    call_command("import_results", "mlperf", str(round_tree), "--no-progress")
    offline = Submission.objects.get(scenario_kind="offline")
    server = Submission.objects.get(scenario_kind="server")
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-for-tests-only"))
    page = html.unescape(client.get(f"/runs/{offline.pk}/").content.decode())
    assert "Published by MLCommons" in page
    assert "MLPerf Inference v5.1 Closed, result 5.1-0001: llama2-70b-99, Offline (datacenter; audit ID " in page
    assert "datacenter/closed/AMD/8xMI300X_2xEPYC_9575F), retrieved " in page
    page = client.get(f"/runs/{server.pk}/").content.decode()
    assert 'href="https://github.com/mlcommons/inference_results_v5.1/tree/main/x"' in page
    api = client.get(f"/api/v1/submissions/{offline.pk}").json()
    assert [(c["result_id"], c["division"], c["benchmark"], c["scenario"]) for c in api["citations"]] == [
        ("5.1-0001", "closed", "llama2-70b-99", "Offline")
    ]


def test_a_bare_accuracy_figure_of_an_endpoints_row_is_the_results_one_value(plan, tmp_path):
    from registry.importers.mlperf.published import BARE_ACCURACY, accuracy_values
    from registry.importers.mlperf.referee import compare

    assert accuracy_values("81.35824977210574") == {BARE_ACCURACY: Decimal("81.35824977210574")}
    assert accuracy_values("ROUGE1: 44.4542") == {"ROUGE1": Decimal("44.4542")}
    table = tmp_path / "summary.json"
    table.write_text(index_table([v61_row("Offline", Accuracy="0.78718")]))
    (row,) = read_table(table)
    document = {
        "metrics": {"primary": "throughput", "throughput": {"value": 27803.9, "unit": "tokens/s"}},
        "precision": {"weights": "fp8"},
        "conditions": {"validity": {"valid": True}},
        "provenance": {"origin": {"division": "closed", "availability": "available"}},
    }
    one = {**document, "metrics": {**document["metrics"], "quality": {"passed": True, "values": {"mAP": 0.787181}}}}
    assert [d.field for d in compare(row, one)] == []
    off = {**document, "metrics": {**document["metrics"], "quality": {"passed": True, "values": {"mAP": 0.7874}}}}
    assert [(d.field, d.published) for d in compare(row, off)] == [("accuracy", "0.78718")]
    two = {**document, "metrics": {**document["metrics"], "quality": {"passed": True, "values": {"a": 1, "b": 2}}}}
    assert [(d.field, d.stored) for d in compare(row, two)] == [("accuracy", "absent")]
