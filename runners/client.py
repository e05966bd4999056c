"""HTTP client for the registry's REST API, used by `benchreg submit`, the runners' --submit and agents.

It speaks only HTTPS/HTTP with a token: a lab machine never needs database credentials.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import protocol

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


@dataclass(frozen=True)
class SubmitOutcome:
    """What happened to one document: stored (new), known (already there), rejected (invalid) or error."""

    status: str
    run_id: int | None = None
    digest: str | None = None
    url: str | None = None
    errors: list[dict[str, str]] = field(default_factory=list)
    message: str = ""

    def line(self, label: str) -> str:
        """One human line, as `benchreg submit` prints it."""
        if self.status == "stored":
            return f"{label}: stored as run {self.run_id} ({self.digest}) {self.url or ''}".rstrip()
        if self.status == "known":
            return f"{label}: already known as run {self.run_id} ({self.digest})"
        if self.status == "rejected":
            details = "; ".join(f"{e.get('pointer') or '/'} [{e.get('code')}] {e.get('message')}"
                                for e in self.errors)
            return f"{label}: rejected: {details or self.message}"
        return f"{label}: error: {self.message}"


class RegistryError(Exception):
    """The registry could not be reached or answered with a server error (worth retrying)."""


class RegistryClient:
    """A small, typed wrapper over the registry API. `server` is the base URL, e.g. http://127.0.0.1:8000."""

    def __init__(self, server: str, token: str, *, timeout: httpx.Timeout = DEFAULT_TIMEOUT,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.server = server.rstrip("/")
        self._http = httpx.Client(base_url=self.server, timeout=timeout, transport=transport,
                                  headers={"Authorization": f"Token {token}",
                                           "User-Agent": "benchreg-client/0.1"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request; network failures and 5xx answers raise RegistryError (transient)."""
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise RegistryError(f"cannot reach {self.server}: {exc}") from exc
        if response.status_code >= 500:
            raise RegistryError(f"{method} {path}: registry answered {response.status_code}")
        return response

    def submit_bytes(self, body: bytes) -> SubmitOutcome:
        """POST one JSON document as it is (no re-serialisation), and say what became of it."""
        try:
            response = self.request("POST", "/api/v1/submissions", content=body,
                                    headers={"Content-Type": "application/json"})
        except RegistryError as exc:
            return SubmitOutcome("error", message=str(exc))
        return _outcome(response)

    def submit(self, document: dict[str, Any]) -> SubmitOutcome:
        """POST one document given as a Python value (sent in its canonical form)."""
        return self.submit_bytes(protocol.canonicalize(document))

    def submit_file(self, path: Path) -> SubmitOutcome:
        return self.submit_bytes(path.read_bytes())


def _outcome(response: httpx.Response) -> SubmitOutcome:
    try:
        body = response.json()
    except json.JSONDecodeError:
        body = {}
    if response.status_code in (200, 201) and isinstance(body, dict):
        return SubmitOutcome("stored" if response.status_code == 201 else "known",
                             run_id=body.get("id"), digest=body.get("digest"), url=body.get("url"))
    if isinstance(body, dict) and response.status_code < 500:
        errors = body.get("errors") or []
        return SubmitOutcome("rejected" if response.status_code in (400, 413, 415, 422) else "error",
                             errors=errors, message=str(body.get("detail") or body.get("title") or
                                                        f"HTTP {response.status_code}"))
    return SubmitOutcome("error", message=f"HTTP {response.status_code}")
