"""One error type for the registry's rules; the API translates it to HTTP in exactly one place.

Also what both doors (pages and API) need to tell a lost database apart from a bug: each answers it 503 in its own
form.
"""

from __future__ import annotations

from django.conf import settings
from django.db import InterfaceError, OperationalError


class RegistryError(Exception):
    """A request the registry refuses. `status` is the HTTP status the API answers with."""

    status = 400
    code = "registry-error"

    def __init__(
        self,
        message: str,
        *,
        errors: list[dict[str, str]] | None = None,
        status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code


class ImmutableRecord(RegistryError):
    status = 409
    code = "immutable"


class NotFound(RegistryError):
    status = 404
    code = "not-found"


def database_unavailable(exc: BaseException | None) -> bool:
    """A lost or refused database connection (the server is down or restarting), not a bug in a query.

    Django raises OperationalError when it cannot connect or the connection drops mid-query, and InterfaceError
    when a connection that was already closed is used. Both pass: the next request reconnects.
    """
    return isinstance(exc, OperationalError | InterfaceError)


def unavailable_headers() -> dict[str, str]:
    """Headers of a 503 for a lost database: when to ask again."""
    return {"Retry-After": str(settings.BENCHREG_RETRY_AFTER_S)}
