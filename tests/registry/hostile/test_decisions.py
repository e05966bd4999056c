"""Hostile probes on decisions: a submission's cost does not grow with other people's decisions, decisions per
person are bounded, and extreme numbers (a run's throughput of 1e308, demand or headroom of 1e308, sizing targets
of 1e308/-1/"x", prices of 1e308) get a clear refusal or a stated exclusion, never a 500."""

from __future__ import annotations

import math
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from protocol import decisions as dec
from protocol import sizing
from registry.models import Decision, Submission
from tests.registry.hostile.evidence import QUESTION, server_run
from tests.registry.hostile.people import person, signed_in


def _submit(client: APIClient, doc: dict[str, Any]) -> int:
    response = client.post("/api/v1/submissions", doc, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/problem+json"), response["Content-Type"]
    return dict(response.json())


# ------------------------------------------------------------------------------ flagging costs the submitter O(1)


@pytest.mark.django_db
def test_a_submission_runs_the_same_queries_with_0_or_30_decisions_on_its_question(settings: Any) -> None:
    settings.BENCHREG_MAX_DECISIONS_PER_USER = 100
    submitter, viewer = person(), person("viewer")
    client = signed_in(submitter)
    for i in range(3):
        _submit(client, server_run(f"h{i}", 1000.0 + i))

    def queries(system: str) -> int:
        with CaptureQueriesContext(connection) as seen:
            _submit(client, server_run(system, 1100.0))
        return len(seen.captured_queries)

    before = queries("first")
    Decision.objects.update(stale_since=None)
    reader = signed_in(viewer)
    for i in range(30):
        assert (
            reader.post("/api/v1/decisions", {"title": f"d{i}", "question": QUESTION}, format="json").status_code == 201
        )
    after = queries("second")
    assert after == before, (before, after)
    assert Decision.objects.filter(stale_since__isnull=False).count() == 30
    # a further run while they are still stale does not touch them again (no row locks between submitters)
    with CaptureQueriesContext(connection) as seen:
        _submit(client, server_run("third", 1100.0))
    updates = [q["sql"] for q in seen.captured_queries if "registry_decision" in q["sql"] and "UPDATE" in q["sql"]]
    assert len(updates) == 1


@pytest.mark.django_db
def test_a_stale_decision_says_so_and_a_reader_recomputes_it() -> None:
    user = person()
    client = signed_in(user)
    for i in range(3):
        _submit(client, server_run(f"h{i}", 1000.0))
    decision_id = client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json").json()["id"]
    new = _submit(client, server_run("h3", 1000.0))  # in the test's transaction: the after-commit task never runs
    listed = client.get("/api/v1/decisions").json()["results"][0]
    assert listed["stale_since"] is not None and listed["status"] == "current"
    body = client.get(f"/api/v1/decisions/{decision_id}").json()  # the read recomputes
    assert body["stale_since"] is None and body["status"] == "evidence-changed"
    assert body["change"]["reason"] == f"new evidence: run {new} enters the question"


@pytest.mark.django_db
def test_the_task_after_commit_recomputes_without_a_reader(django_capture_on_commit_callbacks: Any) -> None:
    user = person()
    client = signed_in(user)
    for i in range(3):
        _submit(client, server_run(f"h{i}", 1000.0))
    decision_id = client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        _submit(client, server_run("h3", 1000.0))
    assert len(callbacks) >= 1
    decision = Decision.objects.get(pk=decision_id)
    assert decision.stale_since is None and decision.status == "evidence-changed"
    with django_capture_on_commit_callbacks(execute=True):  # a run of another scenario enters nothing
        offline = {"scenario": {**server_run("x", 1.0)["scenario"], "kind": "offline"}}
        _submit(client, server_run("h4", 1000.0) | offline)
    assert Decision.objects.get(pk=decision_id).change["runs"][0]["id"] != 0


@pytest.mark.django_db
def test_a_recompute_that_fails_is_recorded_on_the_decision_never_raised(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    user = person()
    client = signed_in(user)
    for i in range(3):
        _submit(client, server_run(f"h{i}", 1000.0))
    decision_id = client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json").json()["id"]

    def broken(*args: Any, **kwargs: Any) -> Any:  # a fault injected into the computation: a bug, not input
        raise ZeroDivisionError("injected")

    monkeypatch.setattr(dec, "answer", broken)
    with django_capture_on_commit_callbacks(execute=True):
        run = client.post("/api/v1/submissions", server_run("h3", 1000.0), format="json")
    assert run.status_code == 201
    decision = Decision.objects.get(pk=decision_id)
    assert decision.stale_since is not None and "ZeroDivisionError" in decision.recompute_error
    assert "injected" not in decision.recompute_error  # internals stay in the log
    body = client.get(f"/api/v1/decisions/{decision_id}")
    assert body.status_code == 200 and body.json()["recompute_error"]
    page = APIClient(SERVER_NAME="localhost")
    page.force_login(user)
    html = page.get(f"/decisions/{decision_id}/")
    assert html.status_code == 200 and "could not be recomputed" in html.content.decode()
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):  # the next run on the question tries again
        _submit(client, server_run("h4", 1000.0))
    decision.refresh_from_db()
    assert decision.recompute_error == "" and decision.status == "evidence-changed"


@pytest.mark.django_db
def test_decisions_per_person_are_bounded(settings: Any) -> None:
    settings.BENCHREG_MAX_DECISIONS_PER_USER = 2
    viewer = person("viewer")
    client = signed_in(viewer)
    for i in range(2):
        assert (
            client.post("/api/v1/decisions", {"title": f"d{i}", "question": QUESTION}, format="json").status_code == 201
        )
    body = _problem(client.post("/api/v1/decisions", {"title": "d3", "question": QUESTION}, format="json"), 409)
    assert "BENCHREG_MAX_DECISIONS_PER_USER" in body["detail"] and Decision.objects.count() == 2
    page = APIClient(SERVER_NAME="localhost")
    page.force_login(viewer)
    form = page.post(
        "/decisions/",
        {
            "title": "d3",
            "workload": "decoder-small",
            "scenario": "server",
            "demand": "20000",
            "demand_unit": "tokens/s",
        },
    )
    assert form.status_code == 400 and "most one person may keep" in form.content.decode()
    assert (
        signed_in(person("viewer"))
        .post("/api/v1/decisions", {"title": "other", "question": QUESTION}, format="json")
        .status_code
        == 201
    )


# ------------------------------------------------------------------------------ extreme numbers


@pytest.mark.django_db
def test_a_run_with_throughput_1e308_is_left_out_with_its_reason_and_breaks_nothing(
    django_capture_on_commit_callbacks: Any,
) -> None:
    user = person()
    client = signed_in(user)
    for i in range(3):
        _submit(client, server_run(f"h{i}", 1000.0))
    created = client.post("/api/v1/decisions", {"title": "t", "question": QUESTION}, format="json")
    assert created.status_code == 201
    with django_capture_on_commit_callbacks(execute=True):
        huge = _submit(client, server_run("huge", 1e308))
    body = client.get(f"/api/v1/decisions/{created.json()['id']}").json()
    assert body["recompute_error"] == ""
    again = client.post("/api/v1/decisions", {"title": "u", "question": QUESTION}, format="json")
    assert again.status_code == 201, again.content
    left = {x["run"]["id"]: x["reason"] for x in again.json()["answer"]["left_out"]}
    assert "outside the plausible range" in left[huge]
    assert client.get(f"/api/v1/decisions/{again.json()['id']}/export").status_code == 200
    page = APIClient(SERVER_NAME="localhost")
    page.force_login(user)
    assert page.get(f"/decisions/{again.json()['id']}/").status_code == 200
    report = client.post(f"/api/v1/decisions/{again.json()['id']}/reports")
    assert report.status_code == 202, report.content


@pytest.mark.django_db
def test_a_configurations_history_with_runs_of_1e308_still_answers() -> None:
    """Runs of one configuration at 1300, then 1e308, the largest double and 1e300: its history (every run of it,
    the old ones included) answered 500 from an overflowing ratio. Now each such verdict says why it has none."""
    user = person()
    client = signed_in(user)
    values = [1300.0, 1310.0, 1320.0, 1e308, 1.7976931348623157e308, 1e300, 5e-324, 1305.0]
    ids = [_submit(client, server_run("same-rig", v)) for v in values]
    page = APIClient(SERVER_NAME="localhost")
    page.force_login(user)
    for run in (ids[0], ids[-1]):
        answer = client.get(f"/api/v1/submissions/{run}/history")
        assert answer.status_code == 200, answer.content[:300]
        assert page.get(f"/runs/{run}/history/").status_code == 200
    assert [p["run"] for p in answer.json()["points"]] == ids


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "pointer"),
    [
        ("demand", {"value": 1e308, "unit": "tokens/s"}, "/question/demand/value"),
        ("headroom", 1e308, "/question/headroom"),
        ("headroom", -1, "/question/headroom"),
        ("prices", {"system_hour": {"*": 1e308}}, "/question/prices/system_hour/*"),
        ("prices", {"energy_per_kwh": 1e308}, "/question/prices/energy_per_kwh"),
        (
            "prices",
            {"purchase": {"1x H100": {"price": 1e308, "lifetime_hours": 1}}},
            "/question/prices/purchase/1x H100",
        ),
        ("objectives", [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 1e308}], "/question/objectives/0"),
        ("objectives", [{"metric": "ttft_ms", "percentile": "p99", "max_ms": "x"}], "/question/objectives/0"),
    ],
)
def test_an_extreme_question_is_refused_naming_the_field(field: str, value: Any, pointer: str) -> None:
    client = signed_in(person("viewer"))
    response = client.post("/api/v1/decisions", {"title": "t", "question": {**QUESTION, field: value}}, format="json")
    body = _problem(response, 422)
    assert body["errors"][0]["pointer"] == pointer and Decision.objects.count() == 0


