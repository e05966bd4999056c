"""Comparable sets and like-for-like comparisons over the API."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from devtools.documents import variant
from registry.models import AuditEntry, Comparison
from registry.services.submissions import submission_create, submission_withdraw

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(user, server_example, offline_example):
    """Three comparable server runs on different configurations, one int8 variant, one offline CPU run."""
    a, _ = submission_create(document=server_example, submitted_by=user)
    h200 = variant(server_example, "lab-h200-02", 1500.0)
    h200["system"]["accelerators"][0]["model"] = "H200"
    b, _ = submission_create(document=h200, submitted_by=user)
    mi300 = variant(server_example, "lab-mi300-01", 1400.0, **{"software.driver.version": "999.1"})
    mi300["system"]["accelerators"][0].update(vendor="AMD", model="MI300X")
    c, _ = submission_create(document=mi300, submitted_by=user)
    int8 = variant(server_example, "lab-h100-09", 1600.0, **{"precision.weights": "int8"})
    int8["precision"]["quantization"] = {"method": "dynamic", "granularity": "per-channel", "library": "x"}
    d, _ = submission_create(document=int8, submitted_by=user)
    e, _ = submission_create(document=offline_example, submitted_by=user)
    return {"a": a, "b": b, "c": c, "int8": d, "cpu": e}


def test_comparable_runs_are_those_sharing_the_key(api, fleet):
    response = api.get(f"/api/v1/submissions/{fleet['a'].pk}/comparable")
    assert response.status_code == 200
    ids = {r["id"] for r in response.json()["results"]}
    assert ids == {fleet["b"].pk, fleet["c"].pk}


def test_comparable_lookup_is_a_fixed_number_of_queries(api, fleet):
    with CaptureQueriesContext(connection) as queries:
        api.get(f"/api/v1/submissions/{fleet['a'].pk}/comparable")
    assert len(queries) <= 5  # token with its agent, the owner's roles (rights now), run, page (+ last-used update)


def test_an_unknown_axis_is_a_clear_400(api, fleet):
    response = api.get(f"/api/v1/submissions/{fleet['a'].pk}/comparable?axis=vibes")
    assert response.status_code == 400 and response.json()["code"] == "unknown-axis"


def test_a_comparable_set_is_compared_with_intervals_ratios_and_disclosures(api, fleet):
    runs = [fleet["a"].pk, fleet["b"].pk, fleet["c"].digest]
    response = api.post(
        "/api/v1/comparisons",
        {"runs": runs, "axis": "system", "prices": {"lab-h100-01": 3.0, "lab-h200-02": 4.5}},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    result = body["result"]
    assert result["comparable"] and result["axis"] == "system"
    assert len(result["arms"]) == 3 and result["pairwise"]
    assert all(p["method"] for p in result["pairwise"]) and result["methods"]
    assert any(d["field"] == "software.driver.version" for d in result["disclosures"])
    derived = [d for arm in result["arms"] for d in arm["derived"]]
    assert any(d["name"] == "cost_per_million_outputs" and d["derived"] for d in derived)
    assert body["run_ids"] == [fleet["a"].pk, fleet["b"].pk, fleet["c"].pk]
    assert AuditEntry.objects.filter(kind="comparison.created", subject=body["digest"]).exists()


def test_the_requester_picks_the_baseline_and_the_summary_names_the_best_against_it(api, fleet):
    runs = [fleet["a"].pk, fleet["b"].pk, fleet["c"].pk]
    response = api.post("/api/v1/comparisons", {"runs": runs, "baseline": fleet["c"].digest}, format="json")
    assert response.status_code == 201, response.content
    result = response.json()["result"]
    assert [a["label"] for a in result["arms"]] == ["H100 80GB HBM3", "H200", "MI300X"]
    assert result["arms"][1]["configuration"]["system.accelerators[0].model"] == "H200"
    assert "system.name" not in result["arms"][1]["configuration"]
    assert {(p["subject"], p["baseline"]) for p in result["pairwise"]} == {(0, 2), (1, 2)}
    conclusion = result["conclusion"]
    assert conclusion["baseline"] == 2 and conclusion["focus"] == [2, 1]  # H200 is the fastest
    assert conclusion["outcome"] == "not-enough-evidence"  # one summary-only run per arm
    assert "H200 delivers 1.07× MI300X's throughput" in conclusion["statement"]
    assert response.json()["inputs"]["baseline"] == fleet["c"].digest


def test_a_baseline_outside_the_comparison_is_a_422_at_its_pointer(api, fleet):
    response = api.post(
        "/api/v1/comparisons", {"runs": [fleet["a"].pk, fleet["b"].pk], "baseline": fleet["c"].pk}, format="json"
    )
    assert response.status_code == 422 and response["Content-Type"] == "application/problem+json"
    assert [e["pointer"] for e in response.json()["errors"]] == ["/baseline"]


def test_runs_of_one_configuration_on_differently_named_machines_are_one_arm(api, fleet, user, server_example):
    twin, _ = submission_create(document=variant(server_example, "lab-h100-07", 1255.0), submitted_by=user)
    response = api.post("/api/v1/comparisons", {"runs": [fleet["a"].pk, twin.pk, fleet["b"].pk]}, format="json")
    arms = response.json()["result"]["arms"]
    assert [a["runs"] for a in arms] == [[0, 1], [2]]


def test_an_unsteady_arm_makes_the_verdict_inconclusive_with_the_reason_first(api, user, server_example):
    runs = []
    for name, model, value in (("lab-1", "H100", 1000.0), ("lab-2", "H200", 1500.0)):
        doc = variant(server_example, name, value)
        doc["system"]["accelerators"][0]["model"] = model
        doc["conditions"]["steady_state"].update(reached=False, reasons=["block medians disagree"])
        runs.append(submission_create(document=doc, submitted_by=user)[0])
    result = api.post("/api/v1/comparisons", {"runs": [r.pk for r in runs]}, format="json").json()["result"]
    conclusion = result["conclusion"]
    assert conclusion["outcome"] == "inconclusive" and result["pairwise"][0]["verdict"] == "inconclusive"
    assert conclusion["statement"].startswith(
        f"Inconclusive: run {runs[0].pk} and run {runs[1].pk} never reached steady state. Taken at face value,"
    )
    assert (
        conclusion["reasons"][0]["message"] == f"run {runs[0].pk} (H100) never reached steady state (block "
        "medians disagree)"
    )  # the why, per run, beside the statement
    assert [(r["code"], r["run"], r["arm"]) for r in conclusion["reasons"]] == [("unsteady", 0, 0), ("unsteady", 1, 1)]


def test_the_same_request_returns_the_stored_comparison(api, fleet):
    payload = {"runs": [fleet["a"].pk, fleet["b"].pk], "axis": "system"}
    first = api.post("/api/v1/comparisons", payload, format="json")
    again = api.post("/api/v1/comparisons", payload, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["digest"] == again.json()["digest"]
    assert Comparison.objects.count() == 1


def test_a_refused_comparison_is_422_with_every_field_in_plain_words(api, fleet):
    response = api.post(
        "/api/v1/comparisons", {"runs": [fleet["a"].pk, fleet["int8"].pk, fleet["cpu"].pk]}, format="json"
    )
    assert response.status_code == 422
    assert response["Content-Type"] == "application/problem+json"
    errors = response.json()["errors"]
    words = [e["message"] for e in errors]
    assert any(w.startswith("precision.weights:") and "int8" in w and "bf16" in w for w in words)
    assert any(e["field"] == "scenario.kind" for e in errors)
    assert all(e["role"] == "controlled" and len(e["values"]) == 3 for e in errors if e["role"] != "required")
    assert Comparison.objects.count() == 0


def test_withdrawn_runs_are_refused_with_the_reason(api, fleet, user):
    submission_withdraw(submission=fleet["b"], reason="mislabelled driver", actor=user)
    response = api.post("/api/v1/comparisons", {"runs": [fleet["a"].pk, fleet["b"].pk]}, format="json")
    assert response.status_code == 422
    assert "mislabelled driver" in response.json()["errors"][0]["message"]


@pytest.mark.parametrize(
    ("payload", "pointer"),
    [
        ({"runs": [1]}, "/runs"),
        ({"runs": [1, 999999]}, "/runs/1"),  # well-formed, no such run: 422 (docs/api.md)
        ({"runs": [1, 2], "axis": "colour"}, "/axis"),
        ({"runs": [1, {"id": 2}]}, "/runs"),
        ({"runs": [1, 2], "prices": {"x": -1}}, "/prices/x"),
    ],
)
def test_bad_comparison_requests_name_the_problem(api, fleet, payload, pointer):
    payload = json.loads(json.dumps(payload).replace("1,", f"{fleet['a'].pk},").replace("[1]", f"[{fleet['a'].pk}]"))
    response = api.post("/api/v1/comparisons", payload, format="json")
    assert response.status_code == (422 if pointer == "/runs/1" else 400), response.content
    assert pointer in [e["pointer"] for e in response.json()["errors"]]


def test_the_protocol_endpoint_serves_schema_and_contract(anonymous):
    body = anonymous.get("/api/v1/protocol").json()
    assert body["protocol"] == "benchreg.submission/1.3"  # the live schema served is the newest minor
    assert body["contract"]["version"] and body["schema"]["$id"]


def test_a_repeated_request_is_a_lookup_not_a_recomputation(api, fleet, monkeypatch):
    body = {"runs": [fleet["a"].pk, fleet["b"].pk], "axis": "system", "prices": {"lab-h100-01": 3.0}}
    first = api.post("/api/v1/comparisons", body, format="json")
    assert first.status_code == 201

    def must_not_run(*args, **kwargs):
        raise AssertionError("the statistics ran again for a question already answered")

    monkeypatch.setattr("protocol.comparability.compare", must_not_run)
    again = api.post("/api/v1/comparisons", body, format="json")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    with pytest.raises(AssertionError, match="ran again"):  # a new question (other prices) does compute
        api.post("/api/v1/comparisons", {**body, "prices": {"lab-h100-01": 4.0}}, format="json")


def test_a_bug_inside_the_statistics_is_a_logged_500_not_a_400_that_blames_the_input(token, fleet, monkeypatch, caplog):
    from rest_framework.test import APIClient

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")  # what a numpy bug looks like

    monkeypatch.setattr("protocol.comparability.compare", broken)
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.post("/api/v1/comparisons", {"runs": [fleet["a"].pk, fleet["b"].pk]}, format="json")
    assert response.status_code == 500 and response["Content-Type"].startswith("application/problem+json")
    assert "broadcast" not in response.content.decode()  # no internals shown
    assert any("broadcast" in (r.exc_text or "") or "broadcast" in r.getMessage() for r in caplog.records)
    assert not Comparison.objects.exists()


def test_an_impossible_sizing_request_is_still_the_callers_400(api, fleet):
    response = api.post(
        "/api/v1/comparisons",
        {
            "runs": [fleet["a"].pk, fleet["b"].pk],
            "axis": "system",
            "sizing": {"target_load": -5, "load_unit": "requests/s"},
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "target_load" in response.json()["detail"] + json.dumps(response.json().get("errors"))


def test_a_refusal_says_the_precision_before_the_free_text_note(api, user, server_example):
    """Two runs differing in precision and in a note on how they were quantized (one states no method): the note is
    the last reason, in the API's errors and in the page's table, never the first."""
    int8 = variant(server_example, "lab-h100-11", 1600.0, **{"precision.weights": "int8"})
    int8["precision"]["quantization"] = {"method": "static", "notes": "calibrated on 512 samples of the dataset"}
    fp8 = variant(server_example, "lab-h100-12", 1700.0, **{"precision.weights": "fp8"})
    fp8["precision"]["quantization"] = {"notes": "scales from the vendor's recipe"}
    one, _ = submission_create(document=int8, submitted_by=user)
    two, _ = submission_create(document=fp8, submitted_by=user)
    said = ["precision.weights", "precision.quantization.method", "precision.quantization.notes"]
    response = api.post("/api/v1/comparisons", {"runs": [one.pk, two.pk]}, format="json")
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == said
    browser = Client()
    browser.force_login(user)  # the submitter may compare
    page = browser.post("/compare/", {"runs": f"{one.pk}, {two.pk}", "axis": "system"})
    html = page.content.decode()
    assert page.status_code == 422
    table = html.split("table--refusal", 1)[1]  # the page's own order: "not stated" late, notes last
    at = [table.index(f"<code>{field}</code>") for field in said]
    assert at == sorted(at), at
