"""Beat's scheduler, served as registry.celery:HeartbeatScheduler (loaded by the beat process only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler
from django.conf import settings

from registry.worker import heartbeats


class HeartbeatScheduler(PersistentScheduler):
    """Beat's default scheduler, rewriting <data dir>/beat.heartbeat on every tick (at least every
    BENCHREG_HEARTBEAT_INTERVAL_S).

    Beat answers no ping, so readiness and compose's health check read the file's age: a hung or dead beat stops
    writing it. Run beat with `--scheduler registry.celery:HeartbeatScheduler`.
    """

    def tick(self, *args: Any, **kwargs: Any) -> float:
        delay = super().tick(*args, **kwargs)
        heartbeats.touch(Path(settings.DATA_DIR), "beat")
        return min(float(delay), float(settings.BENCHREG_HEARTBEAT_INTERVAL_S))
