"""Every door against every principal: each URL pattern of the API and the pages, read from the URL conf, with the
status each principal must get. A new endpoint without a rule here fails `test_every_url_pattern_has_a_rule`.

The rules below are the specification, written without registry.policy (which they check):
  read       people's and tokens' `read`                  submit   `submit` (people and agents)
  upload     `submit`; an agent to the runs it submitted only (any other: 404)
  person     a person (session or token) with `read`      admin    a person with `admin`
  planner    a person with `submit` or `admin`            agent    an enrolled agent's own token
  owner      the object's owner (with `read`) or an admin; anyone else 404, as for what does not exist
Anonymous callers get 401 from the API and a redirect to sign in from the pages; a token is no credential for a
page (pages are for people in browsers), so token callers are anonymous there. A known caller without the right
gets 403 from the API and 404 from a page (pages never reveal what exists behind a role).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver

from devtools.documents import variant
from tests.registry.authz.conftest import Knock

pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("authz-matrix")]  # the world is built once (conftest.py)

DENIED, HIDDEN, ANON_API, ANON_WEB = 403, 404, 401, 302


def walk(patterns: list[Any] | None = None, prefix: str = "") -> Iterator[tuple[str, str | None, Any]]:
    """(route, name, callback) for every URL pattern, nested includes flattened."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            yield from walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.name, entry.callback


# --- the spec: who may pass each kind of door ---------------------------------------------------------------


def _api(allowed: Callable[[Knock, dict[str, Any]], bool | int]) -> Callable[[Knock, dict[str, Any], int], int]:
    """Anonymous 401; `allowed` says yes (the endpoint's own status), no (403) or a status of its own (404)."""

    def expect(k: Knock, w: dict[str, Any], ok: int) -> int:
        if k.name == "anonymous":
            return ANON_API
        verdict = allowed(k, w)
        return ok if verdict is True else DENIED if verdict is False else int(verdict)

    return expect


def _web(allowed: Callable[[Knock, dict[str, Any]], bool | int]) -> Callable[[Knock, dict[str, Any], int], int]:
    def expect(k: Knock, w: dict[str, Any], ok: int) -> int:
        if not k.session:
            return ANON_WEB
        verdict = allowed(k, w)
        return ok if verdict is True else HIDDEN if verdict is False else int(verdict)

    return expect


def _is_admin(k: Knock, w: Any = None) -> bool:
    return k.person and "admin" in k.rights


def _own(k: Knock) -> bool:
    return k.person and k.owner and "read" in k.rights


OPEN = lambda k, w, ok: ok  # noqa: E731
READ = _api(lambda k, w: "read" in k.rights)
SUBMIT = _api(lambda k, w: "submit" in k.rights)
# uploading a run's file: `submit`; an agent only to a run it submitted (the world's `agent_run`, rig-a's)
UPLOAD = _api(lambda k, w: "submit" in k.rights and (k.agent is None or HIDDEN))
UPLOAD_RIG_A_RUN = _api(lambda k, w: "submit" in k.rights and (k.agent in (None, "rig-a") or HIDDEN))
PERSON = _api(lambda k, w: k.person and "read" in k.rights)
ADMIN = _api(_is_admin)
PLANNER = _api(lambda k, w: k.person and bool({"submit", "admin"} & k.rights))
AGENT = _api(lambda k, w: k.agent is not None)
AGENT_JOB = _api(lambda k, w: False if k.agent is None else True if k.agent == "rig-a" else HIDDEN)
OWN_REPORT = _api(lambda k, w: ("read" in k.rights) and (_is_admin(k) or _own(k) or HIDDEN))
OWN_TOKEN = _api(lambda k, w: k.person and "read" in k.rights and (k.owner or HIDDEN))
AGENT_DETAIL = _api(lambda k, w: _is_admin(k) or k.agent == "rig-a" or HIDDEN)
PLAN = _api(lambda k, w: _is_admin(k) or _own(k) or HIDDEN)
JOB = _api(lambda k, w: _is_admin(k) or _own(k) or k.agent == "rig-a" or HIDDEN)
JOB_CANCEL = _api(
    lambda k, w: (
        (not (_is_admin(k) or _own(k) or k.agent == "rig-a") and HIDDEN)
        or _is_admin(k)
        or (_own(k) and "submit" in k.rights)
    )
)
# series: a schedule is its owner's, like a plan; creating one needs a plan the caller may read
SCHEDULE_CREATE = _api(
    lambda k, w: False if not (k.person and {"submit", "admin"} & k.rights) else (_is_admin(k) or _own(k) or HIDDEN)
)
SCHEDULE_CHANGE = _api(
    lambda k, w: (not (_is_admin(k) or _own(k)) and HIDDEN) or _is_admin(k) or (_own(k) and "submit" in k.rights)
)
W_READ = _web(lambda k, w: True)
W_ADMIN = _web(_is_admin)
W_PLANNER = _web(lambda k, w: bool({"submit", "admin"} & k.rights))
W_OWN_REPORT = _web(lambda k, w: _is_admin(k) or _own(k))
W_OWN_TOKEN = _web(lambda k, w: k.owner)
W_JOB_CANCEL = _web(lambda k, w: _is_admin(k) or _own(k))
W_ADMIN_SITE = _web(lambda k, w: _is_admin(k) or 302)  # the admin's own sign-in page for everyone else


