"""The embedded default's supervisor: one Celery worker and one beat beside `benchreg serve`, kept running.

`benchreg serve` starts `python -m registry.worker.supervisor` in a session of its own; it starts the worker and beat as
two processes, and when one exits (a crash, kill -9, an out-of-memory kill) it logs how and restarts it: after 1 s,
doubling on each death that follows a run shorter than STABLE_S, up to BENCHREG_SUPERVISOR_BACKOFF_MAX_S. A part
whose heartbeat file (registry/worker/heartbeats.py) is older than BENCHREG_HEARTBEAT_STALE_S is frozen: it is killed
and restarted the same way. /readyz answers 503 naming the part while it is down.

On SIGTERM or SIGINT, or when the process that started it is gone, it stops both parts (SIGTERM, then SIGKILL
after STOP_TIMEOUT_S) and exits. Its signal handler only sets a flag and writes a byte to a pipe that the loop
sleeps on: it takes no lock, so a signal landing anywhere in the loop cannot deadlock it (a threading.Event set
from the handler could, the loop holding the Event's own lock in its wait). It rewrites its own heartbeat
(<data dir>/supervisor.heartbeat) as the parts do theirs, so /readyz can tell a dead supervisor from a live one;
`benchreg serve` starts it again when it dies.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from django.conf import settings  # lazy: read only in main(), after the environment is set

from registry.worker import heartbeats

log = logging.getLogger(__name__)

STABLE_S = 60.0  # a part that ran this long before dying is restarted after the shortest delay again
STOP_TIMEOUT_S = 30.0
POLL_S = 0.5


@dataclass
class Part:
    """One supervised process: its command, and where it stands."""

    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    started_wall: float = 0.0
    started: float = 0.0
    quick_deaths: int = 0
    next_start: float = 0.0
    starts: int = 0
    quiet: bool = False  # its standard output (banners, "Warm shutdown") discarded; its log (stderr) is kept


# Celery's warning that the worker runs as root: the embedded worker runs as the user who started `benchreg serve`
# (the choice is theirs, made once for the server) and accepts JSON only, which is what makes root tolerable to
# Celery (it refuses pickle as root). Said with --verbose; otherwise it is a dozen lines at every (re)start.
ROOT_WARNING = "ignore:You're running the worker with superuser privileges"


def embedded_parts(*, data_dir: Path, python: str = sys.executable, verbose: bool = True) -> list[Part]:
    """The worker (solo pool: one task at a time, every queue in CELERY_TASK_QUEUES, the webhook queue included)
    and beat, each its own process so that either can die and come back alone. Without `verbose` they print no
    banner and log warnings and errors only (beat logs each task it sends, about once a second, at info)."""
    level = "info" if verbose else "warning"
    quiet = [] if verbose else ["-W", ROOT_WARNING]
    celery = [python, *quiet, "-m", "celery", "-A", "registry", *([] if verbose else ["--quiet"])]
    # No mingle or gossip: with one worker they only write broadcast files into the queue folder.
    worker = [
        *celery,
        "worker",
        "--pool",
        "solo",
        "--hostname",
        "embedded@%h",
        "--without-mingle",
        "--without-gossip",
        "--loglevel",
        level,
    ]
    beat = [
        *celery,
        "beat",
        "--schedule",
        str(data_dir / "celerybeat-schedule"),
        "--scheduler",
        "registry.celery:HeartbeatScheduler",
        "--loglevel",
        level,
    ]
    return [Part("worker", worker, quiet=not verbose), Part("beat", beat, quiet=not verbose)]


class Supervisor:
    def __init__(
        self,
        parts: list[Part],
        *,
        data_dir: Path,
        stale_s: float,
        backoff_max_s: float,
        heartbeat_s: float = 5.0,
    ) -> None:
        self.parts, self.data_dir = parts, data_dir
        self.stale_s, self.backoff_max_s, self.heartbeat_s = stale_s, backoff_max_s, heartbeat_s
        self.parent = os.getppid()
        # A plain flag and a self-pipe: what a signal handler may touch without taking a lock.
        self.stop_requested = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._beat_at = 0.0

    def run(self) -> None:
        try:
            while not self.stop_requested:
                if os.getppid() != self.parent:
                    log.warning("the process that started the supervisor is gone: stopping the worker and beat")
                    break
                self.heartbeat()
                for part in self.parts:
                    self.check(part)
                self.sleep(POLL_S)
        finally:
            self.stop_all()
            # -1 first: a late signal must write to nothing, not to whatever file reuses the descriptor's number
            wake, self._wake_write = self._wake_write, -1
            os.close(wake)
            os.close(self._wake_read)

    def sleep(self, seconds: float) -> None:
        """Wait up to `seconds`, returning at once when a stop is requested (the handler writes to the pipe)."""
        ready, _, _ = select.select([self._wake_read], [], [], seconds)
        if ready:
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake_read, 512)

    def heartbeat(self) -> None:
        """<data dir>/supervisor.heartbeat, rewritten every `heartbeat_s`: /readyz reads it."""
        now = time.monotonic()
        if now - self._beat_at >= self.heartbeat_s:
            try:
                heartbeats.touch(self.data_dir, heartbeats.SUPERVISOR)
            except OSError as exc:  # a full disk must not stop the supervision; /readyz then says it is stale
                log.error("cannot write the supervisor's heartbeat: %s", exc)
            self._beat_at = now

    def check(self, part: Part) -> None:
        now = time.monotonic()
        if part.process is None:
            if now >= part.next_start:
                self.start(part)
            return
        code = part.process.poll()
        if code is None:
            self.kill_if_frozen(part)
            return
        self._restart_later(part, code, now)

    def _restart_later(self, part: Part, code: int, now: float) -> None:
        """A part that exited with `code`: start it again after a delay that grows while it keeps dying young."""
        assert part.process is not None
        ran = now - part.started
        part.quick_deaths = 0 if ran >= STABLE_S else part.quick_deaths + 1
        delay = min(self.backoff_max_s, 2.0 ** max(part.quick_deaths - 1, 0))
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        log.error(
            "embedded %s (pid %d) %s after %.0f s; restarting it in %.0f s",
            part.name,
            part.process.pid,
            how,
            ran,
            delay,
        )
        part.process, part.next_start = None, now + delay

    def kill_if_frozen(self, part: Part) -> None:
        assert part.process is not None
        beat = heartbeats.read(self.data_dir, part.name)
        # A fresh process has not written yet (Django takes seconds to load): count from its start till then.
        age = time.time() - part.started_wall
        if beat is not None and beat.pid == part.process.pid:
            age = beat.age_s
        if age > self.stale_s:
            log.error(
                "embedded %s (pid %d) wrote no heartbeat for %.0f s: killing it", part.name, part.process.pid, age
            )
            part.process.kill()

    def start(self, part: Part) -> None:
        part.process = subprocess.Popen(part.argv, stdout=subprocess.DEVNULL if part.quiet else None)
        part.started, part.started_wall = time.monotonic(), time.time()
        if part.starts:
            log.warning("embedded %s restarted (pid %d, restart %d)", part.name, part.process.pid, part.starts)
        else:
            log.info("embedded %s started (pid %d)", part.name, part.process.pid)
        part.starts += 1

    def stop_all(self) -> None:
        running = [p.process for p in self.parts if p.process is not None and p.process.poll() is None]
        for process in running:
            process.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in running:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def request_stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        """Stop the loop: safe from a signal handler and from another thread (a flag and a non-blocking write,
        no lock)."""
        self.stop_requested = True
        with contextlib.suppress(OSError):  # the pipe is full (a wake-up is already pending) or closed
            os.write(self._wake_write, b"\0")


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")
    os.environ["BENCHREG_EMBEDDED_WORKER"] = "1"
    verbose = os.environ.get("BENCHREG_EMBEDDED_VERBOSE", "1") != "0"  # `benchreg serve` sets it; --verbose: 1
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="[%(asctime)s: %(levelname)s/supervisor] %(message)s",
    )

    data_dir = Path(settings.DATA_DIR)
    supervisor = Supervisor(
        embedded_parts(data_dir=data_dir, verbose=verbose),
        data_dir=data_dir,
        stale_s=float(settings.BENCHREG_HEARTBEAT_STALE_S),
        backoff_max_s=float(settings.BENCHREG_SUPERVISOR_BACKOFF_MAX_S),
        heartbeat_s=float(settings.BENCHREG_HEARTBEAT_INTERVAL_S),
    )
    signal.signal(signal.SIGTERM, supervisor.request_stop)
    signal.signal(signal.SIGINT, supervisor.request_stop)
    supervisor.run()


if __name__ == "__main__":
    main()
