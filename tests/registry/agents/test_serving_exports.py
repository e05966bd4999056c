"""An agent's serving job keeps its per-request export with the run: the real agent code (runners.agent.jobs) over
the registry's real HTTP API (live_server) measures a level of the real simulated endpoint, submits the document,
then uploads the export it names with `--submit`'s own function; the registry serves the bytes back and the run's
figures are recomputed from them. An upload the registry refuses, or cannot take, leaves the run stored and the
file on the agent's disk, and the job's outcome names it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from registry.choices import AuditKind, JobStatus
from registry.models import AuditEntry, AuditQueued, Job, RunArtifact, Submission
from registry.services import embedded_agent
from registry.services.embedded_agent import ServiceJobRegistry
from registry.services.plans import serving_plan_create
from registry.services.tokens import token_create
from runners.agent.jobs import JobOutcome, job_folder, run_job
from runners.agent.remote import HttpJobRegistry
from runners.client import RegistryClient, RetryPolicy
from runners.serving import export
from runners.uploads import named_artifacts, upload_named
from tests.registry.agents.conftest import enrol
from tests.registry.agents.test_serving_jobs import serving_job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ONE_LEVEL = {"mode": "request-rate", "loads": [8], "duration_s": 2, "min_requests": 10, "max_requests": 40}


@pytest.fixture
def data_dir(settings: Any, tmp_path: Path) -> Path:
    settings.DATA_DIR = tmp_path / "data"
    return settings.DATA_DIR


@pytest.fixture
def agent_token(data_dir: Path) -> tuple[Any, str]:
    return enrol("rig-x")


@pytest.fixture
def agent_client(live_server: Any, agent_token: tuple[Any, str]) -> Iterator[RegistryClient]:
    """The agent's own client, as its worker makes it; short backoff so a test of a registry that keeps answering
    503 gives up in a second (three attempts), not half a minute."""
    with RegistryClient(live_server.url, agent_token[1], retry=RetryPolicy(attempts=3, initial=0.05, cap=0.2)) as c:
        yield c


def one_level_job(user: Any, agent: Any, url: str) -> Job:
    job = serving_job(url, load=ONE_LEVEL)
    plan = serving_plan_create(created_by=user, agents=[agent], serving_job=job, soft_time_limit=120)
    return plan.jobs.get()


def run_over_http(client: RegistryClient, job: Job, work_dir: Path) -> JobOutcome:
    return run_job(HttpJobRegistry(client), job.pk, claimant="rig-x@test:1", work_dir=work_dir)


def the_export(run: Submission) -> dict[str, Any]:
    (named,) = named_artifacts(run.document)
    assert named["format"] == export.FORMAT
    return named


def test_an_agents_serving_run_keeps_its_export_and_its_figures_recompute_from_the_registry(
    live_server, agent_token, agent_client, user, endpoint, tmp_path, capsys
):
    agent, _ = agent_token
    job = one_level_job(user, agent, endpoint("--ttft-ms", "20", "--itl-ms", "5", "--capacity", "64"))
    outcome = run_over_http(agent_client, job, tmp_path / "work")
    assert outcome.outcome == "submitted", outcome.detail
    run = Submission.objects.get(pk=outcome.run_id)
    named = the_export(run)
    assert f"artifact {named['name']} of run {run.pk}: uploaded: {named['bytes']:,} bytes" in outcome.detail
    assert not job_folder(job.pk, tmp_path / "work").exists()  # every file kept: the job's folder is gone

    reader = token_create(user=user, name="buyer", scopes="read")[1]
    hexdigest = named["sha256"].removeprefix("sha256:")
    got = httpx.get(
        f"{live_server.url}/api/v1/submissions/{run.pk}/artifacts/{hexdigest}",
        headers={"Authorization": f"Token {reader}"},
    )
    assert got.status_code == 200 and len(got.content) == named["bytes"]
    assert "sha256:" + hashlib.sha256(got.content).hexdigest() == named["sha256"]
    assert export.differences(run.document, got.content) == []
    capsys.readouterr()
    assert export.main(["--server", live_server.url, "--token", reader, "--run", str(run.pk)]) == 0
    assert f"every figure of run {run.pk}" in capsys.readouterr().out

    row = RunArtifact.objects.get(run=run)
    assert row.uploaded_by_id == agent.user_id and run.token_id == agent.token_id
    kinds = list(AuditEntry.objects.values_list("kind", "actor")) + list(
        AuditQueued.objects.values_list("kind", "actor")
    )
    assert (AuditKind.ARTIFACT_STORED, agent.user.get_username()) in kinds


def test_a_refused_upload_leaves_the_run_stored_the_file_kept_and_the_job_says_which(
    live_server, agent_token, agent_client, user, endpoint, tmp_path, settings
):
    settings.MAX_ARTIFACT_BYTES = 10
    agent, _ = agent_token
    job = one_level_job(user, agent, endpoint("--ttft-ms", "5", "--itl-ms", "2"))
    outcome = run_over_http(agent_client, job, tmp_path / "work")
    job.refresh_from_db()
    assert outcome.outcome == "submitted" and job.status == JobStatus.SUBMITTED and job.run_id == outcome.run_id
    named = the_export(job.run)
    kept = job_folder(job.pk, tmp_path / "work") / named["name"]
    assert f"artifact {named['name']} of run {job.run_id}: not uploaded: the document names" in outcome.detail
    assert "at most 10 bytes" in outcome.detail and f"it stays at {kept}" in outcome.detail
    assert kept.stat().st_size == named["bytes"] and not RunArtifact.objects.exists()

    # the file kept is the one the run names: uploaded later with the same function, once the registry takes it,
    # by the agent that submitted the run (to another agent, the run is not there)
    settings.MAX_ARTIFACT_BYTES = 512 * 1024**2
    with RegistryClient(live_server.url, enrol("rig-z")[1], retry=RetryPolicy(attempts=1)) as other:
        (refused,) = upload_named(HttpJobRegistry(other), job.run.document, kept.parent, job.run_id)
    assert not refused.uploaded and refused.words == f"no run {job.run_id}" and not RunArtifact.objects.exists()
    (later,) = upload_named(HttpJobRegistry(agent_client), job.run.document, kept.parent, job.run_id)
    assert later.uploaded and later.words.startswith("uploaded:")
    (again,) = upload_named(HttpJobRegistry(agent_client), job.run.document, kept.parent, job.run_id)
    assert again.uploaded and again.words.startswith("already kept:") and RunArtifact.objects.count() == 1


def test_a_storage_that_cannot_take_the_export_is_tried_a_bounded_number_of_times_then_said(
    live_server, agent_token, agent_client, user, endpoint, data_dir, tmp_path
):
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "artifacts").write_text("a file where the storage's folder should be")  # every write fails: 503
    agent, _ = agent_token
    job = one_level_job(user, agent, endpoint("--ttft-ms", "5", "--itl-ms", "2"))
    outcome = run_over_http(agent_client, job, tmp_path / "work")
    assert outcome.outcome == "submitted" and Submission.objects.filter(pk=outcome.run_id).exists()
    named = the_export(Submission.objects.get(pk=outcome.run_id))
    assert f"artifact {named['name']} of run {outcome.run_id}: not uploaded: " in outcome.detail
    assert "registry answered 503 (gave up after 2 retries)" in outcome.detail
    assert (job_folder(job.pk, tmp_path / "work") / named["name"]).is_file()


def test_the_embedded_agent_keeps_the_export_through_the_services_as_the_api_would(user, endpoint, data_dir, tmp_path):
    agent, _ = enrol("rig-y")
    job = one_level_job(user, agent, endpoint("--ttft-ms", "5", "--itl-ms", "2"))
    outcome = run_job(ServiceJobRegistry(agent), job.pk, claimant="rig-y@test:1", work_dir=tmp_path / "work")
    assert outcome.outcome == "submitted", outcome.detail
    row = RunArtifact.objects.get(run_id=outcome.run_id)
    assert row.uploaded_by_id == agent.user_id and f"uploaded: {row.bytes:,} bytes" in outcome.detail
    assert export.differences(row.run.document, (data_dir / "artifacts").joinpath(row.storage_name).read_bytes()) == []


def test_the_embedded_agent_tries_a_storage_that_cannot_take_the_export_a_bounded_number_of_times(
    user, endpoint, data_dir, tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(embedded_agent, "STORE_PAUSE_S", 0.01)
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "artifacts").write_text("a file where the storage's folder should be")
    agent, _ = enrol("rig-y")
    job = one_level_job(user, agent, endpoint("--ttft-ms", "5", "--itl-ms", "2"))
    outcome = run_job(ServiceJobRegistry(agent), job.pk, claimant="rig-y@test:1", work_dir=tmp_path / "work")
    assert outcome.outcome == "submitted" and Submission.objects.filter(pk=outcome.run_id).exists()
    assert "not uploaded: the artifacts storage cannot take" in outcome.detail and "it stays at" in outcome.detail
    tries = [r for r in caplog.records if r.name == embedded_agent.__name__ and "attempt" in r.getMessage()]
    assert [r.getMessage()[-16:] for r in tries] == ["(attempt 1 of 3)", "(attempt 2 of 3)"]
    assert not RunArtifact.objects.exists()