def _doc(w: dict[str, Any]) -> dict[str, Any]:
    return variant(w["document"], "lab-new-77", 1234.5)


# name -> [(method, path builder, body builder or None, expectation, the allowed callers' status)]
Case = tuple[str, Callable[[dict[str, Any]], str], Callable[[dict[str, Any]], Any] | None, Any, int]
RULES: dict[str, list[Case]] = {
    # --- API ---
    "api-submissions": [
        ("get", lambda w: "/api/v1/submissions", None, READ, 200),
        ("post", lambda w: "/api/v1/submissions", _doc, SUBMIT, 201),
    ],
    "api-submission-detail": [("get", lambda w: f"/api/v1/submissions/{w['run'].pk}", None, READ, 200)],
    "api-submission-document": [("get", lambda w: f"/api/v1/submissions/{w['run'].pk}/document", None, READ, 200)],
    "api-submission-withdraw": [
        (
            "post",
            lambda w: f"/api/v1/submissions/{w['run'].pk}/withdraw",
            lambda w: {"reason": "driver bug"},
            ADMIN,
            200,
        )
    ],
    # the runs name no artifact: 409 for who may upload proves the door opened, 404 for who may read; an agent
    # uploads to the runs it submitted only (another's run is hidden from it, as one that does not exist)
    "api-submission-artifact": [
        ("put", lambda w: f"/api/v1/submissions/{w['run'].pk}/artifacts/{'0' * 64}", lambda w: {"x": 1}, UPLOAD, 409),
        ("put", lambda w: f"/api/v1/submissions/{w['agent_run'].pk}/artifacts/{'0' * 64}", None, UPLOAD_RIG_A_RUN, 409),
        ("get", lambda w: f"/api/v1/submissions/{w['run'].pk}/artifacts/{'0' * 64}", None, READ, 404),
    ],
    "api-submission-comparable": [("get", lambda w: f"/api/v1/submissions/{w['run'].pk}/comparable", None, READ, 200)],
    "api-submission-sizes": [("get", lambda w: f"/api/v1/submissions/{w['run'].pk}/sizes", None, READ, 200)],
    "api-comparisons": [
        ("get", lambda w: "/api/v1/comparisons", None, READ, 200),
        (
            "post",
            lambda w: "/api/v1/comparisons",
            lambda w: {"runs": [r.pk for r in w["runs"]], "axis": "system"},
            READ,
            200,
        ),
    ],  # exists
    "api-comparison-detail": [("get", lambda w: f"/api/v1/comparisons/{w['comparison'].pk}", None, READ, 200)],
    # a body without a title: 400 proves the door opened, without rendering a PDF per principal
    "api-reports": [("post", lambda w: "/api/v1/reports", lambda w: {"comparison": w["comparison"].pk}, READ, 400)],
    "api-report-verify": [("post", lambda w: "/api/v1/reports/verify", lambda w: {}, OPEN, 400)],
    "api-report-certificate": [("get", lambda w: "/api/v1/reports/certificate", None, OPEN, 200)],
    "api-report-detail": [("get", lambda w: f"/api/v1/reports/{w['report'].pk}", None, OWN_REPORT, 200)],
    "api-report-pdf": [("get", lambda w: f"/api/v1/reports/{w['report'].pk}/pdf", None, OWN_REPORT, 409)],
    "api-tokens": [
        ("get", lambda w: "/api/v1/tokens", None, PERSON, 200),
        ("post", lambda w: "/api/v1/tokens", lambda w: {"name": "n", "scopes": ["read"]}, PERSON, 201),
    ],
    "api-token-revoke": [("delete", lambda w: f"/api/v1/tokens/{w['token'].pk}", None, OWN_TOKEN, 200)],
    "api-protocol": [("get", lambda w: "/api/v1/protocol", None, OPEN, 200)],
    "api-audit-checkpoint": [("get", lambda w: "/api/v1/audit/checkpoint", None, OPEN, 200)],
    "api-audit-public-key": [("get", lambda w: "/api/v1/audit/public-key", None, OPEN, 200)],
    "api-audit-inclusion": [("get", lambda w: "/api/v1/audit/inclusion", None, OPEN, 400)],
    "api-audit-consistency": [("get", lambda w: "/api/v1/audit/consistency", None, OPEN, 400)],
    # --- the audit log is public ---
    "api-audit-entries": [("get", lambda w: "/api/v1/audit/entries", None, OPEN, 200)],
    "api-audit-log-checkpoint": [("get", lambda w: "/api/v1/audit/log/checkpoint", None, OPEN, 200)],
    "api-audit-log-tile": [("get", lambda w: "/api/v1/audit/log/tile/0/000", None, OPEN, 404)],  # < 256 entries
    "api-audit-log-tile-partial": [("get", lambda w: "/api/v1/audit/log/tile/0/000.p/1", None, OPEN, 200)],
    "api-audit-log-entries": [("get", lambda w: "/api/v1/audit/log/tile/entries/000", None, OPEN, 404)],
    "api-audit-log-entries-partial": [("get", lambda w: "/api/v1/audit/log/tile/entries/000.p/1", None, OPEN, 200)],
    "api-enrolment-tokens": [
        ("get", lambda w: "/api/v1/enrolment-tokens", None, ADMIN, 200),
        ("post", lambda w: "/api/v1/enrolment-tokens", lambda w: {"note": "n"}, ADMIN, 201),
    ],
    "api-agents": [("get", lambda w: "/api/v1/agents", None, PLANNER, 200)],
    "api-agent-enroll": [
        ("post", lambda w: "/api/v1/agents/enroll", lambda w: {"token": "bre_no", "name": "x"}, OPEN, 403)
    ],
    "api-agent-me": [("get", lambda w: "/api/v1/agents/me", None, AGENT, 200)],
    "api-agent-heartbeat": [("post", lambda w: "/api/v1/agents/heartbeat", lambda w: {}, AGENT, 200)],
    "api-agent-detail": [("get", lambda w: f"/api/v1/agents/{w['agent'].pk}", None, AGENT_DETAIL, 200)],
    "api-agent-revoke": [("post", lambda w: f"/api/v1/agents/{w['agent'].pk}/revoke", None, ADMIN, 200)],
    "api-plans": [
        (
            "post",
            lambda w: "/api/v1/plans",
            lambda w: {
                "agents": ["rig-a"],
                "runner": "inference",
                "workload": "mlp-classifier",
                "precisions": ["fp32"],
            },
            PLANNER,
            201,
        )
    ],
    "api-plan-groups": [
        (
            "post",
            lambda w: "/api/v1/plans/groups",
            lambda w: {"agents": ["rig-a", "rig-b"], "runner": "collectives", "spec": {"collective": "all_reduce"}},
            PLANNER,
            201,
        )
    ],
    "api-plan-detail": [("get", lambda w: f"/api/v1/plans/{w['plan'].pk}", None, PLAN, 200)],
    "api-jobs": [("get", lambda w: "/api/v1/jobs", None, PLANNER, 200)],
    "api-job-detail": [("get", lambda w: f"/api/v1/jobs/{w['job'].pk}", None, JOB, 200)],
    "api-job-cancel": [("post", lambda w: f"/api/v1/jobs/{w['job'].pk}/cancel", None, JOB_CANCEL, 200)],
    "api-job-claim": [
        (
            "post",
            lambda w: f"/api/v1/jobs/{w['job'].pk}/claim",
            lambda w: {"claimant": "w1", "lease_seconds": 60},
            AGENT_JOB,
            200,
        )
    ],
    "api-job-start": [
        ("post", lambda w: f"/api/v1/jobs/{w['job'].pk}/start", lambda w: {"claimant": "w1"}, AGENT_JOB, 409)
    ],
    "api-job-heartbeat": [
        (
            "post",
            lambda w: f"/api/v1/jobs/{w['job'].pk}/heartbeat",
            lambda w: {"claimant": "w1", "lease_seconds": 60},
            AGENT_JOB,
            409,
        )
    ],
    "api-job-arrive": [
        (
            "post",
            lambda w: f"/api/v1/jobs/{w['job'].pk}/arrive",
            lambda w: {"claimant": "w1", "lease_seconds": 60},
            AGENT_JOB,
            409,  # the world's job is not in a group
        )
    ],
    "api-job-group": [("get", lambda w: f"/api/v1/jobs/{w['job'].pk}/group", None, AGENT_JOB, 409)],
    "api-job-complete": [("post", lambda w: f"/api/v1/jobs/{w['job'].pk}/complete", lambda w: {}, AGENT_JOB, 409)],
    "api-job-fail": [
        (
            "post",
            lambda w: f"/api/v1/jobs/{w['job'].pk}/fail",
            lambda w: {"claimant": "w1", "error": "boom"},
            AGENT_JOB,
            409,
        )
    ],
    "api-schema": [("get", lambda w: "/api/schema/", None, OPEN, 200)],
    "api-docs": [("get", lambda w: "/api/docs/", None, OPEN, 200)],
    # series
    "api-schedules": [
        ("get", lambda w: "/api/v1/schedules", None, PLANNER, 200),
        (
            "post",
            lambda w: "/api/v1/schedules",
            lambda w: {"plan": w["plan"].pk, "cron": "0 2 * * *", "agents": ["rig-a"]},
            SCHEDULE_CREATE,
            201,
        ),
    ],
    "api-schedule-detail": [
        ("get", lambda w: f"/api/v1/schedules/{w['schedule'].pk}", None, PLAN, 200),
        ("patch", lambda w: f"/api/v1/schedules/{w['schedule'].pk}", lambda w: {"paused": True}, SCHEDULE_CHANGE, 200),
        ("delete", lambda w: f"/api/v1/schedules/{w['schedule'].pk}", None, SCHEDULE_CHANGE, 200),
    ],
    "api-series": [("get", lambda w: "/api/v1/series", None, READ, 200)],
    "api-series-detail": [("get", lambda w: f"/api/v1/series/{w['series'].pk}", None, READ, 200)],
    "api-alerts": [("get", lambda w: "/api/v1/alerts", None, READ, 200)],
    "api-alert-detail": [("get", lambda w: f"/api/v1/alerts/{w['alert'].pk}", None, READ, 200)],
    "api-submission-history": [("get", lambda w: f"/api/v1/submissions/{w['run'].pk}/history", None, READ, 200)],
    # --- decisions: an empty body is 400, which proves the door opened ---
    "api-decisions": [
        ("get", lambda w: "/api/v1/decisions", None, READ, 200),
        ("post", lambda w: "/api/v1/decisions", lambda w: {}, PERSON, 400),
    ],
    "api-decision-detail": [("get", lambda w: f"/api/v1/decisions/{w['decision'].pk}", None, OWN_REPORT, 200)],
    # the world's decision has no answer: 422 (no cited runs) from the service proves the door opened
    "api-decision-reports": [
        ("post", lambda w: f"/api/v1/decisions/{w['decision'].pk}/reports", lambda w: {}, OWN_REPORT, 422)
    ],
    # a planner who may read the decision; an empty body is 400 (a planner who may not read it: 404)
    "api-decision-plans": [
        (
            "post",
            lambda w: f"/api/v1/decisions/{w['decision'].pk}/plans",
            lambda w: {},
            _api(
                lambda k, w: (
                    k.person
                    and bool({"submit", "admin"} & k.rights)
                    and (("read" in k.rights and _is_admin(k)) or _own(k) or HIDDEN)
                )
            ),
            400,
        )
    ],
    "api-decision-export": [("get", lambda w: f"/api/v1/decisions/{w['decision'].pk}/export", None, OWN_REPORT, 200)],
    "decisions": [
        ("get", lambda w: "/decisions/", None, W_READ, 200),
        ("post", lambda w: "/decisions/", lambda w: {}, W_READ, 400),
    ],
    "decision": [("get", lambda w: f"/decisions/{w['decision'].pk}/", None, W_OWN_REPORT, 200)],
    # the world's decision has no answer: the refusal comes back as a message on the decision page (302)
    "decision-report": [("post", lambda w: f"/decisions/{w['decision'].pk}/report", lambda w: {}, W_OWN_REPORT, 302)],
    # who may read the decision and plan runs; an empty form is 400 (may read it but not plan: 403)
    "decision-plan": [
        (
            "post",
            lambda w: f"/decisions/{w['decision'].pk}/plan",
            lambda w: {},
            _web(
                lambda k, w: HIDDEN if not (_is_admin(k) or _own(k)) else (bool({"submit", "admin"} & k.rights) or 403)
            ),
            400,
        )
    ],
    # --- pages ---
    "login": [("get", lambda w: "/accounts/login/", None, OPEN, 200)],
    "logout": [("post", lambda w: "/accounts/logout/", lambda w: {}, OPEN, 200)],
    "home": [("get", lambda w: "/", None, W_READ, 200)],
    # --- catalogue ---
    "matrix": [("get", lambda w: "/matrix/", None, W_READ, 200)],
    "run": [("get", lambda w: f"/runs/{w['run'].pk}/", None, W_READ, 200)],
    "sweep-compare": [("get", lambda w: "/sweeps/compare/", None, W_READ, 200)],
    # the world has no scaling plan: a reader's door opens onto 404 (no stored run names it); that a reader sees a
    # stored plan is tests/registry/web/test_scaling.py's
    "scaling": [("get", lambda w: "/scaling/no-such-plan/", None, W_READ, 404)],
    "run-withdraw": [("post", lambda w: f"/runs/{w['run'].pk}/withdraw", lambda w: {"reason": "r"}, W_ADMIN, 302)],
    "compare": [
        ("get", lambda w: "/compare/", None, W_READ, 200),
        ("post", lambda w: "/compare/", lambda w: {"run": [r.pk for r in w["runs"]], "axis": "system"}, W_READ, 302),
    ],
    "comparison": [("get", lambda w: f"/comparisons/{w['comparison'].pk}/", None, W_READ, 200)],
    "comparison-chart": [
        ("get", lambda w: f"/comparisons/{w['comparison'].pk}/charts/headline.svg", None, W_READ, 200)
    ],
    "report-create": [
        ("post", lambda w: f"/comparisons/{w['comparison'].pk}/reports", lambda w: {"title": "t"}, W_READ, 400)
    ],
    "report-status": [("get", lambda w: f"/reports/{w['report'].pk}/status", None, W_OWN_REPORT, 200)],
    # not rendered yet: 404 for everyone; who may fetch a ready PDF is checked in test_holes
    "report-pdf": [("get", lambda w: f"/reports/{w['report'].pk}/pdf", None, W_OWN_REPORT, 404)],
    "agents": [("get", lambda w: "/agents/", None, W_PLANNER, 200)],
    "jobs": [("get", lambda w: "/jobs/", None, W_PLANNER, 200)],
    "job-cancel": [("post", lambda w: f"/jobs/{w['job'].pk}/cancel", lambda w: {}, W_JOB_CANCEL, 302)],
    "run-history": [("get", lambda w: f"/runs/{w['run'].pk}/history/", None, W_READ, 200)],  # series
    "run-sizes": [("get", lambda w: f"/runs/{w['run'].pk}/sizes/", None, W_READ, 200)],
    "alerts": [("get", lambda w: "/alerts/", None, W_READ, 200)],  # series
    "tokens": [
        ("get", lambda w: "/tokens/", None, W_READ, 200),
        ("post", lambda w: "/tokens/", lambda w: {"name": "n", "scopes": ["read"]}, W_READ, 200),
    ],
    "token-revoke": [("post", lambda w: f"/tokens/{w['token'].pk}/revoke", lambda w: {}, W_OWN_TOKEN, 302)],
    # --- the audit log's pages: public, like its API (policy.AUDIT_PUBLIC), signed in or not ---
    "audit": [("get", lambda w: "/audit/", None, OPEN, 200)],
    "audit-run": [("get", lambda w: f"/audit/runs/{w['run'].pk}/", None, OPEN, 200)],
    "audit-run-proofs": [("get", lambda w: f"/audit/runs/{w['run'].pk}/proofs.json", None, OPEN, 200)],
}
RULES.update(
    {  # --- operations: probes open to anyone, credentials or not ---
        "healthz": [("get", lambda w: "/healthz", None, OPEN, 200)],
        "readyz": [("get", lambda w: "/readyz", None, OPEN, 200)],
    }
)
ADMIN_SITE_PATHS = ["/admin/", "/admin/registry/job/", "/admin/registry/agent/", "/admin/registry/apitoken/"]


