"""A small registry with one of everything, and every kind of principal that may knock on its doors.

Principals: anonymous; a viewer, a submitter, another submitter and an admin, each signed in with a session and
(where it differs) through a token of each scope; two enrolled agents. The submitter owns the run, the comparison,
the report, the plan and its job (on agent `rig-a`) and one token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from devtools.documents import variant
from registry.models import Job, Plan, Report
from registry.services.agents import agent_enroll, enrolment_token_create
from registry.services.comparisons import comparison_create
from registry.services.submissions import submission_create
from registry.services.tokens import token_create


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


def _member(django_user_model: Any, name: str, role: str) -> Any:
    user = django_user_model.objects.create_user(name, password="pw-for-tests-only")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def _session(user: Any) -> tuple[APIClient, Client]:
    api, web = APIClient(), Client()
    api.force_login(user)
    web.force_login(user)
    return api, web


def _token(plain: str) -> tuple[APIClient, Client]:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {plain}")
    return api, Client(HTTP_AUTHORIZATION=f"Token {plain}")  # pages take no tokens: anonymous there


@pytest.fixture
def world(django_user_model: Any, server_example: dict[str, Any]) -> dict[str, Any]:
    viewer = _member(django_user_model, "vera-viewer", "viewer")
    submitter = _member(django_user_model, "sam-submitter", "submitter")
    other = _member(django_user_model, "otto-other", "submitter")
    admin = _member(django_user_model, "ada-admin", "admin")
    a, _ = submission_create(document=server_example, submitted_by=submitter)
    b, _ = submission_create(document=variant(server_example, "lab-h200-02", 1500.0), submitted_by=submitter)
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

    knocks = [Knock("anonymous", APIClient(), Client(), frozenset(), person=False)]
    for user, base, rights, scopes in (
        (viewer, "viewer", {"read"}, ["read"]),
        (submitter, "submitter", {"read", "submit"}, ["read", "submit"]),
        (other, "other", {"read", "submit"}, []),
        (admin, "admin", {"read", "submit", "admin"}, ["read", "submit", "admin"]),
    ):
        owner = user is submitter
        knocks.append(Knock(base, *_session(user), frozenset(rights), session=True, owner=owner, user=user))
        for scope in scopes:
            plain = token_create(user=user, name=scope, scopes=scope)[1]
            knocks.append(Knock(f"{base}+{scope}-token", *_token(plain), frozenset({scope}), owner=owner, user=user))
    for name, who in (("rig-a", "agent"), ("rig-b", "other-agent")):
        knocks.append(
            Knock(
                who,
                *_token(agents[name][1]),
                frozenset({"agent", "submit"}),
                person=False,
                agent=name,
                user=agents[name][0].user,
            )
        )
    world = {
        "viewer": viewer,
        "submitter": submitter,
        "other": other,
        "admin": admin,
        "run": a,
        "runs": [a, b],
        "comparison": comparison,
        "report": report,
        "agent": agents["rig-a"][0],
        "agent_b": agents["rig-b"][0],
        "plan": plan,
        "job": job,
        "token": owned_token,
        "knocks": knocks,
        "document": server_example,
        "decision": decision,
    }
    world.update(_series_world(submitter, plan, agents["rig-a"][0], a, b))  # series
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