@pytest.mark.django_db
def test_the_decision_form_states_and_enforces_the_ranges() -> None:
    page = APIClient(SERVER_NAME="localhost")
    page.force_login(person("viewer"))
    response = page.post(
        "/decisions/",
        {
            "title": "t",
            "workload": "decoder-small",
            "scenario": "server",
            "demand": "1e308",
            "demand_unit": "tokens/s",
            "headroom": "1e308",
            "price_per_system_hour": "1e308",
            "energy_per_kwh": "1e308",
        },
    )
    html = response.content.decode()
    assert response.status_code == 400 and Decision.objects.count() == 0
    assert html.count("less than or equal to") >= 4, html


@pytest.mark.django_db
@pytest.mark.parametrize("target", [1e308, -1, "x", None, True])
def test_an_extreme_sizing_target_is_a_problem_not_a_500(target: Any) -> None:
    user = person()
    client = signed_in(user)
    ids = [_submit(client, server_run(f"s{i}", 1000.0 + 100 * i)) for i in range(2)]
    response = client.post(
        "/api/v1/comparisons",
        {"runs": ids, "axis": "system", "sizing": {"target_load": target, "load_unit": "tokens/s"}},
        format="json",
    )
    body = _problem(response, 400)
    assert "target_load" in body["detail"]


