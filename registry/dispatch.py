"""Enqueue Celery tasks by their registered names, so that services never import the tasks that call them.

`registry.tasks.*` import services (a task takes ids, re-fetches rows and calls one service); services reach
tasks only through here, by name (`"registry.tasks.reports.render_report"`), as healthchecks and netbox keep
their models free of their workers. Names are resolved in the Celery app's task registry (reading it the first
time imports registry.tasks, registry/celery.py, so every registry task is registered in every process):

* a task this registry defines is sent as `task.delay(*args)` (or `apply_async` with options): it runs the way
  the app is configured, eagerly in-process without a broker, on the worker with one (queues and routes come
  from settings.CELERY_TASK_ROUTES and the task's own options);
* a name the registry does not define (an enrolled agent's `benchreg.run_job`) is sent to the broker with
  `app.send_task` and the given options (queue, time limits).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry.celery import app


def runs_in_process() -> bool:
    """True when there is no broker: every registry task runs eagerly in the caller's process."""
    return bool(app.conf.task_always_eager)


def send(name: str, *args: Any, **options: Any) -> None:
    """Enqueue task `name` with positional `args` now (errors of the broker are the caller's to handle)."""
    task = app.tasks.get(name)
    if task is None:
        app.send_task(name, args=list(args), **options)
    elif options:
        task.apply_async(args, **options)
    else:
        task.delay(*args)


def after_commit(name: str, *args: Any, robust: bool = True, **options: Any) -> None:
    """Enqueue task `name` once the current transaction commits (at once outside one); nothing if it rolls back.

    `robust` (the default): a broker that refuses the message is logged by Django and the committed work stands;
    the periodic sweeps send again what was never sent."""

    def send_after_commit() -> None:  # a function, not a partial: Django logs a robust hook by its __qualname__
        send(name, *args, **options)

    transaction.on_commit(send_after_commit, robust=robust)
