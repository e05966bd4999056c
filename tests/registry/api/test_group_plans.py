"""The user's door to a job group: `POST /api/v1/plans/groups` names agents in rank order and a collectives or
distributed-training job; each
agent gets one job of the group, sent to its queue as the group task, and sees its rank and spec. Bad input is 400
(against the description) or 422 (refused on its merits) with the pointer, and stores nothing."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from registry import dispatch
from registry.models import Agent, Job, JobGroup, Plan
from registry.services import plans
from tests.registry.agents.conftest import client_for, enrol

pytestmark = [pytest.mark.django_db]
URL = "/api/v1/plans/groups"
SPEC = {"collective": "all_reduce", "min_bytes": 8, "max_bytes": 64, "iters": 5, "device": "cpu"}
TRAINING = {"workload": "mlp-tiny", "nproc_per_node": 2, "batch_size": 4, "parallelism": "fsdp", "steps": 12}


@pytest.fixture
def planner(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def nodes() -> list[tuple[Agent, str]]:
    return [enrol("node-a"), enrol("node-b"), enrol("node-c")]


def body(**overrides: Any) -> dict[str, Any]:
    return {"agents": ["node-b", "node-a"], "runner": "collectives", "spec": SPEC, "form_timeout": 60, **overrides}


def test_a_group_plan_gives_each_agent_its_rank_and_spec(planner: APIClient, nodes: list[Any]) -> None:
    (a, token_a), (b, token_b), _ = nodes
    answer = planner.post(URL, body(), format="json")
    assert answer.status_code == 201, answer.json()
    created = answer.json()
    assert created["status"] == "forming" and created["size"] == 2
    assert [job["agent"] for job in created["plan"]["jobs"]] == ["node-b", "node-a"]  # rank order
    for agent, token, rank in ((b, token_b, 0), (a, token_a, 1)):
        job = Job.objects.get(agent=agent)
        view = client_for(token).get(f"/api/v1/jobs/{job.pk}/group").json()
        assert (view["group"], view["rank"], view["nnodes"]) == (created["id"], rank, 2)
        assert view["spec"] == {"phase": "collectives", **SPEC, "nnodes": 2, "submitter": agent.name}
        assert view["endpoint"] is None  # not before the group started


def test_a_distributed_training_group_gives_each_node_the_training_job(planner: APIClient, nodes: list[Any]) -> None:
    answer = planner.post(URL, body(runner="distributed-training", spec=TRAINING), format="json")
    assert answer.status_code == 201, answer.json()
    plan = Plan.objects.get()
    assert (plan.runner, plan.workload, plan.precisions, plan.batch_sizes) == (
        "distributed-training",
        "mlp-tiny",
        ["fp32"],
        [4],
    )
    for job in Job.objects.order_by("group_rank"):
        assert job.spec == {"phase": "distributed-training", **TRAINING, "nnodes": 2, "submitter": job.agent_name}


def test_each_member_job_is_sent_to_its_agents_queue_as_the_group_task(
    planner: APIClient, nodes: list[Any], monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    sent: list[tuple[str, int, str]] = []
    monkeypatch.setattr(dispatch, "runs_in_process", lambda: False)
    monkeypatch.setattr(dispatch, "send", lambda name, job_id, **options: sent.append((name, job_id, options["queue"])))
    with django_capture_on_commit_callbacks(execute=True):
        assert planner.post(URL, body(), format="json").status_code == 201
    expected = [(plans.GROUP_TASK, job.pk, job.agent.queue) for job in Job.objects.order_by("group_rank")]
    assert sorted(sent) == sorted(expected) and len(sent) == 2


@pytest.mark.parametrize(
    ("change", "status", "pointers"),
    [
        # Well-formed but refused on its merits: 422 (docs/api.md, "Status codes").
        ({"agents": ["node-a", "nobody", "node-b"]}, 422, ["/agents/1"]),
        ({"agents": ["node-a", "node-b", "node-a"]}, 422, ["/agents/2"]),
        ({"agents": ["node-a", "node-b", "node-a", "ghost"]}, 422, ["/agents/2", "/agents/3"]),
        ({"spec": {**SPEC, "collective": "all_sideways"}}, 422, ["/spec"]),
        ({"spec": {**SPEC, "unknown": 1}}, 422, ["/spec"]),
        ({"spec": {**SPEC, "iters": "many"}}, 422, ["/spec"]),
        ({"spec": {**SPEC, "nproc_per_node": 1.5}}, 422, ["/spec"]),
        ({"spec": {**SPEC, "warmup": True}}, 422, ["/spec"]),
        ({"soft_time_limit": 600, "time_limit": 600}, 422, ["/time_limit"]),
        ({"runner": "distributed-training", "spec": {**TRAINING, "workload": "gpt-9"}}, 422, ["/spec"]),
        ({"runner": "distributed-training", "spec": {**TRAINING, "parallelism": "pipeline"}}, 422, ["/spec"]),
        ({"runner": "distributed-training", "spec": {**TRAINING, "steps": 3}}, 422, ["/spec"]),
        ({"runner": "distributed-training", "spec": {**TRAINING, "batch_size": 2.5}}, 422, ["/spec"]),
        ({"runner": "distributed-training", "spec": SPEC}, 422, ["/spec"]),  # a collectives job is no training job
        # Against the description: 400.
        ({"agents": ["node-a"]}, 400, ["/agents"]),
        ({"runner": "training"}, 400, ["/runner"]),
        ({"form_timeout": 1}, 400, ["/form_timeout"]),
        ({"spec": []}, 400, ["/spec"]),
    ],
)
def test_bad_input_is_refused_by_pointer_and_stores_nothing(
    planner: APIClient, nodes: list[Any], change: dict[str, Any], status: int, pointers: list[str]
) -> None:
    answer = planner.post(URL, body(**change), format="json")
    assert answer.status_code == status, answer.json()
    assert sorted(e["pointer"] for e in answer.json()["errors"]) == pointers
    assert not (Plan.objects.exists() or Job.objects.exists() or JobGroup.objects.exists())


def test_the_embedded_agent_cannot_host_a_rank(planner: APIClient, nodes: list[Any]) -> None:
    Agent.objects.filter(name="node-b").update(embedded=True)
    answer = planner.post(URL, body(), format="json")
    assert answer.status_code == 422 and answer.json()["errors"][0]["pointer"] == "/agents/0"
    assert not Plan.objects.exists()
