"""Plans become jobs; agents claim, run and complete only their own jobs; a job has exactly one run."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from registry.choices import AuditKind, JobStatus
from registry.models import AuditEntry, Job, Submission
from registry.services.jobs import MAX_JOB_ATTEMPTS, job_claim, jobs_time_out
from runners.api import RunSpec
from runners.spec import expected_fields
from tests.registry.agents.conftest import client_for, enrol, make_plan

pytestmark = pytest.mark.django_db


def claim(api, job_id: int, claimant: str = "rig-a@host:1", lease: int = 60):
    return api.post(f"/api/v1/jobs/{job_id}/claim", {"claimant": claimant, "lease_seconds": lease}, format="json")


def job_document(example: dict[str, Any], job: Job, **provenance: Any) -> dict[str, Any]:
    """The example made into the configuration the job asked for, with the job's provenance."""
    doc = json.loads(json.dumps(example))
    for pointer, value in expected_fields(RunSpec(**job.spec)).items():
        *path, last = pointer.lstrip("/").split("/")
        target = doc
        for part in path:
            target = target.setdefault(part, {})
        target[last] = value
    doc["provenance"].update({"job": str(job.pk), "agent": job.agent_name, **provenance})
    return doc


def submit(api, document: dict[str, Any]):
    return api.generic("POST", "/api/v1/submissions", json.dumps(document).encode(), content_type="application/json")


