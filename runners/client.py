"""HTTP client for the registry's REST API, used by `benchreg submit`, the runners' --submit and agents.

It speaks only HTTPS/HTTP with a token: a lab machine never needs database credentials.

Transient failures are retried with capped exponential backoff (tenacity): connection errors, timeouts, and the
answers 429, 502, 503 and 504 (Retry-After is honoured, up to the cap). Retrying is safe: a submission is
identified by its digest, so a document stored by an attempt whose answer was lost comes back as "known"; the
job endpoints are conditional claims by the same claimant. Every retry is reported through `on_retry` (the
CLI prints it), and the outcome says how many retries it took (docs/operations.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

import protocol

from .terminal import problem_lines, wrap

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
TRANSIENT_STATUS = frozenset({429, 502, 503, 504})
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: `attempts` in all (1 = no retry), backoff from `initial` seconds doubling up to `cap`."""

    attempts: int = 6
    initial: float = 0.5
    cap: float = 30.0


NO_RETRY = RetryPolicy(attempts=1)


@dataclass(frozen=True)
class SubmitOutcome:
    """What happened to one document: stored (new), known (already there), rejected (invalid) or error."""

    status: str
    run_id: int | None = None
    digest: str | None = None
    url: str | None = None
    errors: list[dict[str, str]] = field(default_factory=list)
    message: str = ""
    retries: int = 0

    def line(self, label: str) -> str:
        """What `benchreg submit` prints for one file: one line, or for a rejected document that line and then each
        problem on lines of its own, pointer first, wrapped to the terminal. The retries it took, if any, are said
        once: "(after 2 retries)", or "(gave up after 5 retries)" when the registry never answered."""
        words = self._words(label)
        if self.retries:
            many = "retry" if self.retries == 1 else "retries"
            words += f" ({'gave up after' if self.status == 'error' else 'after'} {self.retries} {many})"
        if self.status == "rejected" and self.errors:
            return f"{words}\n{problem_lines(self.errors)}"
        return wrap(words)

    def _words(self, label: str) -> str:
        if self.status == "stored":
            return f"{label}: stored as run {self.run_id} ({self.digest}) {self.url or ''}".rstrip()
        if self.status == "known":
            return f"{label}: already known as run {self.run_id} ({self.digest})"
        if self.status == "rejected":
            count = len(self.errors)
            return (
                f"{label}: rejected ({count} problem{'' if count == 1 else 's'}):"
                if count
                else f"{label}: rejected: {self.message}"
            )
        return f"{label}: error: {self.message}"


class RegistryError(Exception):
    """The registry could not be reached or answered with a server error (worth retrying). `reason` is what went
    wrong; `retries` how many retries were made before giving up (said once, in str())."""

    def __init__(self, reason: str, retries: int = 0) -> None:
        many = "retry" if retries == 1 else "retries"
        super().__init__(f"{reason} (gave up after {retries} {many})" if retries else reason)
        self.reason = reason
        self.retries = retries


