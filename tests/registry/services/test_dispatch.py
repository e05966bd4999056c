"""registry.dispatch: services enqueue tasks by their registered names, after the commit, as the app is configured."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from registry import dispatch
from registry.celery import app

RENDER = "registry.tasks.reports.render_report"


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """What reached Celery: (how, args, options), without running any task."""
    out: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    task = app.tasks[RENDER]
    monkeypatch.setattr(task, "delay", lambda *args: out.append(("delay", args, {})))
    monkeypatch.setattr(task, "apply_async", lambda args, **options: out.append(("apply_async", tuple(args), options)))
    monkeypatch.setattr(app, "send_task", lambda name, args, **options: out.append((name, tuple(args), options)))
    return out


def test_every_registry_task_is_registered_by_name_in_every_process() -> None:
    names = {name for name in app.tasks if name.startswith("registry.tasks.")}
    assert RENDER in names and "registry.tasks.webhooks.deliver_webhook" in names
    assert "registry.tasks.jobs.job_run_embedded" in names and "registry.tasks.audit.request_cosignatures" in names


def test_without_a_broker_tasks_run_in_process() -> None:
    assert dispatch.runs_in_process(), "the test settings have no broker"


def test_a_registry_task_is_sent_as_configured_and_with_options_when_given(sent: list) -> None:
    dispatch.send(RENDER, 7)
    dispatch.send(RENDER, 8, countdown=5)
    assert sent == [("delay", (7,), {}), ("apply_async", (8,), {"countdown": 5})]


def test_a_name_the_registry_does_not_define_goes_to_the_broker_with_its_options(sent: list) -> None:
    import runners.agent.worker  # noqa: F401 (as a test of the agents does in this process: its tasks stay its own)

    assert "benchreg.run_job" not in app.tasks and "benchreg.run_group_job" not in app.tasks
    dispatch.send("benchreg.run_job", 3, queue="agent.rig", time_limit=60)
    assert sent == [("benchreg.run_job", (3,), {"queue": "agent.rig", "time_limit": 60})]


@pytest.mark.django_db
def test_after_commit_sends_once_the_transaction_commits_and_never_on_rollback(
    sent: list, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        dispatch.after_commit(RENDER, 1)
        assert sent == []
    assert sent == [("delay", (1,), {})]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        try:
            with transaction.atomic():
                dispatch.after_commit(RENDER, 2)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
    assert callbacks == [] and sent == [("delay", (1,), {})]


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_refuses_after_commit_leaves_the_committed_work_standing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*args: Any) -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr(app.tasks[RENDER], "delay", refuse)
    with transaction.atomic():
        dispatch.after_commit(RENDER, 1)
    assert "broker down" in caplog.text