@pytest.mark.django_db
def test_a_sizing_headroom_of_1e308_is_refused() -> None:
    client = signed_in(person())
    ids = [_submit(client, server_run(f"s{i}", 1000.0 + 100 * i)) for i in range(2)]
    response = client.post(
        "/api/v1/comparisons",
        {"runs": ids, "axis": "system", "sizing": {"target_load": 10, "load_unit": "tokens/s", "headroom": 1e308}},
        format="json",
    )
    assert "headroom" in _problem(response, 400)["detail"]


@pytest.mark.django_db
def test_a_report_price_of_1e308_is_refused_by_the_api_and_the_form() -> None:
    from registry.services.comparisons import comparison_create
    from registry.web.forms import ReportRequestForm

    user = person()
    client = signed_in(user)
    ids = [_submit(client, server_run(f"s{i}", 1000.0 + 100 * i)) for i in range(2)]
    comparison, _ = comparison_create(runs=list(Submission.objects.filter(pk__in=ids)), axis="system", created_by=user)
    body = _problem(
        client.post(
            "/api/v1/reports",
            {"comparison": comparison.pk, "title": "t", "decision": "d", "prices": {"s0": 1e308}},
            format="json",
        ),
        400,
    )
    assert "s0" in str(body)
    form = ReportRequestForm({"title": "t", "decision": "d", "prices": "s0 = 1e308\ns1 = inf"})
    assert not form.is_valid() and "Line 1" in str(form.errors["prices"])
    assert not ReportRequestForm({"title": "t", "decision": "d", "prices": "s1 = nan"}).is_valid()


@pytest.mark.django_db
def test_a_priced_comparison_with_an_implausible_price_states_why_there_is_no_cost() -> None:
    from registry.services.comparisons import comparison_create

    user = person()
    client = signed_in(user)
    runs = list(
        Submission.objects.filter(
            pk__in=[_submit(client, server_run(f"s{i}", 1e-300 if i else 1000.0)) for i in range(2)]
        )
    )
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, prices={"s0": 3.0, "s1": 3.0})
    costs = [d for arm in comparison.result["arms"] for d in arm["derived"] if d["name"].startswith("cost")]
    assert costs[0]["runs_used"] == 1, costs  # the run whose rate is implausible gives no cost; the other does
    alone = sizing.arm_derived([server_run("s1", 1e-300)], {"s1": 3.0}, "USD")[1]
    assert alone["value"] is None and "plausible range" in (alone["reason"] or "")
    cost = sizing.cost_per_million_outputs(server_run("s0", 1000.0), 1e308, "USD")
    assert cost.value is None and "plausible range" in (cost.reason or "")


# ------------------------------------------------------------------------------ the protocol's arithmetic


def test_systems_needed_refuses_an_implausible_count_instead_of_overflowing() -> None:
    tiny = dec.Interval(5e-324, 5e-324, 5e-324)
    out = dec.systems_needed(1e12, 100.0, tiny)
    assert out["value"] is None and "not a plausible deployment" in out["reason"]
    assert dec.systems_needed(20000, 0.2, dec.Interval(1000.0, 900.0, 1100.0))["value"] == 24


def test_an_interval_over_values_too_far_apart_says_so() -> None:
    out = dec.interval([1e-300, 1e300, 1.0])
    assert out.low is None and "orders of magnitude" in (out.evidence or "")
    assert all(v is None or math.isfinite(v) for v in out.as_dict().values() if isinstance(v, float))


def test_sizing_numbers_are_checked_for_type_and_range() -> None:
    doc = server_run("a", 1000.0)
    for bad in (1e308, -1, "x", float("nan"), True):
        with pytest.raises(sizing.SizingError, match="target_load"):
            sizing.arm_sizing([doc], {"target_load": bad, "load_unit": "tokens/s"})
    with pytest.raises(sizing.SizingError, match="max_ms"):
        sizing.LatencyObjective.from_dict({"metric": "ttft_ms", "max_ms": "x"})
    tiny = server_run("b", 1e-300)
    assert sizing.replicas_needed(tiny, 1e12, "tokens/s").reason.startswith("its measured rate")