class _Transient(Exception):
    """One attempt that may succeed if repeated; `retry_after` is the server's Retry-After, if it sent one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("Retry-After", "")
    return float(raw) if raw.strip().isascii() and raw.strip().isdigit() else None


class RegistryClient:
    """A small, typed wrapper over the registry API. `server` is the base URL, e.g. http://127.0.0.1:8000."""

    def __init__(
        self,
        server: str,
        token: str,
        *,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy = RetryPolicy(),
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.retry = retry
        self.on_retry = on_retry or log.warning
        self.retries = 0  # retries made by the last request()
        self._http = httpx.Client(
            base_url=self.server,
            timeout=timeout,
            transport=transport,
            headers={"Authorization": f"Token {token}", "User-Agent": "benchreg-client/0.1"},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request, retrying transient failures (see the module docstring); `self.retries` says how often.

        Raises RegistryError when the registry stays unreachable or keeps answering 429/5xx; any other answer
        is returned for the caller to read.
        """
        self.retries = 0
        try:
            response = self._retrying(method, path)(self._attempt, method, path, kwargs)
        except _Transient as exc:
            raise RegistryError(f"{method} {path}: {exc}", self.retries) from exc
        if response.status_code >= 500:
            raise RegistryError(f"{method} {path}: registry answered {response.status_code}")
        return response

    @contextlib.contextmanager
    def stream(self, method: str, path: str) -> Iterator[httpx.Response]:
        """A response whose body is read as it arrives (a large download), without retries; RegistryError when the
        registry cannot be reached or the connection breaks."""
        try:
            with self._http.stream(method, path) as response:
                yield response
        except httpx.TransportError as exc:
            raise RegistryError(
                f"{method} {path}: cannot read from {self.server}: {type(exc).__name__}: {exc}"
            ) from exc

    def _attempt(self, method: str, path: str, kwargs: dict[str, Any]) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise _Transient(f"cannot reach {self.server}: {type(exc).__name__}: {exc}") from exc
        if response.status_code in TRANSIENT_STATUS:
            raise _Transient(f"registry answered {response.status_code}", _retry_after(response))
        return response

    def _wait(self, state: RetryCallState) -> float:
        """The registry's Retry-After hint (capped), else jittered exponential backoff."""
        exc = state.outcome.exception() if state.outcome else None
        hinted = exc.retry_after if isinstance(exc, _Transient) else None
        if hinted is not None:
            return min(hinted, self.retry.cap)
        return wait_exponential_jitter(multiplier=self.retry.initial, max=self.retry.cap)(state)

    def _retrying(self, method: str, path: str) -> Retrying:
        def before_sleep(state: RetryCallState) -> None:
            self.retries += 1
            exc = state.outcome.exception() if state.outcome else None
            delay = state.next_action.sleep if state.next_action else 0.0
            self.on_retry(f"{method} {path}: {exc}; retry {self.retries} of {self.retry.attempts - 1} in {delay:.1f} s")

        return Retrying(
            stop=stop_after_attempt(self.retry.attempts),
            wait=self._wait,
            reraise=True,
            retry=retry_if_exception_type(_Transient),
            before_sleep=before_sleep,
        )

    def submit_bytes(self, body: bytes) -> SubmitOutcome:
        """POST one JSON document as it is (no re-serialisation), and say what became of it."""
        try:
            response = self.request(
                "POST", "/api/v1/submissions", content=body, headers={"Content-Type": "application/json"}
            )
        except RegistryError as exc:  # the retries are said once, by SubmitOutcome.line
            return SubmitOutcome("error", message=exc.reason, retries=exc.retries)
        return dataclasses.replace(_outcome(response), retries=self.retries)

    def submit(self, document: dict[str, Any]) -> SubmitOutcome:
        """POST one document given as a Python value (sent in its canonical form)."""
        return self.submit_bytes(protocol.canonicalize(document))

    def submit_file(self, path: Path) -> SubmitOutcome:
        return self.submit_bytes(path.read_bytes())

    def submit_batch(self, bodies: list[bytes]) -> list[SubmitOutcome]:
        """POST documents as one NDJSON batch; one outcome per document, in order.

        Each document is sent as it is, only its line breaks turned into spaces (a JSON text never holds a raw
        line break inside a string, so that changes no value). A registry without the batch path (415) gets the
        documents one by one instead.
        """
        lines = [body.replace(b"\r", b" ").replace(b"\n", b" ") for body in bodies]
        try:
            response = self.request(
                "POST",
                "/api/v1/submissions",
                content=b"\n".join(lines) + b"\n",
                headers={"Content-Type": "application/x-ndjson"},
            )
        except RegistryError as exc:
            return [SubmitOutcome("error", message=exc.reason, retries=exc.retries) for _ in bodies]
        if response.status_code == 415:
            return [self.submit_bytes(body) for body in bodies]
        ndjson = response.headers.get("content-type", "").startswith("application/x-ndjson")
        if response.status_code != 200 or not ndjson:
            outcome = _outcome(response)
            return [outcome for _ in bodies]
        results = [json.loads(line) for line in response.text.splitlines() if line.strip()]
        by_line = {result.get("line"): result for result in results if isinstance(result, dict)}
        return [_batch_outcome(by_line.get(number)) for number in range(1, len(bodies) + 1)]

    def upload_artifact(self, run_id: int, sha256: str, path: Path) -> tuple[bool, str]:
        """PUT the file at `path` as run `run_id`'s artifact `sha256` (as its document names it), streamed from
        disk (re-read on a retry): (True, what was kept) or (False, why not, in the registry's words)."""
        hexdigest = sha256.removeprefix("sha256:")
        size = path.stat().st_size
        try:
            response = self.request(
                "PUT",
                f"/api/v1/submissions/{run_id}/artifacts/{hexdigest}",
                content=_FileChunks(path),
                headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
            )
        except RegistryError as exc:
            return False, str(exc)
        try:
            body = response.json()
        except json.JSONDecodeError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if response.status_code in (200, 201):
            kept = "uploaded" if response.status_code == 201 else "already kept"
            return True, f"{kept}: {size:,} bytes, {body.get('url') or ''}".rstrip(", ")
        return False, str(body.get("detail") or body.get("title") or f"HTTP {response.status_code}")


class _FileChunks:
    """A file's bytes as an iterable httpx can send more than once: each iteration opens it anew."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[bytes]:
        with self.path.open("rb") as f:
            while chunk := f.read(1024 * 1024):
                yield chunk


def _batch_outcome(result: dict[str, Any] | None) -> SubmitOutcome:
    """One line of a batch answer (registry.api.submissions.SubmissionBatchResultSerializer) as an outcome."""
    if result is None:
        return SubmitOutcome("error", message="the registry's answer has no line for this document")
    if result.get("result") in ("stored", "known"):
        return SubmitOutcome(
            str(result["result"]), run_id=result.get("id"), digest=result.get("digest"), url=result.get("url")
        )
    problem = result.get("problem") or {}
    status = result.get("status")
    return SubmitOutcome(
        "rejected" if status in (400, 413, 415, 422) else "error",
        errors=problem.get("errors") or [],
        message=str(problem.get("detail") or problem.get("title") or f"HTTP {status}"),
    )


def _outcome(response: httpx.Response) -> SubmitOutcome:
    try:
        body = response.json()
    except json.JSONDecodeError:
        body = {}
    if response.status_code in (200, 201) and isinstance(body, dict):
        return SubmitOutcome(
            "stored" if response.status_code == 201 else "known",
            run_id=body.get("id"),
            digest=body.get("digest"),
            url=body.get("url"),
        )
    if isinstance(body, dict) and response.status_code < 500:
        errors = body.get("errors") or []
        return SubmitOutcome(
            "rejected" if response.status_code in (400, 413, 415, 422) else "error",
            errors=errors,
            message=str(body.get("detail") or body.get("title") or f"HTTP {response.status_code}"),
        )
    return SubmitOutcome("error", message=f"HTTP {response.status_code}")
