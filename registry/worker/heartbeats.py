"""Heartbeat files of the background parts: <data dir>/worker.heartbeat and <data dir>/beat.heartbeat, and on the
embedded default the supervisor's <data dir>/supervisor.heartbeat.

The Celery worker (a bootstep on its timer) and beat (registry.celery.HeartbeatScheduler) rewrite theirs at least
every BENCHREG_HEARTBEAT_INTERVAL_S with their process id; /readyz (registry/health.py), the embedded
supervisor (registry/worker/supervisor.py) and compose's health checks read them. A file is cheaper than a broker round
trip (`celery inspect ping`) and also works for beat, which answers no ping.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PARTS = ("worker", "beat")
SUPERVISOR = "supervisor"  # the embedded default's supervisor of both parts (registry/worker/supervisor.py)


def path(folder: Path, part: str) -> Path:
    return Path(folder) / f"{part}.heartbeat"


def touch(folder: Path, part: str) -> None:
    """Rewrite the heartbeat with this process's id; replaced whole, so a reader never sees it half-written."""
    target = path(folder, part)
    fd, staged = tempfile.mkstemp(dir=target.parent, prefix=f".{part}.", suffix=".part")
    try:
        with os.fdopen(fd, "w") as file:
            file.write(f"{os.getpid()}\n")
        Path(staged).replace(target)
    except OSError:
        Path(staged).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Heartbeat:
    pid: int | None  # None: the file holds no process id (compose's beat checks only the age)
    age_s: float

    def process_alive(self) -> bool:
        """Whether the recorded process still exists on this machine (meaningful only where it runs here)."""
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # exists, under another user
        return not _zombie(self.pid)


def _zombie(pid: int) -> bool:
    """Killed but not yet reaped by its parent (the supervisor polls twice a second): dead, though kill(0) works."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc (not Linux), or it was reaped just now
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def read(folder: Path, part: str) -> Heartbeat | None:
    """The part's last heartbeat, or None when it never wrote one."""
    target = path(folder, part)
    try:
        age = time.time() - target.stat().st_mtime
        text = target.read_text().strip()
    except FileNotFoundError:
        return None
    return Heartbeat(pid=int(text) if text.isdigit() else None, age_s=max(age, 0.0))
