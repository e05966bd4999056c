"""Job groups (issue 43, item 4): the jobs of several agents start together or not at all, a rank that dies fails the
group with the reason, and the group holds exactly one run, submitted by rank 0."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from devtools.documents import collective_document
from registry.choices import GroupStatus, JobStatus
from registry.exceptions import RegistryError
from registry.models import Job, JobGroup, Submission
from registry.services.job_groups import group_arrive, group_plan_create, group_view, groups_expire
from registry.services.jobs import JobConflict, job_fail, job_heartbeat
from tests.registry.agents.conftest import client_for, enrol

pytestmark = pytest.mark.django_db
# 2 agents x 4 processes: the 8-rank all-reduce of devtools' collective document
SPEC = {"collective": "all_reduce", "nproc_per_node": 4, "min_bytes": 8, "max_bytes": 1 << 20, "device": "cpu"}


@pytest.fixture
def agents() -> list[tuple[Any, str]]:
    return [enrol("node-a"), enrol("node-b")]


@pytest.fixture
def group(user: Any, agents: list[tuple[Any, str]]) -> JobGroup:
    return group_plan_create(created_by=user, agents=[a for a, _ in agents], spec=SPEC, form_timeout=60)


def member(group: JobGroup, rank: int) -> Job:
    return group.jobs.get(group_rank=rank)


def arrive(group: JobGroup, rank: int, endpoint: str | None = None) -> dict[str, Any]:
    job = member(group, rank)
    return group_arrive(job=job, claimant=f"{job.agent_name}@host:1", lease_seconds=30, endpoint=endpoint)


def statuses(group: JobGroup) -> list[str]:
    return [j.status for j in group.jobs.order_by("group_rank")]


def test_nobody_runs_until_every_member_has_arrived_then_all_start_together(group: JobGroup) -> None:
    view = arrive(group, 1)
    assert view["status"] == GroupStatus.FORMING and view["endpoint"] is None and view["rank"] == 1
    assert statuses(group) == [JobStatus.QUEUED, JobStatus.CLAIMED]  # arrived, waiting: not running
    view = arrive(group, 0, endpoint="10.0.0.5:29400")
    assert view["status"] == GroupStatus.STARTED and view["endpoint"] == "10.0.0.5:29400" and view["nnodes"] == 2
    assert statuses(group) == [JobStatus.RUNNING, JobStatus.RUNNING]
    started = {j.started_at for j in group.jobs.all()}
    assert len(started) == 1  # one claim for the group: one instant for every member
    assert group_view(job=member(group, 1))["rendezvous_id"] == view["rendezvous_id"]


def test_rank_0_arrives_with_the_rendezvous_endpoint(group: JobGroup) -> None:
    with pytest.raises(RegistryError, match="rendezvous endpoint"):
        arrive(group, 0)
    with pytest.raises(RegistryError, match="rendezvous endpoint"):
        arrive(group, 0, endpoint="http://10.0.0.5:29400/")
    assert statuses(group) == [JobStatus.QUEUED, JobStatus.QUEUED]


def test_a_member_that_never_arrives_means_nobody_starts_and_the_deadline_says_who(group: JobGroup) -> None:
    arrive(group, 0, endpoint="10.0.0.5:29400")
    group.refresh_from_db()
    assert groups_expire(now=group.form_deadline_at + timedelta(seconds=1)) == 1
    group.refresh_from_db()
    assert group.status == GroupStatus.FAILED and "rank 1 (node-b) did not arrive" in group.last_error
    assert statuses(group) == [JobStatus.FAILED, JobStatus.FAILED]
    assert all("the group failed: rank 1 (node-b)" in j.last_error for j in group.jobs.all())
    with pytest.raises(JobConflict, match="did not arrive"):
        arrive(group, 1)  # too late: refused with the reason, never started
    assert not group.jobs.filter(started_at__isnull=False).exists()


def test_a_rank_that_dies_fails_the_group_and_every_member_with_the_reason(
    group: JobGroup, agents: list[tuple[Any, str]]
) -> None:
    arrive(group, 1)
    arrive(group, 0, endpoint="10.0.0.5:29400")
    rank1 = member(group, 1)
    job_fail(job=rank1, claimant="node-b@host:1", error="ChildFailedError: rank 5 exited with signal 9 (SIGKILL)")
    group.refresh_from_db()
    assert group.status == GroupStatus.FAILED and "rank 1 on agent node-b failed: ChildFailedError" in group.last_error
    assert statuses(group) == [JobStatus.FAILED, JobStatus.FAILED]
    with pytest.raises(JobConflict):  # rank 0's next heartbeat tells it to stop
        job_heartbeat(job=member(group, 0), claimant="node-a@host:1", lease_seconds=30)
    answer = submit(agents[0][1], group_document(member(group, 0)))
    assert answer.status_code == 409 and Submission.objects.count() == 0


def test_a_started_member_whose_lease_lapses_fails_the_group(group: JobGroup) -> None:
    arrive(group, 1)
    arrive(group, 0, endpoint="10.0.0.5:29400")
    later = member(group, 1).lease_expires_at + timedelta(seconds=1)
    job_heartbeat(job=member(group, 0), claimant="node-a@host:1", lease_seconds=3600)
    assert groups_expire(now=later) == 1
    group.refresh_from_db()
    assert "rank 1 on agent node-b stopped heartbeating" in group.last_error


def group_document(job: Job) -> dict[str, Any]:
    doc = collective_document()
    hosts = [{"host": "node-a", "ranks": [0, 1, 2, 3]}, {"host": "node-b", "ranks": [4, 5, 6, 7]}]
    doc["system"]["topology"] = {"nodes": 2, "processes_per_node": 4, "hosts": hosts}
    doc["provenance"] |= {"job": str(job.pk), "agent": job.agent_name}
    return doc


def submit(token: str, document: dict[str, Any]) -> Any:
    body = json.dumps(document).encode()
    return client_for(token).generic("POST", "/api/v1/submissions", body, content_type="application/json")


def test_the_group_holds_exactly_one_run_submitted_by_rank_0(group: JobGroup, agents: list[tuple[Any, str]]) -> None:
    arrive(group, 0, endpoint="10.0.0.5:29400")
    arrive(group, 1)
    refused = submit(agents[1][1], group_document(member(group, 1)))
    assert refused.status_code == 409 and refused.json()["code"] == "group-rank-does-not-submit"
    stored = submit(agents[0][1], group_document(member(group, 0)))
    assert stored.status_code == 201, stored.json()
    group.refresh_from_db()
    assert group.status == GroupStatus.SUBMITTED and group.run_id == stored.json()["id"]
    assert statuses(group) == [JobStatus.SUBMITTED, JobStatus.SUBMITTED]
    other = group_document(member(group, 0))
    other["provenance"]["submitter"] = "someone else"
    assert submit(agents[0][1], other).status_code == 409 and Submission.objects.count() == 1


def test_a_run_that_is_not_the_groups_configuration_is_refused(group: JobGroup, agents: list[tuple[Any, str]]) -> None:
    arrive(group, 0, endpoint="10.0.0.5:29400")
    arrive(group, 1)
    one_node = group_document(member(group, 0))
    one_node["system"]["topology"] = {"nodes": 1, "hosts": [{"host": "node-a"}]}
    answer = submit(agents[0][1], one_node)
    assert answer.status_code == 422 and answer.json()["errors"][0]["pointer"] == "/system/topology/nodes"


def test_a_group_names_distinct_agents_and_a_spec_that_can_run(user: Any, agents: list[tuple[Any, str]]) -> None:
    a, b = (agent for agent, _ in agents)
    with pytest.raises(RegistryError, match="2 to 64 distinct agents"):
        group_plan_create(created_by=user, agents=[a, a], spec=SPEC)
    with pytest.raises(RegistryError, match="unknown collective"):
        group_plan_create(created_by=user, agents=[a, b], spec={**SPEC, "collective": "all_sum"})
    assert JobGroup.objects.count() == 0


def test_agents_arrive_and_wait_over_the_api(group: JobGroup, agents: list[tuple[Any, str]]) -> None:
    token_a, token_b = (token for _, token in agents)
    rank0, rank1 = member(group, 0), member(group, 1)
    body = {"claimant": "node-b@host:1", "lease_seconds": 30}
    waiting = client_for(token_b).post(f"/api/v1/jobs/{rank1.pk}/arrive", body, format="json")
    assert waiting.status_code == 200 and waiting.json()["status"] == "forming" and waiting.json()["endpoint"] is None
    assert client_for(token_b).get(f"/api/v1/jobs/{rank0.pk}/group").status_code == 404  # not node-b's job
    missing = client_for(token_a).post(f"/api/v1/jobs/{rank0.pk}/arrive", {"claimant": "node-a@h:1"}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "rendezvous-endpoint-missing"
    body = {"claimant": "node-a@host:1", "endpoint": "node-a.lab:29400"}
    started = client_for(token_a).post(f"/api/v1/jobs/{rank0.pk}/arrive", body, format="json")
    assert started.status_code == 200 and started.json()["status"] == "started"
    polled = client_for(token_b).get(f"/api/v1/jobs/{rank1.pk}/group").json()
    assert (polled["endpoint"], polled["rank"], polled["nnodes"]) == ("node-a.lab:29400", 1, 2)
