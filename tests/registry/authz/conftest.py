"""A small registry with one of everything, and every kind of principal that may knock on its doors.

Principals: anonymous; a viewer, a submitter, another submitter and an admin, each signed in with a session and
(where it differs) through a token of each scope; two enrolled agents. The submitter owns the run, the comparison,
the report, the plan and its job (on agent `rig-a`) and one token; agent `rig-a` submitted one run of its own.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.db import transaction
from django.db.models import Model
from django.test import Client, override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from devtools.documents import variant
from registry.models import AuditHead, Job, Plan, Report
from registry.services.agents import agent_enroll, enrolment_token_create
from registry.services.comparisons import comparison_create
from registry.services.submissions import submission_create
from registry.services.tokens import token_create
from tests.conftest import load_example


@dataclass
class Knock:
    """One principal: how it calls the API and the pages, and what the spec says it holds."""

    name: str
    api: APIClient
    web: Client
    rights: frozenset[str]
    person: bool = True
    session: bool = False
    owner: bool = False  # the submitter who owns the world's objects
    agent: str | None = None
    user: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def _session(user: Any) -> tuple[APIClient, Client]:
    api, web = APIClient(), Client()
    api.force_login(user)
    web.force_login(user)
    return api, web


def _token(plain: str) -> tuple[APIClient, Client]:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {plain}")
    return api, Client(HTTP_AUTHORIZATION=f"Token {plain}")  # pages take no tokens: anonymous there


def _member(name: str, role: str) -> Any:
    user = get_user_model().objects.create_user(name, password="pw-for-tests-only")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def build_world_rows() -> dict[str, Any]:
    """The world's rows, made in the current transaction (world_rows keeps them for a module; a module whose tests
    count what is stored makes them per test instead)."""
    cache.clear()
    AuditHead.objects.get_or_create(id=1)  # as tests/registry/conftest.py makes them before each test
    for role in ("viewer", "submitter", "admin"):
        Group.objects.get_or_create(name=role)
    with override_settings(BENCHREG_AUDIT_SEQUENCING="inline"):  # nothing commits to number entries after
        return _make_rows(load_example("inference-server-h100-bf16"))


@pytest.fixture(scope="module")
def world_rows(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """The world's rows, made once per test module inside a transaction that stays open until the module ends.

    Each test's own transaction (the `db` fixture) is then a savepoint inside it, so whatever a test changes is
    rolled back to these rows, as when each test made its own world (the pattern of Django's setUpTestData); the
    module's transaction is rolled back at its end. Nothing here commits, so the rows are seen only on this
    connection: a test of the world that needs a second connection (live_server, transaction=True) cannot use it.
    """
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            rows = build_world_rows()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    try:
        yield rows
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def _make_rows(document: dict[str, Any]) -> dict[str, Any]:
    viewer = _member("vera-viewer", "viewer")
    submitter = _member("sam-submitter", "submitter")
    other = _member("otto-other", "submitter")
    admin = _member("ada-admin", "admin")
    a, _ = submission_create(document=document, submitted_by=submitter)
    b, _ = submission_create(document=variant(document, "lab-h200-02", 1500.0), submitted_by=submitter)
    comparison, _ = comparison_create(runs=[a, b], axis="system", created_by=submitter)
    report = Report.objects.create(
        comparison=comparison,
        title="t",
        decision="d",
        requested_by=submitter,
        requested_by_name=submitter.get_username(),
        created_at=timezone.now(),
    )
    agents = {}
    for name in ("rig-a", "rig-b"):
        _, secret = enrolment_token_create(created_by=None, expires_in=timedelta(hours=1), actor="test")
        agents[name] = agent_enroll(enrolment_token=secret, name=name, inventory={"host": {"address": "10.0.0.7"}})
    rig_a = agents["rig-a"][0]  # a run the agent submitted itself (no job): the one run it may upload files to
    agent_run, _ = submission_create(
        document=variant(document, "lab-rig-a-01", 1400.0), submitted_by=rig_a.user, token=rig_a.token
    )
    plan = Plan.objects.create(
        runner="inference",
        workload="mlp-classifier",
        precisions=["fp32"],
        batch_sizes=[1],
        soft_time_limit=600,
        time_limit=900,
        created_by=submitter,
        created_by_name=submitter.get_username(),
    )
    job = Job.objects.create(
        plan=plan, agent=agents["rig-a"][0], agent_name="rig-a", spec={}, soft_time_limit=600, time_limit=900
    )
    owned_token, _ = token_create(user=submitter, name="sam's", scopes="read")
    # --- decisions ---
    from registry.models import Decision

    decision = Decision.objects.create(
        title="t", question={}, owner=submitter, workload_name="w", scenario_kind="server", created_at=timezone.now()
    )

    tokens: dict[str, list[tuple[str, str]]] = {}  # a person's token clients: (scope, plain token)
    for user, scopes in ((viewer, ["read"]), (submitter, ["read", "submit"]), (admin, ["read", "submit", "admin"])):
        tokens[user.get_username()] = [
            (scope, token_create(user=user, name=scope, scopes=scope)[1]) for scope in scopes
        ]
    rows = {
        "viewer": viewer,
        "submitter": submitter,
        "other": other,
        "admin": admin,
        "run": a,
        "runs": [a, b],
        "agent_run": agent_run,
        "comparison": comparison,
        "report": report,
        "agent": agents["rig-a"][0],
        "agent_b": agents["rig-b"][0],
        "plan": plan,
        "job": job,
        "token": owned_token,
        "decision": decision,
        "document": document,
        "_tokens": tokens,
        "_agent_tokens": {name: secret for name, (_, secret) in agents.items()},
    }
    rows.update(_series_world(submitter, plan, agents["rig-a"][0], a, b))  # series
    return rows


def _fresh(value: Any) -> Any:
    """A model instance read again (a test may change its copy), lists of them likewise, anything else copied."""
    if isinstance(value, Model):
        return type(value)._default_manager.get(pk=value.pk)
    if isinstance(value, list):
        return [_fresh(item) for item in value]
    return copy.deepcopy(value)


@pytest.fixture
def world(world_rows: dict[str, Any], db: None) -> dict[str, Any]:
    """The module's world, its objects read afresh, with new clients for every principal (a client keeps cookies)."""
    world = {key: _fresh(value) for key, value in world_rows.items() if not key.startswith("_")}
    submitter = world["submitter"]
    knocks = [Knock("anonymous", APIClient(), Client(), frozenset(), person=False)]
    for user, base, rights in (
        (world["viewer"], "viewer", {"read"}),
        (submitter, "submitter", {"read", "submit"}),
        (world["other"], "other", {"read", "submit"}),
        (world["admin"], "admin", {"read", "submit", "admin"}),
    ):
        owner = user.pk == submitter.pk
        knocks.append(Knock(base, *_session(user), frozenset(rights), session=True, owner=owner, user=user))
        for scope, plain in world_rows["_tokens"].get(user.get_username(), []):
            knocks.append(Knock(f"{base}+{scope}-token", *_token(plain), frozenset({scope}), owner=owner, user=user))
    for agent, who in ((world["agent"], "agent"), (world["agent_b"], "other-agent")):
        plain = world_rows["_agent_tokens"][agent.name]
        rights = frozenset({"agent", "submit"})
        knocks.append(Knock(who, *_token(plain), rights, person=False, agent=agent.name, user=agent.user))
    world["knocks"] = knocks
    return world


def _series_world(submitter: Any, plan: Plan, agent: Any, a: Any, b: Any) -> dict[str, Any]:
    """For series: the submitter's schedule for the plan, a series of runs a and b, an alert on b."""
    from registry.models import Alert, Schedule, Series, SeriesRun

    schedule = Schedule.objects.create(
        name="nightly",
        plan=plan,
        cron="0 2 * * *",
        created_by=submitter,
        created_by_name=submitter.get_username(),
        last_due_at=timezone.now(),
    )
    schedule.agents.set([agent])
    series = Series.objects.create(
        schedule=schedule, agent=agent, config_key=a.comparability_key_software, headline_metric=a.headline_metric
    )
    for run in (a, b):
        SeriesRun.objects.create(series=series, run=run, value=run.headline_value)
    alert = Alert.objects.create(
        series=series,
        run=b,
        previous=a,
        reference_runs=[a.pk],
        ratio=1.2,
        ci_low=1.1,
        ci_high=1.3,
        p_value=0.0001,
        direction="better",
        differences=[],
    )
    return {"schedule": schedule, "series": series, "alert": alert}