def test_every_url_pattern_has_a_rule() -> None:
    """A door without a rule is a door nobody decided about."""
    from rest_framework.views import APIView

    unruled, unmethoded = [], []
    for route, name, callback in walk():
        if route.startswith("admin/"):
            continue  # the admin site is one door: ADMIN_SITE_PATHS
        if name not in RULES:
            unruled.append(f"{route} ({name})")
            continue
        view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
        if isinstance(view, type) and issubclass(view, APIView) and name not in ("api-schema", "api-docs"):
            implemented = {m for m in ("get", "post", "put", "patch", "delete") if hasattr(view, m)}
            ruled = {case[0] for case in RULES[name]}
            unmethoded += [f"{route} {m.upper()}" for m in implemented - ruled]
    assert not unruled, f"URL patterns with no rule in RULES: {unruled}"
    assert not unmethoded, f"methods with no rule: {unmethoded}"
    names = {name for _, name, _ in walk()}
    assert not set(RULES) - names, f"rules for URL names that no longer exist: {set(RULES) - names}"


def _call(client: Any, method: str, path: str, body: Any, api: bool) -> Any:
    if body is None:
        return getattr(client, method)(path)
    if api and path.endswith("/reports/verify"):
        return client.post(path, body)  # multipart
    return getattr(client, method)(path, body, format="json") if api else getattr(client, method)(path, body)


