"""A job group through the deployment's real path: a planner's `POST /api/v1/plans/groups`, the member jobs sent on
commit to each agent's own queue in a real Redis, two real `benchreg agent start` workers on this machine that take
`benchreg.run_group_job`, arrive over HTTP, meet at rank 0's c10d endpoint (gloo) and leave exactly one run. With one
agent's worker not running, nobody starts and the deadline names the missing rank; with one worker killed mid-run,
the group fails with the rank's reason and nothing is stored.

Run with DATABASE_URL=postgres://... and BENCHREG_TEST_BROKER_URL=redis://127.0.0.1:6379/N.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from registry.choices import GroupStatus, JobStatus
from registry.models import Agent, JobGroup, Submission
from registry.services.job_groups import groups_expire
from runners.agent import credentials
from runners.agent.credentials import Credential
from runners.agent.worker import RENDEZVOUS_HOST_ENV
from tests.registry.agents.conftest import enrol
from tests.registry.agents.test_real_worker import BROKER, Workers, wait_for
from tests.registry.agents.test_real_worker import broker as broker  # the fixture, requested by name below

pytestmark = [
    pytest.mark.services,
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not BROKER, reason="needs Redis: set BENCHREG_TEST_BROKER_URL=redis://..."),
]
SPEC = {"collective": "all_reduce", "min_bytes": 8, "max_bytes": 64, "iters": 10, "warmup": 2, "device": "cpu"}
TRAINING = {"workload": "mlp-tiny", "nproc_per_node": 1, "batch_size": 4, "threads": 1, "steps": 10, "warmup_steps": 2}


@pytest.fixture
def nodes(
    live_server: Any, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[tuple[Agent, Workers]]]:
    """Two enrolled agents, each with its credential file and its own worker (not yet started)."""
    broker = request.getfixturevalue("broker")  # the registry's app sends to the real Redis
    monkeypatch.setenv(RENDEZVOUS_HOST_ENV, "127.0.0.1")  # both "nodes" are this machine
    made = []
    for rank in range(2):
        agent, token = enrol(f"node{rank}-{uuid.uuid4().hex[:8]}")
        credential = Credential(live_server.url, token, agent.name, agent.pk, agent.queue, broker)
        config = credentials.save(credential, tmp_path / f"agent-{rank}.json")
        made.append((agent, Workers(config, tmp_path / f"worker-{rank}.log")))
    yield made
    import redis  # cleanup: these tests' queues only

    client = redis.Redis.from_url(broker)
    for agent, workers in made:
        workers.stop_all()
        client.delete(agent.queue, *client.keys(f"_kombu.binding*.{agent.queue}"))


def plan_group(
    user: Any, agents: list[Agent], form_timeout: int, spec: dict[str, Any] = SPEC, runner: str = "collectives"
) -> JobGroup:
    planner = APIClient()
    planner.force_authenticate(user)
    body = {"agents": [a.name for a in agents], "runner": runner, "spec": spec, "form_timeout": form_timeout}
    answer = planner.post("/api/v1/plans/groups", body, format="json")
    assert answer.status_code == 201, answer.json()
    return JobGroup.objects.get(pk=answer.json()["id"])


def group_status(group: JobGroup) -> str:
    return JobGroup.objects.values_list("status", flat=True).get(pk=group.pk)


def test_two_real_agents_start_together_and_leave_one_run(nodes: list[Any], user: Any) -> None:
    for _, workers in nodes:
        workers.start()
    group = plan_group(user, [agent for agent, _ in nodes], form_timeout=120)
    final = (GroupStatus.SUBMITTED, GroupStatus.FAILED)
    wait_for(lambda: group_status(group) in final, 240, "the group to finish", nodes[0][1].log)
    group.refresh_from_db()
    assert group.status == GroupStatus.SUBMITTED, (group.last_error, nodes[1][1].log.read_text()[-3000:])
    assert Submission.objects.count() == 1 and group.run is not None
    block = group.run.document["metrics"]["collectives"]
    assert block["ranks"] == 2 and all(len(size["rank_times_us"]) == 2 for size in block["sizes"])
    assert group.run.document["provenance"]["agent"] == nodes[0][0].name  # rank 0 submits
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.SUBMITTED}


def test_two_real_agents_train_as_one_world_and_leave_one_run(nodes: list[Any], user: Any) -> None:
    for _, workers in nodes:
        workers.start()
    group = plan_group(user, [agent for agent, _ in nodes], 120, TRAINING, "distributed-training")
    final = (GroupStatus.SUBMITTED, GroupStatus.FAILED)
    wait_for(lambda: group_status(group) in final, 300, "the group to finish", nodes[0][1].log)
    group.refresh_from_db()
    assert group.status == GroupStatus.SUBMITTED, (group.last_error, nodes[1][1].log.read_text()[-3000:])
    assert Submission.objects.count() == 1 and group.run is not None
    document = group.run.document
    assert (document["scenario"]["distributed"]["world_size"], document["system"]["nodes"]) == (2, 2)
    assert [r["rank"] for r in document["metrics"]["distributed"]["ranks"]] == [0, 1]
    assert document["provenance"]["agent"] == nodes[0][0].name  # rank 0 submits


def test_with_one_agents_worker_down_nobody_starts_and_the_deadline_names_it(nodes: list[Any], user: Any) -> None:
    (first, workers), (second, _) = nodes
    workers.start()  # rank 0's only
    group = plan_group(user, [first, second], form_timeout=10)
    wait_for(lambda: group_status(group) == GroupStatus.FAILED, 90, "the group to fail", workers.log)
    group.refresh_from_db()
    assert f"rank 1 ({second.name}) did not arrive" in group.last_error
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.FAILED}
    assert not Submission.objects.exists()


LONG_RUNS = {  # tens of seconds each: the kill lands mid-run
    "collectives": {**SPEC, "max_bytes": 1 << 16, "iters": 20_000},
    "distributed-training": {**TRAINING, "steps": 20_000},
}


@pytest.mark.parametrize("runner", sorted(LONG_RUNS))
def test_a_rank_whose_worker_is_killed_fails_the_group_and_nothing_is_stored(
    nodes: list[Any], user: Any, runner: str
) -> None:
    (first, workers_a), (second, workers_b) = nodes
    workers_a.start()
    killed = workers_b.start()
    group = plan_group(user, [first, second], form_timeout=120, spec=LONG_RUNS[runner], runner=runner)
    wait_for(lambda: group_status(group) == GroupStatus.STARTED, 120, "the group to start", workers_b.log)
    time.sleep(2)  # the ranks are launching or measuring
    Workers.kill(killed)  # the machine of rank 1 loses power, its benchmark with it

    def failed() -> bool:
        groups_expire()  # what the registry's periodic sweep does
        return group_status(group) == GroupStatus.FAILED

    wait_for(failed, 120, "the group to fail", workers_a.log)
    group.refresh_from_db()
    assert group.last_error.startswith("rank "), group.last_error  # rank 1's lapsed lease, or rank 0's launcher
    assert set(group.jobs.values_list("status", flat=True)) == {JobStatus.FAILED}
    assert not Submission.objects.exists()