def test_a_plan_becomes_one_job_per_agent_and_configuration(api, agent):
    other, _ = enrol("rig-b")
    response = api.post(
        "/api/v1/plans",
        {
            "agents": [agent.name, str(other.pk)],
            "runner": "inference",
            "workload": "mlp-classifier",
            "precisions": ["fp32", "bf16"],
            "batch_sizes": [1, 8],
            "scenario": "offline",
            "repetitions": 2,
            "options": {"quick": True, "backend": "numpy"},
            "soft_time_limit": 60,
            "time_limit": 90,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    jobs = response.json()["jobs"]
    assert len(jobs) == 2 * 2 * 2
    assert {(j["agent"], j["spec"]["precision"], j["spec"]["batch_size"]) for j in jobs} == {
        (a, p, b) for a in ("rig-a", "rig-b") for p in ("fp32", "bf16") for b in (1, 8)
    }
    first = jobs[0]
    assert first["status"] == "queued" and first["soft_time_limit"] == 60 and first["time_limit"] == 90
    assert first["spec"] | {"precision": "fp32", "batch_size": 1} == {
        "phase": "inference",
        "workload": "mlp-classifier",
        "precision": "fp32",
        "batch_size": 1,
        "scenario": "offline",
        "repetitions": 2,
        "quick": True,
        "backend": "numpy",
        "submitter": first["agent"],
    }
    assert AuditEntry.objects.filter(kind=AuditKind.JOB_STATE).count() == 8


@pytest.mark.parametrize(
    "change",
    [{"options": {"gpu_count": 3}}, {"precisions": ["fp64"]}, {"workload": "no-such-model"}, {"agents": ["nobody"]}],
)
def test_a_plan_that_cannot_run_is_refused_whole(api, agent, change):
    body = {
        "agents": [agent.name],
        "runner": "inference",
        "workload": "mlp-classifier",
        "precisions": ["fp32"],
        **change,
    }
    assert api.post("/api/v1/plans", body, format="json").status_code in (400, 404)
    assert not Job.objects.exists()


def test_an_agent_token_cannot_create_plans_or_cancel(agent, agent_api, job):
    body = {"agents": [agent.name], "runner": "inference", "workload": "mlp-classifier", "precisions": ["fp32"]}
    assert agent_api.post("/api/v1/plans", body, format="json").status_code == 403
    assert agent_api.post(f"/api/v1/jobs/{job.pk}/cancel").status_code == 403


def test_an_agent_claims_its_own_job_and_gets_its_spec(agent_api, job):
    response = claim(agent_api, job.pk)
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "claimed" and body["attempts"] == 1 and body["spec"]["workload"] == "mlp-classifier"
    job.refresh_from_db()
    assert job.claimed_at is not None and job.deadline_at is not None


def test_another_agents_job_is_not_found(job, api):
    _, other_token = enrol("rig-b")
    other = client_for(other_token)
    assert claim(other, job.pk).status_code == 404
    for action in ("start", "heartbeat", "fail", "complete"):
        assert (
            other.post(f"/api/v1/jobs/{job.pk}/{action}", {"claimant": "x", "error": "e"}, format="json").status_code
            == 404
        )
    assert claim(api, job.pk).status_code == 403  # a person's token lacks the agent scope
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


@pytest.mark.parametrize(
    ("action", "body", "pointer", "code"),
    [
        ("claim", {}, "/claimant", "required"),
        ("claim", {"claimant": " \x1d "}, "/claimant", "blank"),
        ("claim", {"claimant": "x" * 201}, "/claimant", "max_length"),
        ("claim", {"claimant": "w", "lease_seconds": 0}, "/lease_seconds", "min_value"),
        ("claim", {"claimant": "w", "lease_seconds": "60"}, "/lease_seconds", "invalid"),
        ("claim", {"claimant": 7}, "/claimant", "invalid"),
        ("start", {"claimant": ""}, "/claimant", "blank"),
        ("heartbeat", {"claimant": "w", "lease_seconds": 1.5}, "/lease_seconds", "invalid"),
        ("fail", {"claimant": "w"}, "/error", "required"),
        ("fail", {"claimant": "w", "error": "e", "timed_out": "yes"}, "/timed_out", "invalid"),
        ("complete", {"run": "one"}, "/run", "invalid"),
        ("complete", {"digest": "x" * 72}, "/digest", "max_length"),
    ],
)
def test_an_agent_s_call_on_its_job_with_a_bad_body_is_refused_with_its_pointer_and_changes_nothing(
    agent_api, job, action, body, pointer, code
):
    """The contract run fuzzes these calls with valid data only (docs/api.md): their invalid bodies are held here."""
    before = (job.status, job.claimant, job.attempts)
    response = agent_api.post(f"/api/v1/jobs/{job.pk}/{action}", body, format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert (pointer, code) in {(e["pointer"], e["code"]) for e in response.json()["errors"]}, response.json()
    job.refresh_from_db()
    assert (job.status, job.claimant, job.attempts) == before


def test_the_claim_is_conditional_two_claimants_one_wins(agent_api, job):
    first, second = claim(agent_api, job.pk, "w@h:1"), claim(agent_api, job.pk, "w@h:2")
    assert first.status_code == 200
    assert second.status_code == 409 and second.json()["code"] == "job-leased"
    job.refresh_from_db()
    assert job.claimant == "w@h:1" and job.attempts == 1


def test_a_lapsed_lease_lets_a_new_worker_take_over(agent_api, job):
    claim(agent_api, job.pk, "w@h:1")
    agent_api.post(f"/api/v1/jobs/{job.pk}/start", {"claimant": "w@h:1"}, format="json")
    Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    response = claim(agent_api, job.pk, "w@h:2")
    assert response.status_code == 200 and response.json()["attempts"] == 2
    # the lost worker can no longer report over the new holder
    assert agent_api.post(f"/api/v1/jobs/{job.pk}/start", {"claimant": "w@h:1"}, format="json").status_code == 409


def test_a_job_that_keeps_losing_its_worker_is_failed(agent, job):
    for attempt in range(MAX_JOB_ATTEMPTS):
        job_claim(job=job, claimant=f"w{attempt}", lease_seconds=5)
        Job.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(Exception, match="is failed"):
        job_claim(job=job, claimant="w-last", lease_seconds=5)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "gave up after 3 attempts" in job.last_error


def test_the_run_is_linked_to_its_job_and_a_job_holds_exactly_one(agent_api, job, offline_example):
    claim(agent_api, job.pk)
    first = submit(agent_api, job_document(offline_example, job))
    assert first.status_code == 201
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMITTED and job.run_id == first.json()["id"] and job.finished_at
    assert first.json()["trust"] == "vouched" and job.run.trust == "vouched"  # an enrolled agent measured it
    assert submit(agent_api, job_document(offline_example, job)).status_code == 200  # identical: same run
    other = submit(agent_api, job_document(offline_example, job, finished_at="2026-11-20T11:00:41Z"))
    assert other.status_code == 409 and other.json()["code"] == "job-has-run"
    assert Submission.objects.count() == 1
    done = agent_api.post(
        f"/api/v1/jobs/{job.pk}/complete", {"run": job.run_id, "digest": job.run.digest}, format="json"
    )
    assert done.status_code == 200 and done.json()["run_digest"] == job.run.digest


def test_a_duplicate_delivery_of_a_finished_job_does_nothing(agent_api, job, offline_example):
    claim(agent_api, job.pk)
    submit(agent_api, job_document(offline_example, job))
    again = claim(agent_api, job.pk, "another@h:9")
    assert again.status_code == 409 and again.json()["code"] == "job-finished"
    job.refresh_from_db()
    assert job.attempts == 1 and Submission.objects.count() == 1


def test_only_the_jobs_own_agent_may_submit_for_it(api, agent_api, job, offline_example):
    claim(agent_api, job.pk)
    assert submit(api, job_document(offline_example, job)).status_code == 403
    _, other_token = enrol("rig-b")
    assert submit(client_for(other_token), job_document(offline_example, job, agent="rig-b")).status_code == 404
    assert submit(agent_api, job_document(offline_example, job, agent="rig-z")).status_code == 403
    assert not Submission.objects.exists()


def test_an_unclaimed_or_cancelled_job_takes_no_run(api, agent_api, job, offline_example):
    assert submit(agent_api, job_document(offline_example, job)).status_code == 409  # queued, not claimed
    claim(agent_api, job.pk)
    assert api.post(f"/api/v1/jobs/{job.pk}/cancel").status_code == 200
    assert submit(agent_api, job_document(offline_example, job)).status_code == 409
    assert not Submission.objects.exists()


def test_a_job_can_be_cancelled_once(api, agent_api, job):
    response = api.post(f"/api/v1/jobs/{job.pk}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert api.post(f"/api/v1/jobs/{job.pk}/cancel").status_code == 409
    assert claim(agent_api, job.pk).status_code == 409


def test_a_failure_is_reported_with_its_error(agent_api, job):
    claim(agent_api, job.pk, "w")
    agent_api.post(f"/api/v1/jobs/{job.pk}/start", {"claimant": "w"}, format="json")
    response = agent_api.post(
        f"/api/v1/jobs/{job.pk}/fail", {"claimant": "w", "error": "UnsupportedRun: no int8"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "failed" and body["last_error"] == "UnsupportedRun: no int8" and body["finished_at"]


def test_a_soft_time_limit_is_reported_as_timed_out(agent_api, job):
    claim(agent_api, job.pk, "w")
    response = agent_api.post(
        f"/api/v1/jobs/{job.pk}/fail", {"claimant": "w", "error": "soft limit", "timed_out": True}, format="json"
    )
    assert response.json()["status"] == "timed_out"


def test_the_sweep_times_out_jobs_past_their_deadline(agent_api, job):
    claim(agent_api, job.pk, "w")
    agent_api.post(f"/api/v1/jobs/{job.pk}/start", {"claimant": "w"}, format="json")
    assert jobs_time_out() == 0
    job.refresh_from_db()
    assert jobs_time_out(now=job.deadline_at + timedelta(seconds=1)) == 1
    job.refresh_from_db()
    assert job.status == JobStatus.TIMED_OUT and "deadline" in job.last_error


def test_jobs_list_shows_state_and_runs_in_a_fixed_number_of_queries(api, user, agent):
    make_plan(user, [agent], precisions=["fp32", "bf16"], batch_sizes=[1, 2, 4])
    with CaptureQueriesContext(connection) as queries:
        response = api.get("/api/v1/jobs?status=queued&agent=rig-a")
    assert response.status_code == 200 and len(response.json()["results"]) == 6
    assert len(queries) <= 4  # token, last_used update, page
    detail = api.get(f"/api/v1/jobs/{response.json()['results'][0]['id']}").json()
    assert set(detail) >= {"status", "agent", "run", "last_error", "claimed_at", "started_at", "finished_at"}


def test_the_agent_sees_itself_and_its_jobs(agent_api, job):
    body = agent_api.get("/api/v1/agents/me").json()
    assert body["name"] == "rig-a" and [j["id"] for j in body["jobs"]] == [job.pk]


@pytest.mark.parametrize(
    ("pointer", "value"),
    [
        ("/precision/activations", "bf16"),
        ("/workload/shape/batch_size", 64),
        ("/scenario/kind", "server"),
        ("/workload/name", "encoder-small"),
        ("/conditions/window/repetitions", 5),
    ],
)
def test_a_run_that_is_not_the_job_it_was_given_is_refused_with_the_differing_field(
    agent_api, job, offline_example, pointer, value
):
    claim(agent_api, job.pk)
    doc = job_document(offline_example, job)
    *path, last = pointer.lstrip("/").split("/")
    target = doc
    for part in path:
        target = target[part]
    target[last] = value
    if pointer == "/scenario/kind":
        doc["scenario"].update(arrival="poisson", target_qps=5.0, concurrency=2)
    response = submit(agent_api, doc)
    body = response.json()
    assert response.status_code == 422, body
    assert body["code"] == "run-does-not-match-job"
    assert [e["pointer"] for e in body["errors"]] == [pointer]
    assert "asked for" in body["errors"][0]["message"]
    assert not Submission.objects.exists()
    job.refresh_from_db()
    assert job.status == JobStatus.CLAIMED and job.run_id is None


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"threads": 0}, "threads: 0 is not from 1"),
        ({"min_seconds": 0}, "min_seconds: 0 is not above 0"),
        ({"learning_rate": 0}, "learning_rate: 0 is not above 0"),
        ({"seed": -1}, "seed: -1 is not from 0"),
        ({"concurrency": 0, "target_qps": 5}, "concurrency: 0 is not from 1"),
    ],
)
def test_a_plans_numbers_are_held_to_the_ranges_its_command_reads_them_with(api, agent, options, says):
    """A job's spec reaches the runner as the command's options would (runners/spec.FIELD_RANGES): 0 threads would
    quietly become the default there, and a seed of -1 a traceback on the agent, after the job was queued."""
    body = {
        "agents": [agent.name],
        "runner": "training" if "learning_rate" in options else "inference",
        "workload": "mlp-classifier",
        "precisions": ["fp32"],
        "scenario": "server" if "concurrency" in options else None,
        "options": options,
    }
    response = api.post("/api/v1/plans", {k: v for k, v in body.items() if v is not None}, format="json")
    assert response.status_code == 400 and says in json.dumps(response.json()), response.json()
    assert not Job.objects.exists()
