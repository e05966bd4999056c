"""Liveness and readiness probes for orchestrators and compose (docs/operations.md). Open to anyone (policy
HEALTH_READ); they answer JSON, name each check, and never reveal more than ok/failed with a short reason.

  /healthz  liveness: the process serves requests. Touches nothing else, so a database outage never gets a
            healthy web process restarted.
  /readyz   readiness: the database answers, every migration is applied, the broker (if one is configured)
            accepts a connection, the checkpoint and report-signing keys load, and the file storage (the data
            dir, or the S3-compatible bucket) answers; on the embedded default also the supervisor that
            `benchreg serve` keeps running, and the worker and beat it supervises, are running and their
            heartbeats fresh. 503 with Retry-After if not, naming which and what restarts it.

With a broker of its own (compose), the worker and beat are services that their own health checks watch, and
which start only once web is ready: gating web's readiness on them would deadlock start-up and take the API away
whenever a worker restarts. /readyz then reports what their heartbeat files in the shared data dir say under
`background`, for people and monitoring, without changing the status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from registry import policy
from registry.audit.keys import checkpoint_key
from registry.celery import app
from registry.migration_state import pending_migrations
from registry.reports.signing import signing_identity
from registry.storage import reports_storage
from registry.worker import heartbeats

log = logging.getLogger(__name__)


def _database() -> str:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _migrations() -> str:
    pending = pending_migrations()
    if pending:
        raise RuntimeError(f"{len(pending)} migrations not applied (first: {pending[0]})")
    return "ok"


def _broker() -> str:
    if not settings.CELERY_BROKER_URL:
        return "none configured: tasks run in-process"
    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=3)
    return "ok"


def _keys() -> str:
    checkpoint_key()
    signing_identity()
    return "ok"


def _storage() -> str:
    """The reports storage answers a lookup (on S3: a HEAD in the bucket; a missing bucket is an error)."""
    storage = reports_storage()
    bucket = getattr(storage, "bucket", None)
    if bucket is not None:
        bucket.meta.client.head_bucket(Bucket=bucket.name)
        return f"ok: bucket {bucket.name}"
    storage.exists("readyz-probe")
    return "ok: the data dir"


def _embedded(part: str) -> Callable[[], str]:
    """The supervised part runs here: its recorded process exists and its heartbeat is fresh. What brings it back is
    said as it stands: the supervisor, if it runs; if not, `benchreg serve`, which restarts the supervisor first."""

    def check() -> str:
        beat = heartbeats.read(Path(settings.DATA_DIR), part)
        if beat is None:
            raise RuntimeError(f"the embedded {part} has not started yet (no heartbeat)")
        if not beat.process_alive():
            raise RuntimeError(f"the embedded {part} is not running (process {beat.pid} is gone); {_who_restarts()}")
        if beat.age_s > settings.BENCHREG_HEARTBEAT_STALE_S:
            raise RuntimeError(
                f"the embedded {part} (process {beat.pid}) wrote no heartbeat for {beat.age_s:.0f} s; {_who_restarts()}"
            )
        return f"ok: process {beat.pid}, heartbeat {beat.age_s:.0f} s ago"

    return check


def _supervisor_down() -> str | None:
    """Why the embedded supervisor is not running and watching, or None while it is."""
    beat = heartbeats.read(Path(settings.DATA_DIR), heartbeats.SUPERVISOR)
    if beat is None:
        return "the embedded supervisor has not started yet (no heartbeat)"
    if not beat.process_alive():
        return f"the embedded supervisor is not running (process {beat.pid} is gone)"
    if beat.age_s > settings.BENCHREG_HEARTBEAT_STALE_S:
        return f"the embedded supervisor (process {beat.pid}) wrote no heartbeat for {beat.age_s:.0f} s"
    return None


def _who_restarts() -> str:
    if _supervisor_down() is None:
        return "the supervisor restarts it"
    return "its supervisor is down too: `benchreg serve` restarts the supervisor, which restarts it"


def _supervisor() -> str:
    """The embedded supervisor runs and writes its heartbeat: without it nothing restarts a dead worker or beat."""
    down = _supervisor_down()
    if down is not None:
        raise RuntimeError(
            f"{down}: nothing restarts the worker or beat until `benchreg serve` starts it again "
            "(it does within seconds; if this persists, restart `benchreg serve`)"
        )
    beat = heartbeats.read(Path(settings.DATA_DIR), heartbeats.SUPERVISOR)
    assert beat is not None
    return f"ok: process {beat.pid}, heartbeat {beat.age_s:.0f} s ago"


def readiness_checks() -> dict[str, Callable[[], str]]:
    checks = {"database": _database, "migrations": _migrations, "broker": _broker, "keys": _keys, "storage": _storage}
    if settings.BENCHREG_EMBEDDED_WORKER:
        checks.update({part: _embedded(part) for part in heartbeats.PARTS})
        checks[heartbeats.SUPERVISOR] = _supervisor
    return checks


def background() -> dict[str, dict[str, str]]:
    """With an external broker: each part's heartbeat age in the data dir, as seen from here (not a gate)."""
    report = {}
    for part in heartbeats.PARTS:
        beat = heartbeats.read(Path(settings.DATA_DIR), part)
        if beat is None:
            report[part] = {
                "status": "unknown",
                "detail": "no heartbeat in this data dir (it may run elsewhere; its own health check watches it)",
            }
        elif beat.age_s > settings.BENCHREG_HEARTBEAT_STALE_S:
            report[part] = {"status": "stale", "detail": f"last heartbeat {beat.age_s:.0f} s ago"}
        else:
            report[part] = {"status": "ok", "detail": f"heartbeat {beat.age_s:.0f} s ago"}
    return report


def _allowed(request: HttpRequest) -> None:
    policy.require(policy.for_request(request), policy.HEALTH_READ)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    _allowed(request)
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    _allowed(request)
    checks: dict[str, dict[str, str]] = {}
    for name, check in readiness_checks().items():
        try:
            checks[name] = {"status": "ok", "detail": check()}
        except Exception as exc:
            log.warning("readiness check %s failed: %s: %s", name, type(exc).__name__, exc)
            checks[name] = {"status": "failed", "detail": f"{type(exc).__name__}: {str(exc)[:300]}"}
    ready = all(c["status"] == "ok" for c in checks.values())
    body: dict[str, object] = {"status": "ready" if ready else "not ready", "checks": checks}
    if settings.CELERY_BROKER_URL and not settings.BENCHREG_EMBEDDED_WORKER:
        body["background"] = background()
    response = JsonResponse(body, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = str(settings.BENCHREG_RETRY_AFTER_S)
    return response
