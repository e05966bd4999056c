"""The HTTP side of one webhook attempt (registry/services/webhooks.py decides where a delivery may go, signs it
and records what became of it): httpx's client over httpcore's socket backend, guarded so that every connection goes
to an address the caller's check allows (the name resolved once, every address checked, the socket's own peer checked
again), no redirect followed, the attempt bounded by its deadline and by the bytes it reads.

A module of its own so that httpx and httpcore (~0.06 s of a process's start-up) are loaded by the first delivery,
not by every process that loads the services (commands, web and worker start-up).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from typing import Any, NoReturn

import httpcore
import httpx
from django.conf import settings

# Each network operation of an attempt waits at most this long (and never past the attempt's deadline).
STEP_TIMEOUT_S = 10.0

Check = Callable[[str], str | None]  # why an address may not be reached (None: it may)
Resolve = Callable[[str, int, float], list[str]]  # every address of (host, port) within seconds, else TimeoutError


class RefusedDestination(httpcore.ConnectError):
    """The destination is not one webhooks may reach: nothing was sent, and retrying cannot help."""


class _BoundedStream(httpcore.NetworkStream):
    """A connection that ends the attempt at its deadline and after a number of bytes read, whatever the peer
    sends (a receiver dripping a byte every few seconds, or answering without end)."""

    def __init__(self, stream: httpcore.NetworkStream, backend: _GuardedBackend) -> None:
        self._stream, self._backend = stream, backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        left = self._backend.bytes_left
        if left <= 0:
            raise httpcore.ReadError(f"the answer exceeds {settings.BENCHREG_WEBHOOK_MAX_RESPONSE_BYTES} bytes")
        try:
            data = self._stream.read(min(max_bytes, left), self._backend.timeout(timeout, httpcore.ReadTimeout))
        except httpcore.ReadTimeout:
            self._backend.timeout(None, httpcore.ReadTimeout)  # names the deadline when that is what ran out
            raise
        self._backend.bytes_left -= len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._stream.write(buffer, self._backend.timeout(timeout, httpcore.WriteTimeout))
        except httpcore.WriteTimeout:
            self._backend.timeout(None, httpcore.WriteTimeout)
            raise

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        stream = self._stream.start_tls(
            ssl_context, server_hostname, self._backend.timeout(timeout, httpcore.ConnectTimeout)
        )
        return _BoundedStream(stream, self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """httpcore's own socket backend, but every connection goes to an address `check` allows (None: allowed), the
    name resolved by `resolve` (host, port, seconds; TimeoutError past them)."""

    def __init__(self, deadline: float, check: Check, resolve: Resolve) -> None:
        self.deadline = deadline
        self.check, self.resolve = check, resolve
        self.bytes_left = int(settings.BENCHREG_WEBHOOK_MAX_RESPONSE_BYTES)
        self._sync = httpcore.SyncBackend()

    def timeout(self, asked: float | None, error: type[Exception]) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise error(f"the attempt's deadline of {settings.BENCHREG_WEBHOOK_DEADLINE_S} s passed")
        return left if asked is None else min(asked, left)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        addresses = self._checked_addresses(host, port, timeout)
        failure: Exception = httpcore.ConnectError(f"{host} resolves to no address")
        for address in addresses:
            try:
                stream = self._sync.connect_tcp(
                    address, port, self.timeout(timeout, httpcore.ConnectTimeout), local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            return self._bounded(stream)
        raise failure

    def _checked_addresses(self, host: str, port: int, timeout: float | None) -> list[str]:
        """Every address `host` resolves to, each checked by `check`."""
        try:
            addresses = self.resolve(host, port, self.timeout(timeout, httpcore.ConnectTimeout))
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        for address in addresses:  # all of them: one internal answer among global ones is refused too
            problem = self.check(address)
            if problem:
                raise RefusedDestination(f"{host} resolves to {problem}")
        return addresses

    def _bounded(self, stream: httpcore.NetworkStream) -> _BoundedStream:
        """The connected stream, bounded, once its peer is checked too."""
        peer = stream.get_extra_info("server_addr")
        if peer is None or self.check(str(peer[0])):  # the socket's own peer, as the kernel reports it
            stream.close()
            raise RefusedDestination(f"connected to {peer}, not a global address")
        return _BoundedStream(stream, self)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        raise RefusedDestination("webhooks are never delivered over a Unix socket")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def _client(deadline: float, check: Check, resolve: Resolve) -> httpx.Client:
    """A client for one attempt: no proxies from the environment (the check must see the receiver, not a proxy),
    no redirects, the guarded backend under httpx's own transport."""
    transport = httpx.HTTPTransport(trust_env=False)
    # httpx has no public hook for the network backend; its transport wraps an httpcore pool, swapped here for
    # one whose every connection is checked (the hostile tests fail loudly should httpx ever change this).
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=1,
        network_backend=_GuardedBackend(deadline, check, resolve),
    )
    step = min(STEP_TIMEOUT_S, float(settings.BENCHREG_WEBHOOK_DEADLINE_S))
    return httpx.Client(transport=transport, trust_env=False, follow_redirects=False, timeout=httpx.Timeout(step))


def post(url: str, *, content: bytes, headers: dict[str, str], check: Check, resolve: Resolve) -> int:
    """POST `content` to `url` (whose form the caller has checked), connecting only to addresses `check` allows;
    returns the answer's status. Raises httpx.HTTPError on failures (RefusedDestination where the destination is not
    allowed)."""
    deadline = time.monotonic() + float(settings.BENCHREG_WEBHOOK_DEADLINE_S)
    with (
        _client(deadline, check, resolve) as client,
        client.stream("POST", url, content=content, headers=headers) as response,
    ):
        return response.status_code


def refuse(problem: str) -> NoReturn:
    """Refuse a destination before any connection: httpx's ConnectError caused by RefusedDestination, as `post`
    raises when a connection is refused, so the attempt's failure reads the same and is final."""
    raise httpx.ConnectError(problem) from RefusedDestination(problem)
