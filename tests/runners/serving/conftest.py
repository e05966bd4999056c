"""Endpoints started as their own processes, so the server's timers never share the client's event loop."""

from __future__ import annotations

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