@pytest.mark.parametrize("name", sorted(RULES))
def test_each_door_answers_each_principal_as_the_policy_says(world: dict[str, Any], name: str) -> None:
    wrong = []
    for method, path_of, body_of, expect, ok in RULES[name]:
        path = path_of(world)
        api = path.startswith("/api/")
        for knock in world["knocks"]:
            with transaction.atomic():  # every principal meets the same untouched world
                client = knock.api if api else knock.web
                response = _call(client, method, path, body_of(world) if body_of else None, api)
                transaction.set_rollback(True)
            wanted = expect(knock, world, ok)
            if response.status_code != wanted:
                wrong.append(f"{method.upper()} {path} as {knock.name}: {response.status_code}, expected {wanted}")
            elif api and response.status_code >= 400 and response.status_code != 409:
                assert response["Content-Type"] == "application/problem+json", (path, knock.name)
    assert not wrong, "\n".join(wrong)


def test_the_admin_site_is_for_admins_signed_in_only(world: dict[str, Any]) -> None:
    wrong = []
    for path in ADMIN_SITE_PATHS:
        for knock in world["knocks"]:
            status = knock.web.get(path).status_code
            wanted = W_ADMIN_SITE(knock, world, 200)
            if status != wanted:
                wrong.append(f"GET {path} as {knock.name}: {status}, expected {wanted}")
    assert not wrong, "\n".join(wrong)


