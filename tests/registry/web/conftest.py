"""Users of each role and a small fleet of runs for the browsing pages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from devtools.documents import variant
from registry.services.submissions import submission_create


def _user(django_user_model: Any, name: str, role: str | None) -> Any:
    user = django_user_model.objects.create_user(name, password="pw-for-tests-only")
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def viewer(django_user_model: Any) -> Any:
    return _user(django_user_model, "vera-viewer", "viewer")


@pytest.fixture
def submitter(django_user_model: Any) -> Any:
    return _user(django_user_model, "sam-submitter", "submitter")


@pytest.fixture
def admin_user(django_user_model: Any) -> Any:
    return _user(django_user_model, "ada-admin", "admin")


def signed_in(user: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


@pytest.fixture
def browser_client(viewer: Any) -> Client:
    return signed_in(viewer)


@pytest.fixture
def fleet(submitter: Any, server_example: dict[str, Any], offline_example: dict[str, Any]) -> dict[str, Any]:
    """Three comparable bf16 server runs on three accelerators (one with another driver), an int8 variant and an
    offline CPU run."""
    a, _ = submission_create(document=server_example, submitted_by=submitter)
    h200 = variant(server_example, "lab-h200-02", 1500.0)
    h200["system"]["accelerators"][0]["model"] = "H200"
    b, _ = submission_create(document=h200, submitted_by=submitter)
    mi300 = variant(server_example, "lab-mi300-01", 1400.0, **{"software.driver.version": "999.1"})
    mi300["system"]["accelerators"][0].update(vendor="AMD", model="MI300X")
    c, _ = submission_create(document=mi300, submitted_by=submitter)
    int8 = variant(server_example, "lab-h100-09", 1600.0, **{"precision.weights": "int8"})
    int8["precision"]["quantization"] = {"method": "dynamic", "granularity": "per-channel", "library": "x"}
    d, _ = submission_create(document=int8, submitted_by=submitter)
    e, _ = submission_create(document=offline_example, submitted_by=submitter)
    return {"a": a, "b": b, "c": c, "int8": d, "cpu": e}


@pytest.fixture
def operations(admin_user: Any) -> dict[str, Any]:
    """One online agent with a running and a failed job (rows made directly: no dispatch, no worker)."""
    from django.utils import timezone

    from registry.models import Agent, Job, Plan
    from registry.services.tokens import token_create

    token, _ = token_create(user=admin_user, name="agent gpu-01", scopes="agent")
    agent = Agent.objects.create(
        name="gpu-01", queue="agent.gpu-01", user=admin_user, token=token, last_heartbeat_at=timezone.now(), online=True
    )
    plan = Plan.objects.create(
        runner="inference",
        workload="decoder-small",
        precisions=["bf16"],
        batch_sizes=[8],
        soft_time_limit=600,
        time_limit=900,
        created_by=admin_user,
        created_by_name=admin_user.get_username(),
    )
    running = Job.objects.create(
        plan=plan, agent=agent, agent_name=agent.name, spec={}, status="running", soft_time_limit=600, time_limit=900
    )
    failed = Job.objects.create(
        plan=plan,
        agent=agent,
        agent_name=agent.name,
        spec={},
        status="failed",
        soft_time_limit=600,
        time_limit=900,
        last_error="CUDA out of memory <b>boom</b>",
    )
    return {"agent": agent, "running": running, "failed": failed}


@pytest.fixture(autouse=True)
def _fresh_catalogue_cache() -> Iterator[None]:
    """The catalogue caches per data version; test databases reuse ids between tests, so start empty."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def store_through_api(user: Any, docs: list[dict[str, Any]]) -> list[int]:
    """Submit each document as `user` through POST /api/v1/submissions (the door a lab takes); the new runs' ids."""
    from rest_framework.test import APIClient

    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(user)
    ids = []
    for doc in docs:
        response = api.post("/api/v1/submissions", doc, format="json")
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    return ids
