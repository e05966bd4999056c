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


def serve(*, bind: str, workers: int, threads: int) -> None:
    """gunicorn in this process; on the embedded default, with a supervised Celery worker and beat beside it."""
    supervisor = start_embedded_worker() if settings.BENCHREG_EMBEDDED_WORKER else None
    try:
        # preload_app: the master loads (warms and freezes) the application once; the workers fork from it.
        _Gunicorn(
            {
                "bind": bind,
                "workers": workers,
                "threads": threads,
                "accesslog": "-",
                "timeout": 120,
                "preload_app": True,
            }
        ).run()
    finally:
        if supervisor is not None:
            stop_embedded_worker(supervisor)


def start_embedded_worker() -> subprocess.Popen[bytes]:
    """registry.worker.supervisor, which runs `celery worker` and `celery beat` over the filesystem queue in the data
    dir and restarts either when it dies: reports, the embedded agent's jobs, webhook deliveries, and beat's sweeps
    and checkpoints run there, never in a web request.

    In a session of its own, so its process group (it and both parts) can be stopped as one, and so a Ctrl-C meant
    for gunicorn reaches it only through gunicorn's orderly exit."""
    return subprocess.Popen(
        [sys.executable, "-m", "registry.worker.supervisor"],
        env={**os.environ, "BENCHREG_EMBEDDED_WORKER": "1"},
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

    def handle(self, *args: Any, bind: str, workers: int, threads: int, **options: Any) -> None:
        pending = pending_migrations()
        if pending:
            raise CommandError(
                f"the database needs {len(pending)} migration(s) ({pending[0]} first): "
                "run `benchreg migrate` (or `benchreg demo`, which migrates) before serving"
            )
        serve(bind=bind, workers=workers, threads=threads)


def pending_migrations() -> list[str]:
    """Migrations not yet applied to the default database, as 'app.name', in the order they would run."""
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
