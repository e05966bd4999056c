"""The Celery app. Without CELERY_BROKER_URL every task runs eagerly in-process (the embedded default)."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")

app = Celery("registry")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["registry"])


# --- operations (issue 17): beat's own heartbeat, for its health check ---------------------------------------

from celery.beat import PersistentScheduler  # noqa: E402


class HeartbeatScheduler(PersistentScheduler):  # type: ignore[misc]
    """Beat's default scheduler, touching <data dir>/beat.heartbeat on every tick (at most every 30 s).

    Beat answers no ping, so compose's health check reads the file's age: a hung or dead beat stops touching it.
    Run beat with `--scheduler registry.celery:HeartbeatScheduler`.
    """

    def tick(self, *args: object, **kwargs: object) -> float:
        from django.conf import settings

        delay = super().tick(*args, **kwargs)
        (Path(settings.DATA_DIR) / "beat.heartbeat").touch()
        return min(float(delay), 30.0)
