"""The bench's HTTP client for both servers it compares (benchreg in `bench.ingest`, MLflow in bench/mlflow_peer.py):
one keep-alive HTTP/1.1 connection of the standard library's http.client per client thread.

The bench's clients share the host's cores with the servers they measure, so their own CPU is taken from both
servers' rates. httpx spent about 1.1-1.5 ms of CPU per request here, a sixth of a benchreg submission's whole CPU;
http.client spends about 0.5 ms. Both tools get this same client, per request (MLflow's run is three requests).
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit


class Connection:
    """POSTs over one connection to `base` (http://host:port), with `headers` on every request; reopened once if the
    server closed it between requests."""

    def __init__(self, base: str, headers: dict[str, str] | None = None, timeout: float = 60) -> None:
        parts = urlsplit(base)
        self.host, self.port, self.timeout = parts.hostname or "127.0.0.1", parts.port or 80, timeout
        self.headers = dict(headers or {})
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
        """(status, body) of one POST."""
        headers = {**self.headers, "Content-Type": content_type}
        for attempt in (1, 2):
            try:
                self.conn.request("POST", path, body=body, headers=headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.conn.close()
                if attempt == 2:
                    raise
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        raise AssertionError("unreachable")

    def post_json(self, path: str, value: Any) -> tuple[int, Any]:
        """(status, parsed body) of one POST of `value` as JSON; the body as text when it is not JSON (an error
        page)."""
        status, body = self.post(path, json.dumps(value).encode())
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body.decode(errors="replace")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
