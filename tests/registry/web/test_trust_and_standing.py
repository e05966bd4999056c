"""How far the registry stands behind each run (trust), set by the path in; and comparisons as they stand today.

Trust is never read from the document: a token holder's run is "declared" even when its document claims
`provenance.source: "runner"`; the example loaders store "example", which comparisons refuse. A run withdrawn after
a comparison was stored makes that comparison show "inconclusive", with the withdrawal as the reason, computed
when it is shown (the stored comparison itself never changes).
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from devtools.documents import variant
from registry.models import Comparison
from registry.services.comparisons import NotComparable, comparison_create
from registry.services.submissions import submission_create, submission_withdraw

from .conftest import signed_in

pytestmark = pytest.mark.django_db


def test_a_token_holders_run_is_declared_whatever_its_document_claims(api, server_example):
    assert server_example["provenance"]["source"] == "runner"
    answer = api.post("/api/v1/submissions", server_example, format="json")
    assert answer.status_code == 201 and answer.json()["trust"] == "declared"
    detail = api.get(f"/api/v1/submissions/{answer.json()['id']}").json()
    assert detail["trust"] == "declared"


def test_no_caller_can_claim_vouched_trust(submitter, server_example):
    with pytest.raises(ValueError, match="only an agent's job run is vouched"):
        submission_create(document=server_example, submitted_by=submitter, trust="vouched")
    with pytest.raises(ValueError):
        submission_create(document=server_example, submitted_by=submitter, trust="trusted")


def test_runs_can_be_listed_by_trust(api, submitter, server_example):
    example, _ = submission_create(document=server_example, submitted_by=submitter, trust="example")
    declared, _ = submission_create(document=variant(server_example, "lab-h200-02", 1500.0), submitted_by=submitter)
    ids = {r["id"]: r["trust"] for r in api.get("/api/v1/submissions?trust=example").json()["results"]}
    assert ids == {example.pk: "example"}
    both = api.get("/api/v1/submissions?trust=example&trust=declared").json()["results"]
    assert {r["id"] for r in both} == {example.pk, declared.pk}
    assert api.get("/api/v1/submissions?trust=nonsense").status_code == 400


def test_comparisons_refuse_example_runs_naming_each(api, submitter, server_example):
    example, _ = submission_create(document=server_example, submitted_by=submitter, trust="example")
    other, _ = submission_create(document=variant(server_example, "lab-h200-02", 1500.0), submitted_by=submitter)
    answer = api.post("/api/v1/comparisons", {"runs": [other.pk, example.pk], "axis": "system"}, format="json")
    assert answer.status_code == 422 and answer.json()["code"] == "example-run"
    assert [e["pointer"] for e in answer.json()["errors"]] == ["/runs/1"]
    assert f"run {example.pk} is an example document" in answer.json()["errors"][0]["message"]
    assert not Comparison.objects.exists()
    with pytest.raises(NotComparable):
        comparison_create(runs=[example, other], axis="system", created_by=submitter)


def test_trust_is_shown_in_the_catalogue_the_run_page_and_the_comparison(viewer, submitter, server_example):
    example, _ = submission_create(document=server_example, submitted_by=submitter, trust="example")
    a, _ = submission_create(document=variant(server_example, "lab-h200-02", 1500.0), submitted_by=submitter)
    b, _ = submission_create(document=variant(server_example, "lab-h200-03", 1510.0), submitted_by=submitter)
    client = signed_in(viewer)
    catalogue = client.get("/").content.decode()
    assert "trust--example" in catalogue and "trust--declared" in catalogue
    page = client.get(f"/runs/{example.pk}/").content.decode()
    assert "Example document" in page and "comparisons and reports refuse it" in page
    comparison, _ = comparison_create(runs=[a, b], axis="system", created_by=submitter)
    # each run's row, and again beside its run id in its configuration's (arm's) row
    assert client.get(f"/comparisons/{comparison.pk}/").content.decode().count("trust--declared") == 4


def _withdrawn_later(submitter: Any, admin_user: Any, server_example: dict[str, Any]) -> tuple[Any, Any]:
    a, _ = submission_create(document=server_example, submitted_by=submitter)
    b, _ = submission_create(document=variant(server_example, "lab-h200-02", 1500.0), submitted_by=submitter)
    comparison, _ = comparison_create(runs=[a, b], axis="system", created_by=submitter)
    submission_withdraw(submission=b, reason="driver bug inflated throughput", actor=admin_user)
    return comparison, b


def test_a_run_withdrawn_later_makes_the_stored_comparison_inconclusive_in_the_api(
    api, submitter, admin_user, server_example
):
    comparison, withdrawn = _withdrawn_later(submitter, admin_user, server_example)
    body = api.get(f"/api/v1/comparisons/{comparison.pk}").json()
    assert body["conclusion"]["outcome"] == "inconclusive"
    assert body["conclusion"]["statement"].startswith("Inconclusive:")
    reason = body["conclusion"]["reasons"][0]
    assert reason["code"] == "withdrawn-run" and reason["run"] == 1 and reason["run_id"] == withdrawn.pk
    assert "driver bug inflated throughput" in reason["message"]
    assert [r["withdrawn"] is not None for r in body["runs"]] == [False, True]
    assert body["result"] == Comparison.objects.get(pk=comparison.pk).result  # the stored result is untouched


def test_a_run_withdrawn_later_makes_the_comparison_page_say_inconclusive(
    viewer, submitter, admin_user, server_example
):
    comparison, withdrawn = _withdrawn_later(submitter, admin_user, server_example)
    page = signed_in(viewer).get(f"/comparisons/{comparison.pk}/").content.decode()
    box = page[page.index('id="conclusion"') :]
    box = box[: box.index("</div>")]
    assert 'data-outcome="inconclusive"' in page and "Conclusion: Inconclusive" in box
    assert f"run {withdrawn.pk} was withdrawn" in box and "driver bug inflated throughput" in box


def test_the_comparison_builder_offers_a_baseline_that_must_be_one_of_the_runs(viewer, fleet):
    client = signed_in(viewer)
    assert 'name="baseline"' in client.get("/compare/").content.decode()
    answer = client.post(
        "/compare/", {"runs": f"{fleet['a'].pk}, {fleet['b'].pk}", "axis": "system", "baseline": fleet["cpu"].pk}
    )
    assert answer.status_code == 400 and "The baseline must be one of the runs compared" in answer.content.decode()


def test_a_report_on_a_comparison_whose_run_was_withdrawn_later_says_inconclusive(
    api, submitter, admin_user, server_example, settings, tmp_path
):
    from registry.models import Report

    settings.DATA_DIR = tmp_path
    comparison, withdrawn = _withdrawn_later(submitter, admin_user, server_example)
    report = Report.objects.create(
        comparison=comparison,
        title="t",
        decision="d",
        requested_by=submitter,
        requested_by_name=submitter.username,
        created_at=comparison.created_at,
    )
    requester = APIClient()  # a report is its requester's (and admins'): registry.policy
    requester.force_authenticate(submitter)
    body = requester.get(f"/api/v1/reports/{report.pk}").json()
    assert body["conclusion"]["outcome"] == "inconclusive"
    assert body["conclusion"]["reasons"][0]["run_id"] == withdrawn.pk


def test_the_demo_loads_the_hand_written_examples_as_examples(admin_user):
    from registry.management.commands.demo import EXAMPLES_DIR, Command
    from registry.models import Submission

    Command()._load_examples(admin_user)
    stored = Submission.objects.all()
    assert stored.count() == len(list(EXAMPLES_DIR.glob("*.json"))) > 0
    assert {r.trust for r in stored} == {"example"}


def test_a_report_never_rests_on_an_example_run_however_its_comparison_was_stored(submitter, server_example):
    from registry.exceptions import RegistryError
    from registry.services import comparisons as service
    from registry.services.reports import report_request

    example, _ = submission_create(document=server_example, submitted_by=submitter, trust="example")
    other, _ = submission_create(document=variant(server_example, "lab-h200-02", 1500.0), submitted_by=submitter)
    # Stored the way a comparison from before trust levels existed could be: past the service's own refusal.
    stored = service.comparison_store(
        [example, other],
        "system",
        {"runs": [example.digest, other.digest]},
        {"comparable": True},
        "{}",
        "sha256:" + "0" * 64,
        "",
        submitter,
    )
    with pytest.raises(RegistryError) as refused:
        report_request(comparison=stored, title="t", decision="d", requested_by=submitter)
    assert refused.value.code == "example-run" and refused.value.status == 422
