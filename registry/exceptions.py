"""One error type for the registry's rules; the API translates it to HTTP in exactly one place."""

from __future__ import annotations


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
