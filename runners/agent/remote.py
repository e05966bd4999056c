"""The registry's job endpoints over HTTP(S), as a `JobRegistry` for runners.agent.jobs.

Status codes map to the job protocol: 2xx done; 409 `job-leased` -> JobBusy (retry later); other 409, 404,
401 and 403 -> JobGone (nothing to do: finished, cancelled, not ours, or the agent was revoked); network
errors and 5xx -> runners.client.RegistryError (retry with backoff).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

import protocol

from ..client import RegistryClient
from .jobs import Claim, JobBusy, JobGone, Submitted

JOBS = "/api/v1/jobs"


def _problem(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


class HttpJobRegistry:
    def __init__(self, client: RegistryClient) -> None:
        self.client = client

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.request("POST", path, json=body)
        if response.is_success:
            return _problem(response)
        problem = _problem(response)
        detail = f"{response.status_code} {problem.get('code', '')}: {problem.get('detail', response.text[:200])}"
        if response.status_code == 409 and problem.get("code") == "job-leased":
            raise JobBusy(detail)
        if response.status_code in (401, 403, 404, 409):
            raise JobGone(detail)
        raise JobGone(f"unexpected answer {detail}")  # 4xx the agent cannot fix by retrying

    def claim(self, job_id: int, *, claimant: str, lease_seconds: int) -> Claim:
        job = self._post(f"{JOBS}/{job_id}/claim", {"claimant": claimant, "lease_seconds": lease_seconds})
        return Claim(
            job=job["id"],
            agent=job["agent"],
            spec=job["spec"],
            attempts=job["attempts"],
            soft_time_limit=job["soft_time_limit"],
            time_limit=job["time_limit"],
        )

    def arrive(self, job_id: int, *, claimant: str, lease_seconds: int, endpoint: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"claimant": claimant, "lease_seconds": lease_seconds}
        return self._post(f"{JOBS}/{job_id}/arrive", body | ({"endpoint": endpoint} if endpoint else {}))

    def group(self, job_id: int) -> dict[str, Any]:
        response = self.client.request("GET", f"{JOBS}/{job_id}/group")
        if not response.is_success:
            problem = _problem(response)
            raise JobGone(f"{response.status_code} {problem.get('code', '')}: {problem.get('detail', '')}")
        return _problem(response)

    def start(self, job_id: int, *, claimant: str) -> None:
        self._post(f"{JOBS}/{job_id}/start", {"claimant": claimant})

    def heartbeat(self, job_id: int, *, claimant: str, lease_seconds: int) -> None:
        self._post(f"{JOBS}/{job_id}/heartbeat", {"claimant": claimant, "lease_seconds": lease_seconds})

    def fail(self, job_id: int, *, claimant: str, error: str, timed_out: bool = False) -> None:
        self._post(f"{JOBS}/{job_id}/fail", {"claimant": claimant, "error": error, "timed_out": timed_out})

    def complete(self, job_id: int, *, run_id: int, digest: str) -> None:
        self._post(f"{JOBS}/{job_id}/complete", {"run": run_id, "digest": digest})

    def submit(self, document: dict[str, Any]) -> Submitted:
        """POST /api/v1/submissions, the path every run takes, with the agent's own token."""
        response = self.client.request(
            "POST",
            "/api/v1/submissions",
            content=protocol.canonicalize(document),
            headers={"Content-Type": "application/json"},
        )
        body = _problem(response)
        if response.status_code in (200, 201):
            return Submitted(
                "stored" if response.status_code == 201 else "known", run_id=body.get("id"), digest=body.get("digest")
            )
        message = str(body.get("detail") or f"HTTP {response.status_code}")
        if response.status_code == 409:
            return Submitted("conflict", message=message)
        return Submitted("rejected", message=message, errors=list(body.get("errors") or []))

    def upload_artifact(self, run_id: int, sha256: str, path: Path) -> tuple[bool, str]:
        """PUT one file the stored run's document names, as `benchreg run serving --submit` does (the client's
        bounded retries of transient failures included)."""
        return self.client.upload_artifact(run_id, sha256, path)

    def heartbeat_agent(self, inventory: dict[str, Any] | None = None) -> dict[str, Any]:
        """The agent's own heartbeat (online/offline), optionally with a fresh inventory."""
        return self._post("/api/v1/agents/heartbeat", {"inventory": inventory} if inventory else {})
