"""The Celery app. Without CELERY_BROKER_URL every task runs eagerly in-process (the embedded default)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from celery import Celery
from django.conf import settings  # lazy: nothing is read before Django is configured

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")

app = Celery("registry")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["registry"])  # a worker (and every `celery` command) imports registry.tasks at its start


# --- every registry task registered in every process, imported when first needed -----------------------------------
# registry.tasks imports every service a task calls (reports, webhooks, decisions, the embedded agent: ~0.1 s), so it
# is not imported at start-up (RegistryConfig.ready) but when the app's task registry is first read: `app.tasks`
# finalizes the app, and finalizing imports them. registry.dispatch reads it to send any task, so web processes,
# commands and workers all still find each registry task by name. By name (importlib), as Celery's autodiscovery
# imports it: the tasks import the services, which reach the tasks only by name (registry/dispatch.py).


def import_registry_tasks() -> None:
    """Register every registry task in `app` (importing registry.tasks; once the models are loaded)."""
    importlib.import_module("registry.tasks")


@app.on_after_finalize.connect
def _import_tasks_on_finalize(sender: Celery, **kwargs: Any) -> None:
    from django.apps import apps

    if apps.models_ready:  # else RegistryConfig.ready imports them, once the models are loaded
        import_registry_tasks()


# --- operations: heartbeats of the worker and beat, for readiness, the embedded supervisor and health checks ---

from celery import bootsteps  # noqa: E402

from registry.worker import heartbeats  # noqa: E402


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Rewrites <data dir>/worker.heartbeat every BENCHREG_HEARTBEAT_INTERVAL_S from the worker's timer.

    The timer runs beside the task being executed (a thread, with the solo and prefork pools), so a long report
    render does not read as a dead worker; a killed or frozen worker process stops writing it.
    """

    requires = ("celery.worker.components:Timer",)

    def __init__(self, worker: object, **kwargs: object) -> None:
        super().__init__(worker, **kwargs)
        self.tref: object | None = None

    def start(self, worker: object) -> None:
        folder = Path(settings.DATA_DIR)
        heartbeats.touch(folder, "worker")
        self.tref = worker.timer.call_repeatedly(  # type: ignore[attr-defined]
            float(settings.BENCHREG_HEARTBEAT_INTERVAL_S), heartbeats.touch, (folder, "worker")
        )

    def stop(self, worker: object) -> None:
        if self.tref is not None:
            self.tref.cancel()  # type: ignore[attr-defined]
            self.tref = None


app.steps["worker"].add(WorkerHeartbeat)


def __getattr__(name: str) -> Any:
    # Beat's scheduler, `--scheduler registry.celery:HeartbeatScheduler` (registry/worker/beat.py): celery.beat is
    # loaded by the beat process only, not by every process that loads the app (commands, web, workers).
    if name == "HeartbeatScheduler":
        from registry.worker.beat import HeartbeatScheduler

        return HeartbeatScheduler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