def test_the_pages_and_the_api_agree_on_who_sees_each_object(world: dict[str, Any]) -> None:
    """For every object type, a signed-in person sees it on a page exactly when the API shows it to them."""
    pairs = {
        "run": (f"/runs/{world['run'].pk}/", f"/api/v1/submissions/{world['run'].pk}"),
        "comparison": (f"/comparisons/{world['comparison'].pk}/", f"/api/v1/comparisons/{world['comparison'].pk}"),
        "report": (f"/reports/{world['report'].pk}/status", f"/api/v1/reports/{world['report'].pk}"),
        "agents": ("/agents/", "/api/v1/agents"),
        "jobs": ("/jobs/", "/api/v1/jobs"),
        "tokens": ("/tokens/", "/api/v1/tokens"),
        "audit log": ("/audit/", "/api/v1/audit/entries"),
        "a run's audit proofs": (f"/audit/runs/{world['run'].pk}/", "/api/v1/audit/inclusion?entry=0"),
    }
    for knock in (k for k in world["knocks"] if k.session):
        for what, (page, endpoint) in pairs.items():
            on_page = knock.web.get(page).status_code == 200
            by_api = knock.api.get(endpoint).status_code == 200
            assert on_page == by_api, f"{what} for {knock.name}: page {on_page}, API {by_api}"
        jobs_page = knock.web.get("/jobs/").content.decode()
        api_jobs = knock.api.get("/api/v1/jobs")
        listed = {j["id"] for j in api_jobs.json()["results"]} if api_jobs.status_code == 200 else set()
        assert (f"#{world['job'].pk}<" in jobs_page) == (world["job"].pk in listed), knock.name
