"""Serving plans: one job per agent and load level sharing a sweep id, checked whole before anything is stored;
an agent measures each level through the command's own path against the real simulated endpoint."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from registry.choices import JobStatus
from registry.exceptions import RegistryError
from registry.models import Job, Plan, Submission
from registry.services.embedded_agent import ServiceJobRegistry
from registry.services.jobs import job_claim, job_start
from registry.services.plans import serving_plan_create
from registry.services.submissions import submission_create
from runners.agent.jobs import run_job
from tests.registry.agents.conftest import enrol

pytestmark = pytest.mark.django_db

DEPLOYMENT = {
    "system": {"accelerators": {"vendor": "NVIDIA", "model": "H100 SXM", "count": 1}, "nodes": 1},
    "engine": {"name": "benchreg-simulated"},  # its version: the endpoint's /version
    "parallelism": {"tensor": 1},
    "precision": {"weights": "bf16", "activations": "bf16", "kv_cache": "bf16"},
}


def serving_job(url: str, **overrides: Any) -> dict[str, Any]:
    """Two small open-loop levels: 17 and 33 requests whose arrivals span 2 s, a few seconds in all."""
    return {
        "endpoint": url,
        "model": "simulated",
        "api": "chat",
        "input_tokens": {"mean": 16},
        "output_tokens": {"mean": 6},
        "load": {"mode": "request-rate", "loads": [8, 16], "duration_s": 2, "min_requests": 10, "max_requests": 40},
        "objectives": {"ttft_ms": 2000, "tpot_ms": 200},
        "deployment": copy.deepcopy(DEPLOYMENT),
        **overrides,
    }


def post_plan(api: Any, agents: list[str], job: dict[str, Any], **extra: Any) -> Any:
    body = {"agents": agents, "runner": "serving", "serving": job, "soft_time_limit": 120, "time_limit": 180, **extra}
    return api.post("/api/v1/plans", body, format="json")


def test_a_serving_plan_is_one_job_per_agent_and_level_each_agents_levels_sharing_a_sweep(api, agent):
    other, _ = enrol("rig-b")
    response = post_plan(api, [agent.name, other.name], serving_job("http://10.0.0.5:8000"))
    assert response.status_code == 201, response.json()
    assert response.json()["runner"] == "serving" and response.json()["options"]["model"] == "simulated"
    jobs = list(Job.objects.order_by("id"))
    assert [(j.agent_name, j.spec["level"]) for j in jobs] == [("rig-a", 0), ("rig-a", 1), ("rig-b", 0), ("rig-b", 1)]
    sweeps = [j.spec["sweep_id"] for j in jobs]
    assert sweeps[0] == sweeps[1] and sweeps[2] == sweeps[3] and sweeps[0] != sweeps[2]
    assert {j.spec["phase"] for j in jobs} == {"serving"} and jobs[2].spec["submitter"] == "rig-b"


@pytest.mark.parametrize(
    ("change", "pointer", "words"),
    [
        ({"load": {"mode": "request-rate", "loads": [1, "x"]}}, "/serving/load/loads/1", "must be int or float"),
        ({"load": {"mode": "automatic"}}, "/serving/load/mode", "automatic sweep"),
        ({"api": "embeddings"}, "/serving/api", "one of chat, completions"),
        ({"endpoint": "ftp://host"}, "/serving/endpoint", "http(s) URL"),
        ({"colour": "red"}, "/serving/colour", "unknown field"),
        ({"level": 0}, "/serving/level", "the registry sets it"),
        ({"deployment": {"precision": {"weights": "bf16"}}}, "/serving/deployment", "/system/accelerators/0/count"),
        ({"deployment": {**DEPLOYMENT, "precision": {"weights": "bf17", "activations": "bf16", "kv_cache": "bf16"}}},
         "/serving/deployment", "precision.weights must be a format of the protocol (bf16, "),
        ({"deployment": {"system": {"accelerators": {"count": "8"}}}}, "/serving/deployment",
         "system.accelerators.count must be a whole number of at least 1, not '8'"),
    ],
)  # fmt: skip
def test_a_serving_plan_that_cannot_run_is_refused_naming_the_field_and_nothing_is_stored(
    api, agent, change, pointer, words
):
    response = post_plan(api, [agent.name], serving_job("http://10.0.0.5:8000", **change))
    assert response.status_code == 400, response.json()
    errors = response.json()["errors"]
    assert any(e["pointer"] == pointer and words in e["message"] for e in errors), errors
    assert not Plan.objects.exists() and not Job.objects.exists()


def test_serving_and_the_bundled_runners_fields_do_not_mix(api, agent):
    wrong = post_plan(api, [agent.name], serving_job("http://10.0.0.5:8000"), workload="mlp-classifier")
    assert wrong.status_code == 400 and wrong.json()["errors"][0]["pointer"] == "/workload"
    body = {"agents": [agent.name], "runner": "inference", "workload": "mlp-classifier", "precisions": ["fp32"]}
    mixed = api.post("/api/v1/plans", {**body, "serving": serving_job("http://10.0.0.5:8000")}, format="json")
    assert mixed.status_code == 400 and mixed.json()["errors"][0]["pointer"] == "/serving"
    assert not Plan.objects.exists()


def test_an_agent_measures_each_level_and_the_runs_form_one_sweep(user, agent, endpoint, client):
    client.force_login(user)
    url = endpoint("--ttft-ms", "20", "--itl-ms", "5", "--capacity", "64")
    plan = serving_plan_create(created_by=user, agents=[agent], serving_job=serving_job(url), soft_time_limit=120)
    for job in plan.jobs.order_by("id"):
        outcome = run_job(ServiceJobRegistry(agent), job.pk, claimant="rig-a@test:1")
        assert outcome.outcome == "submitted", outcome.detail
    jobs = list(plan.jobs.order_by("id"))
    docs = [job.run.document for job in jobs]
    sweep = jobs[0].spec["sweep_id"]
    assert [d["scenario"]["sweep"] for d in docs] == [
        {"id": sweep, "index": i, "levels": 2, "mode": "request-rate", "stop_reason": None} for i in (0, 1)
    ]
    assert [d["scenario"]["target_qps"] for d in docs] == [8, 16]
    assert all(d["metrics"]["requests"]["sent"] == n for d, n in zip(docs, (17, 33), strict=True))
    assert docs[0]["software"]["serving"]["version"] == "1.0"  # told by the endpoint, as the command records it
    assert all(j.run.trust == "vouched" and j.run.document["provenance"]["agent"] == "rig-a" for j in jobs)
    page = client.get(f"/runs/{jobs[1].run_id}/").content.decode()
    assert "Load sweep" in page and sweep in page and f"#{jobs[0].run_id}" in page


def test_a_level_submitted_for_another_levels_job_is_refused_by_field(user, agent, endpoint):
    url = endpoint("--ttft-ms", "20", "--itl-ms", "5", "--capacity", "64")
    plan = serving_plan_create(created_by=user, agents=[agent], serving_job=serving_job(url), soft_time_limit=120)
    first, second = plan.jobs.order_by("id")
    run_job(ServiceJobRegistry(agent), first.pk, claimant="rig-a@test:1")
    first.refresh_from_db()
    job_start(job=job_claim(job=second, claimant="c", lease_seconds=60), claimant="c")
    document = copy.deepcopy(first.run.document)
    document["provenance"]["job"] = str(second.pk)
    with pytest.raises(RegistryError) as refused:
        submission_create(document=document, submitted_by=agent.user, token=agent.token)
    assert refused.value.code == "run-does-not-match-job"
    assert {e["pointer"] for e in refused.value.errors} == {"/scenario/sweep/index", "/scenario/target_qps"}


def test_a_job_whose_endpoint_is_unreachable_fails_with_the_runners_message_and_stores_nothing(user, agent):
    plan = serving_plan_create(
        created_by=user, agents=[agent], serving_job=serving_job("http://127.0.0.1:9"), soft_time_limit=120
    )
    job = plan.jobs.order_by("id").first()
    outcome = run_job(ServiceJobRegistry(agent), job.pk, claimant="rig-a@test:1")
    job.refresh_from_db()
    assert outcome.outcome == "failed" and job.status == JobStatus.FAILED
    assert "refused before any load was sent" in job.last_error and "cannot reach http://127.0.0.1:9" in job.last_error
    assert not Submission.objects.exists()


def test_a_serving_plan_cannot_be_scheduled(api, agent):
    plan = post_plan(api, [agent.name], serving_job("http://10.0.0.5:8000")).json()
    response = api.post(
        "/api/v1/schedules", {"plan": plan["id"], "cron": "0 3 * * *", "agents": [agent.name]}, format="json"
    )
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/plan", response.json()
