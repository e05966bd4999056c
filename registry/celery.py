"""The Celery app. Without CELERY_BROKER_URL every task runs eagerly in-process (the embedded default)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Celery
from django.conf import settings  # lazy: nothing is read before Django is configured

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")

app = Celery("registry")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["registry"])


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
