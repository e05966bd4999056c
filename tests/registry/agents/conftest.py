"""Fixtures for agents and jobs: an admin, an enrolled agent with its API client, a plan for it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from registry.models import Agent, Job, Plan
from registry.services.agents import agent_enroll, enrolment_token_create
from registry.services.plans import plan_create

QUICK = {"quick": True, "backend": "numpy", "min_seconds": 1.0}


def enrol(name: str, inventory: dict[str, Any] | None = None) -> tuple[Agent, str]:
    _, secret = enrolment_token_create(created_by=None, expires_in=timedelta(hours=1), actor="test")
    return agent_enroll(enrolment_token=secret, name=name, inventory=inventory or {"system": {"name": name}})


def client_for(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def make_plan(user: Any, agents: list[Agent], **overrides: Any) -> Plan:
    fields: dict[str, Any] = {
        "runner": "inference",
        "workload": "mlp-classifier",
        "precisions": ["fp32"],
        "batch_sizes": [1],
        "repetitions": 1,
        "options": QUICK,
        "soft_time_limit": 120,
        "time_limit": 180,
    }
    return plan_create(created_by=user, agents=agents, **{**fields, **overrides})


@pytest.fixture
def admin_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("boss", password="pw-for-tests-only", is_staff=True)


@pytest.fixture
def admin_api(admin_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def agent_and_token() -> tuple[Agent, str]:
    return enrol("rig-a")


@pytest.fixture
def agent(agent_and_token: tuple[Agent, str]) -> Agent:
    return agent_and_token[0]


@pytest.fixture
def agent_api(agent_and_token: tuple[Agent, str]) -> APIClient:
    return client_for(agent_and_token[1])


@pytest.fixture
def job(user: Any, agent: Agent) -> Job:
    return make_plan(user, [agent]).jobs.get()
