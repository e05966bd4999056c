"""Endpoints started as their own processes, so the server's timers never share the client's event loop."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest


@pytest.fixture
def endpoint() -> Iterator[Callable[..., str]]:
    """start(*args) runs `python -m runners.serving.simulated --port 0 *args` and returns its base URL."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> str:
        cmd = [sys.executable, "-m", "runners.serving.simulated", "--port", "0", *args]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving" in line, line
        return line.rsplit(" ", 1)[-1].strip()

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(10)


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
