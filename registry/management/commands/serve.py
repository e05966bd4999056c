"""`benchreg serve`: the registry behind gunicorn (the same server as in docker-compose)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from registry.listening import bind_address, listen_problem, url
from registry.migration_state import pending_migrations
from runners import interrupts
from runners.arguments import count

log = logging.getLogger(__name__)


class _Arbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's master, remembering a Ctrl-C (SIGINT): gunicorn stops then exits with status 0, and `benchreg`
    says "interrupted" and exits with 130 instead, as every command does on Ctrl-C. On the embedded default it also
    watches the supervisor from its loop (about once a second), in its own thread: no lock is shared with it."""

    interrupted = False
    keeper: EmbeddedWorker | None = None

    def handle_int(self) -> None:
        _Arbiter.interrupted = True
        self._stop_background()
        super().handle_int()

    def handle_term(self) -> None:
        self._stop_background()
        super().handle_term()

    def _stop_background(self) -> None:
        """The supervisor starts stopping the worker and beat now, while gunicorn stops its own workers: the two
        waits overlap instead of adding up."""
        if _Arbiter.keeper is not None:
            _Arbiter.keeper.begin_stop()

    def reap_workers(self) -> None:
        # gunicorn reaps every child with waitpid(-1): the supervisor's exit status is claimed first, by its pid, so
        # that a death by signal is told as such (gunicorn does the same for its dirty arbiter).
        if _Arbiter.keeper is not None:
            _Arbiter.keeper.process.poll()
        super().reap_workers()

    def manage_workers(self) -> None:
        super().manage_workers()
        if _Arbiter.keeper is not None:
            _Arbiter.keeper.watch()


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    """gunicorn's documented way to embed it: options in, our WSGI app out."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        # Imported here, not at the top: importing registry.wsgi warms the process up and freezes its heap
        # (registry/warmup.py), which `benchreg demo` (it imports serve()) must not pay for when it does not serve.
        from registry.wsgi import application

        return application

    def run(self) -> None:
        _Arbiter(self).run()


def serve(*, bind: str, workers: int, threads: int, verbose: bool = False) -> None:
    """gunicorn in this process; on the embedded default, with a supervised Celery worker and beat beside it.

    Quiet unless `verbose`: the access log, warnings and errors, and one line once the server listens; gunicorn's
    start-up lines and the embedded worker's and beat's log (a line or more a second) only with `verbose`.
    Raises KeyboardInterrupt once it has stopped after a Ctrl-C."""
    stopped = "the server stopped" + (", and its worker and beat with it" if settings.BENCHREG_EMBEDDED_WORKER else "")
    with interrupts.doing(f"serving on {bind}", left=f"{stopped}; nothing is half-stored"):
        _serve(bind=bind, workers=workers, threads=threads, verbose=verbose)


def _serve(*, bind: str, workers: int, threads: int, verbose: bool) -> None:
    keeper = EmbeddedWorker(verbose=verbose) if settings.BENCHREG_EMBEDDED_WORKER else None
    _Arbiter.interrupted, _Arbiter.keeper = False, keeper
    try:
        # preload_app: the master loads (warms and freezes) the application once; the workers fork from it.
        _Gunicorn(
            {
                "bind": bind,
                "workers": workers,
                "threads": threads,
                "accesslog": "-",
                "loglevel": "info" if verbose else "warning",
                "timeout": 120,
                "graceful_timeout": STOP_GRACE_S,
                "preload_app": True,
                "when_ready": lambda arbiter: _say_ready(bind),
            }
        ).run()
    except SystemExit as exc:
        if not _Arbiter.interrupted:  # gunicorn's own exit: a port in use, a worker that cannot boot
            raise
        raise KeyboardInterrupt from exc
    finally:
        _Arbiter.keeper = None
        if keeper is not None:
            keeper.stop()


STOP_GRACE_S = 10  # a request still running after Ctrl-C gets this long before its worker is stopped


def _say_ready(bind: str) -> None:
    print(f"serving on {url(bind)} (API docs at /api/docs/); Ctrl-C stops it", file=sys.stderr, flush=True)


def start_embedded_worker(*, verbose: bool = False) -> subprocess.Popen[bytes]:
    """registry.worker.supervisor, which runs `celery worker` and `celery beat` over the filesystem queue in the data
    dir and restarts either when it dies: reports, the embedded agent's jobs, webhook deliveries, and beat's sweeps
    and checkpoints run there, never in a web request.

    In a session of its own, so its process group (it and both parts) can be stopped as one, and so a Ctrl-C meant
    for gunicorn reaches it only through gunicorn's orderly exit. Without `verbose` the worker, beat and supervisor
    log warnings and errors only (a part that died and was restarted, a failed task)."""
    return subprocess.Popen(
        [sys.executable, "-m", "registry.worker.supervisor"],
        env={**os.environ, "BENCHREG_EMBEDDED_WORKER": "1", "BENCHREG_EMBEDDED_VERBOSE": "1" if verbose else "0"},
        start_new_session=True,
    )


def stop_embedded_worker(supervisor: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the supervisor, which stops the worker and beat (each gets up to 30 s for its task); what is
    left of its group a minute later is killed, and so is anything left in it once the supervisor has exited (a
    part that ignored its SIGTERM): nothing of the embedded worker outlives `benchreg serve`."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(supervisor.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        supervisor.wait(timeout=60)
    _kill_group(supervisor.pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        supervisor.wait(timeout=10)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


RESTART_GRACE_S = 10.0  # a dead supervisor's orphaned worker and beat get this long to stop before SIGKILL


class EmbeddedWorker:
    """The supervisor process of the embedded default, kept running by `benchreg serve`.

    A supervisor that dies (kill -9, an out-of-memory kill) leaves its worker and beat orphaned in its process
    group: they are sent SIGTERM (a task in hand finishes), killed after RESTART_GRACE_S, and a new supervisor is
    started once the group is empty, so two beats never run at once. Until then /readyz says the supervisor is
    down. `watch()` never blocks: it is called from gunicorn's master loop about once a second."""

    def __init__(self, *, verbose: bool) -> None:
        self.verbose = verbose
        self.process = start_embedded_worker(verbose=verbose)
        self.orphans: int | None = None  # the process group of a dead supervisor, while its parts stop
        self.orphaned_at = 0.0
        self.restarts = 0
        self.stopping = False

    def begin_stop(self) -> None:
        """SIGTERM to the supervisor, without waiting (`stop()` waits); nothing is restarted after this."""
        self.stopping = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGTERM)

    def watch(self) -> None:
        if self.stopping:
            return
        if self.orphans is None:
            code = self.process.poll()
            if code is None:
                return
            how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
            log.error(
                "embedded supervisor (pid %d) %s: stopping its worker and beat, then starting it again",
                self.process.pid,
                how,
            )
            self.orphans, self.orphaned_at = self.process.pid, time.monotonic()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.orphans, signal.SIGTERM)
        if _group_alive(self.orphans):
            if time.monotonic() - self.orphaned_at < RESTART_GRACE_S:
                return
            _kill_group(self.orphans)
        self.orphans = None
        self.restarts += 1
        self.process = start_embedded_worker(verbose=self.verbose)
        log.warning("embedded supervisor restarted (pid %d, restart %d)", self.process.pid, self.restarts)

    def stop(self) -> None:
        self.stopping = True
        if self.orphans is not None:
            _kill_group(self.orphans)
        stop_embedded_worker(self.process)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` is left (a zombie not yet reaped by init counts as gone soon enough)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


BIND_HELP = (
    "where to listen: HOST:PORT, [IPv6]:PORT or unix:PATH (default 127.0.0.1:8000, this machine only; 0.0.0.0:8000 "
    "is every interface)"
)


class Command(BaseCommand):
    help = "Serve the registry with gunicorn."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", type=bind_address, default="127.0.0.1:8000", help=BIND_HELP)
        parser.add_argument(
            "--workers", type=count(1, 256), default=2, help="web worker processes, 1 to 256 (default 2)"
        )
        parser.add_argument(
            "--threads", type=count(1, 256), default=4, help="threads per web worker, 1 to 256 (default 4)"
        )
        parser.add_argument(
            "--verbose",
            action="store_true",
            help="also print gunicorn's start-up lines and the embedded worker's and beat's log (every task)",
        )

    def handle(self, *args: Any, bind: str, workers: int, threads: int, verbose: bool, **options: Any) -> None:
        problem = listen_problem(bind)
        if problem:
            raise CommandError(problem)
        pending = pending_migrations()
        if pending:
            raise CommandError(
                f"the database needs {len(pending)} migration(s) ({pending[0]} first): "
                "run `benchreg migrate` (or `benchreg demo`, which migrates) before serving"
            )
        serve(bind=bind, workers=workers, threads=threads, verbose=verbose)
