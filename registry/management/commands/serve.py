"""`benchreg serve`: the registry behind gunicorn (the same server as in docker-compose)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter


class _Arbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's master, remembering a Ctrl-C (SIGINT): gunicorn stops then exits with status 0, and `benchreg`
    says "interrupted" and exits with 130 instead, as every command does on Ctrl-C."""

    interrupted = False

    def handle_int(self) -> None:
        _Arbiter.interrupted = True
        super().handle_int()


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
    supervisor = start_embedded_worker(verbose=verbose) if settings.BENCHREG_EMBEDDED_WORKER else None
    _Arbiter.interrupted = False
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
        if supervisor is not None:
            stop_embedded_worker(supervisor)


STOP_GRACE_S = 10  # a request still running after Ctrl-C gets this long before its worker is stopped


def _say_ready(bind: str) -> None:
    host = bind if ":" in bind else f"{bind}:8000"
    print(f"serving on http://{host}/ (API docs at /api/docs/); Ctrl-C stops it", file=sys.stderr, flush=True)


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
    left of its group a minute later is killed."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(supervisor.pid, signal.SIGTERM)
    try:
        supervisor.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(supervisor.pid, signal.SIGKILL)
        supervisor.wait(timeout=10)


class Command(BaseCommand):
    help = "Serve the registry with gunicorn."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", default="127.0.0.1:8000")
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument("--threads", type=int, default=4)
        parser.add_argument(
            "--verbose",
            action="store_true",
            help="also print gunicorn's start-up lines and the embedded worker's and beat's log (every task)",
        )

    def handle(self, *args: Any, bind: str, workers: int, threads: int, verbose: bool, **options: Any) -> None:
        pending = pending_migrations()
        if pending:
            raise CommandError(
                f"the database needs {len(pending)} migration(s) ({pending[0]} first): "
                "run `benchreg migrate` (or `benchreg demo`, which migrates) before serving"
            )
        serve(bind=bind, workers=workers, threads=threads, verbose=verbose)


def pending_migrations() -> list[str]:
    """Migrations not yet applied to the default database, as 'app.name', in the order they would run."""
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
