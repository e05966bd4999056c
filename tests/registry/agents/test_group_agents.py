"""Two agents on this machine form one job group: each runs its agent loop (runners/agent/groups.py) against the
registry's services, arrives, waits for the other, runs its node of `run collectives` or `run distributed-training`
(gloo) on the group's c10d endpoint, and rank 0 submits: exactly one run, with both ranks' figures. One agent
missing: nobody starts."""

from __future__ import annotations

import socket
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from registry.choices import GroupStatus, JobStatus
from registry.models import Job, JobGroup, Submission
from registry.services.embedded_agent import ServiceJobRegistry
from registry.services.job_groups import group_plan_create
from runners.agent.groups import Member, run_member
from tests.registry.agents.conftest import enrol

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SPEC = {"collective": "all_reduce", "nproc_per_node": 1, "min_bytes": 8, "max_bytes": 64, "iters": 10, "device": "cpu"}
TRAINING = {"workload": "mlp-tiny", "nproc_per_node": 1, "batch_size": 4, "threads": 1, "steps": 10, "warmup_steps": 2}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def agent_thread(
    agent: Any, job_id: int, port: int, tmp: Path, outcomes: dict[str, Any], form_s: float
) -> threading.Thread:
    def loop() -> None:
        try:
            member = Member(job_id, agent.name, f"{agent.name}@host:1", f"127.0.0.1:{port}", tmp / agent.name, 30)
            spec = Job.objects.get(pk=job_id).spec
            outcomes[agent.name] = run_member(ServiceJobRegistry(agent), member, spec, form_s)
        finally:
            connection.close()

    return threading.Thread(target=loop, name=agent.name)


def test_two_agents_start_together_and_rank_0_submits_the_one_run(user: Any, tmp_path: Path) -> None:
    (a, _), (b, _) = enrol("node-a"), enrol("node-b")
    group = group_plan_create(created_by=user, agents=[a, b], spec=SPEC, form_timeout=120)
    port, outcomes = free_port(), {}
    threads = [agent_thread(agent, group.jobs.get(agent=agent).pk, port, tmp_path, outcomes, 120) for agent in (b, a)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert {name: o.outcome for name, o in outcomes.items()} == {"node-a": "stored", "node-b": "submitted"}, outcomes
    group.refresh_from_db()
    assert group.status == GroupStatus.SUBMITTED and Submission.objects.count() == 1
    block = group.run.document["metrics"]["collectives"]
    assert block["ranks"] == 2 and all(len(s["rank_times_us"]) == 2 for s in block["sizes"])
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.SUBMITTED}


def test_two_agents_train_as_one_world_and_rank_0_submits_the_one_run(user: Any, tmp_path: Path) -> None:
    (a, _), (b, _) = enrol("node-a"), enrol("node-b")
    group = group_plan_create(
        created_by=user, agents=[a, b], runner="distributed-training", spec=TRAINING, form_timeout=120
    )
    port, outcomes = free_port(), {}
    threads = [agent_thread(agent, group.jobs.get(agent=agent).pk, port, tmp_path, outcomes, 120) for agent in (b, a)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert {name: o.outcome for name, o in outcomes.items()} == {"node-a": "stored", "node-b": "submitted"}, outcomes
    group.refresh_from_db()
    assert group.status == GroupStatus.SUBMITTED and Submission.objects.count() == 1
    document = group.run.document
    layout, ranks = document["scenario"]["distributed"], document["metrics"]["distributed"]["ranks"]
    assert (layout["world_size"], layout["nodes"], document["system"]["nodes"]) == (2, 2, 2)
    assert sorted(r["node"].rsplit(" ", 1)[-1] for r in ranks) == ["0)", "1)"]  # one rank from each agent's node
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.SUBMITTED}
    assert not list((tmp_path / "node-b").rglob("*.json"))  # rank 1 ran its rank and wrote nothing


@pytest.mark.parametrize(("runner", "spec"), [("collectives", SPEC), ("distributed-training", TRAINING)])
def test_with_one_agent_missing_nobody_starts_and_the_deadline_says_who(
    user: Any, tmp_path: Path, runner: str, spec: dict[str, Any]
) -> None:
    (a, _), (b, _) = enrol("node-a"), enrol("node-b")
    group = group_plan_create(created_by=user, agents=[a, b], runner=runner, spec=spec, form_timeout=10)
    JobGroup.objects.filter(pk=group.pk).update(form_deadline_at=timezone.now() + timedelta(seconds=3))
    outcomes: dict[str, Any] = {}
    thread = agent_thread(a, group.jobs.get(agent=a).pk, free_port(), tmp_path, outcomes, 30)
    thread.start()
    thread.join(timeout=60)
    assert outcomes["node-a"].outcome == "skipped" and "rank 1 (node-b) did not arrive" in outcomes["node-a"].detail
    assert not (tmp_path / "node-a").exists() and Submission.objects.count() == 0
