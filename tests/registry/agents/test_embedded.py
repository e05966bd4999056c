"""The embedded default: with no broker, the registry's own agent runs its jobs in-process, end to end."""

from __future__ import annotations

import pytest

from registry.celery import app
from registry.choices import JobStatus
from registry.models import Submission
from registry.services.agents import agent_embedded_get_or_create
from runners.environment import capture
from tests.registry.agents.conftest import make_plan

pytestmark = pytest.mark.django_db


def test_without_a_broker_the_embedded_agent_runs_a_job_end_to_end(user, django_capture_on_commit_callbacks):
    assert app.conf.task_always_eager, "the test settings have no broker"
    agent = agent_embedded_get_or_create(inventory=capture())
    assert agent_embedded_get_or_create(inventory={}) == agent
    with django_capture_on_commit_callbacks(execute=True):
        plan = make_plan(user, [agent])
    job = plan.jobs.get()
    assert job.status == JobStatus.SUBMITTED, job.last_error
    run = Submission.objects.get()
    assert job.run == run and job.attempts == 1 and job.started_at and job.finished_at
    assert run.document["provenance"]["job"] == str(job.pk)
    assert run.document["provenance"]["agent"] == "local"
    assert run.submitted_by_name == "agent-local" and run.token == agent.token
    assert run.batch_size == 1 and run.precision_weights == "fp32"


def test_without_a_broker_a_remote_agents_job_waits_queued(user, agent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = make_plan(user, [agent]).jobs.get()
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.attempts == 0
