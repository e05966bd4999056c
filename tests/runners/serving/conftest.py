"""Real-time scheduling for the serving timing tests (the simulated endpoint fixture is in tests/conftest.py)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import psutil


def simulated_endpoints() -> list[int]:
    """The pids of the simulated endpoints this test process started (the `endpoint` fixture's)."""
    return [p.pid for p in psutil.Process().children() if "runners.serving.simulated" in " ".join(p.cmdline())]


@contextlib.contextmanager
def realtime(*pids: int) -> Iterator[None]:
    """Run the processes `pids` (0: this one) as SCHED_FIFO while the block runs, so a busy host's other processes
    cannot deschedule them: a timing truth test's client and endpoint then see the law and not the neighbours.
    Raises PermissionError without root or CAP_SYS_NICE (nothing changed then)."""
    changed = []
    try:
        for pid in pids:
            os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(10))
            changed.append(pid)
        yield
    finally:
        for pid in changed:
            with contextlib.suppress(ProcessLookupError):
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
