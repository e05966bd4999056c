"""One job from start to end, against any `JobRegistry`: the registry's HTTP API, or its services in-process.

    claim (conditional, leased) -> start -> run the bundled runner, or measure the serving level the job names
    (runners.api.execute_job, in the job's folder) -> submit the document (provenance.job and provenance.agent
    filled) -> confirm -> upload each file the document names (runners.uploads, as `--submit` does)

Safe to run twice for one job: a second claim of a finished job answers "gone" and nothing happens; a document
for a job that already has a run is refused by the registry. The document of a claimed job is kept in memory
until it is accepted, and the files it names stay in the job's folder (`job_folder`) until they are uploaded, so a
retry after a transient submit error sends the same bytes (same digest: idempotent) instead of measuring again,
and uploads the same files (the same bytes again answer the copy kept). A file that cannot be uploaded (the
registry refuses it, or stays unreachable through the client's bounded retries) leaves the run stored: the
job's outcome names the file, why, and where it stays.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import protocol

from ..api import JobSpec, execute_job, job_spec
from ..client import RegistryError
from ..uploads import upload_named

log = logging.getLogger(__name__)
WORK_DIR_ENV = "BENCHREG_AGENT_WORK_DIR"  # where a job's files are written until uploaded (default: a temp folder)


class JobGone(Exception):
    """The job is not this agent's to run: finished, cancelled, unknown, or the agent was revoked."""


class JobBusy(RegistryError):
    """Another worker of this agent holds a live lease on the job. Transient: try again later."""


@dataclass(frozen=True)
class Claim:
    job: int
    agent: str
    spec: dict[str, Any]
    attempts: int
    soft_time_limit: int
    time_limit: int


@dataclass(frozen=True)
class Submitted:
    """What the registry did with the document: stored, known (same digest), conflict (job has another run or
    is finished) or rejected (invalid, or refused)."""

    status: str
    run_id: int | None = None
    digest: str | None = None
    message: str = ""
    errors: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class JobOutcome:
    job: int
    outcome: str  # submitted, duplicate, skipped, failed, timed_out
    run_id: int | None = None
    digest: str | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class JobRegistry(Protocol):
    """What a job needs from the registry. Transient failures raise runners.client.RegistryError."""

    def claim(self, job_id: int, *, claimant: str, lease_seconds: int) -> Claim: ...
    def start(self, job_id: int, *, claimant: str) -> None: ...
    def heartbeat(self, job_id: int, *, claimant: str, lease_seconds: int) -> None: ...
    def submit(self, document: dict[str, Any]) -> Submitted: ...
    def complete(self, job_id: int, *, run_id: int, digest: str) -> None: ...
    def fail(self, job_id: int, *, claimant: str, error: str, timed_out: bool = False) -> None: ...
    def upload_artifact(self, run_id: int, sha256: str, path: Path) -> tuple[bool, str]: ...


# Documents measured but not yet accepted, by job id (one worker process runs one job at a time).
pending: dict[int, dict[str, Any]] = {}


def job_folder(job_id: int, root: Path | None = None) -> Path:
    """Where job `job_id` writes the files its document names, until they are uploaded: `root` (default
    $BENCHREG_AGENT_WORK_DIR, else a folder of the system's temporary directory) / job-<id>."""
    base = root or Path(os.environ.get(WORK_DIR_ENV) or Path(tempfile.gettempdir()) / "benchreg-agent")
    return base / f"job-{job_id}"


def upload_words(
    registry: JobRegistry, job_id: int, document: dict[str, Any], folder: Path, run_id: int
) -> tuple[str, bool]:
    """Upload each file the stored run's document names from `folder`: each outcome in words ("" when it names
    none), and whether every one was kept. A file not uploaded stays where it is, and is said (and logged)."""
    uploads = upload_named(registry, document, folder, run_id)
    for upload in uploads:
        (log.info if upload.uploaded else log.warning)("job %s: %s", job_id, upload.line())
    return "; ".join(upload.line() for upload in uploads), all(upload.uploaded for upload in uploads)


def with_provenance(document: dict[str, Any], *, job: int, agent: str) -> dict[str, Any]:
    """The document with provenance.job and provenance.agent set, validated again."""
    provenance = {**document["provenance"], "job": str(job), "agent": agent}
    return protocol.check({**document, "provenance": provenance}).document


class LeaseKeeper(threading.Thread):
    """Renews the job's lease every `every` seconds while the runner works; stops when told or when lost."""

    def __init__(self, registry: JobRegistry, job_id: int, claimant: str, lease_seconds: int, every: float) -> None:
        super().__init__(name=f"lease-{job_id}", daemon=True)
        self.registry, self.job_id, self.claimant = registry, job_id, claimant
        self.lease_seconds, self.every = lease_seconds, every
        self.stopped = threading.Event()
        self.lost: str | None = None

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                self.registry.heartbeat(self.job_id, claimant=self.claimant, lease_seconds=self.lease_seconds)
            except JobGone as exc:  # cancelled, or taken over: the result will be refused; say so once
                self.lost = str(exc)
                log.warning("job %s: lease lost: %s", self.job_id, exc)
                return
            except Exception as exc:  # a missed renewal is not fatal; the lease outlives a few of them
                log.warning("job %s: lease renewal failed: %s", self.job_id, exc)


def _measure(
    registry: JobRegistry,
    claim: Claim,
    claimant: str,
    run: Callable[[JobSpec, Path], dict[str, Any]],
    timeout_errors: tuple[type[BaseException], ...],
    folder: Path,
) -> dict[str, Any] | JobOutcome:
    """Run the job's spec in `folder`; on failure report it and return the outcome instead of a document."""
    try:
        registry.start(claim.job, claimant=claimant)
        return with_provenance(run(job_spec(claim.spec), folder), job=claim.job, agent=claim.agent)
    except JobGone as exc:
        return JobOutcome(claim.job, "skipped", detail=str(exc))
    except timeout_errors as exc:
        error, status = f"soft time limit of {claim.soft_time_limit} s reached ({type(exc).__name__})", "timed_out"
    except RegistryError:
        raise
    except Exception as exc:  # the runner's own failure is the job's result, reported with its message
        error, status = f"{type(exc).__name__}: {exc}", "failed"
    return _report_failure(registry, claim, claimant, error, status)


def _report_failure(registry: JobRegistry, claim: Claim, claimant: str, error: str, status: str) -> JobOutcome:
    log.warning("job %s %s: %s", claim.job, status, error)
    try:
        registry.fail(claim.job, claimant=claimant, error=error, timed_out=status == "timed_out")
    except JobGone as exc:
        return JobOutcome(claim.job, "skipped", detail=f"{error}; and then: {exc}")
    return JobOutcome(claim.job, status, detail=error)


def run_job(
    registry: JobRegistry,
    job_id: int,
    *,
    claimant: str,
    lease_seconds: int = 120,
    heartbeat_every: float | None = None,
    run: Callable[[JobSpec, Path], dict[str, Any]] = execute_job,
    timeout_errors: tuple[type[BaseException], ...] = (),
    work_dir: Path | None = None,
) -> JobOutcome:
    """Run one job end to end and say what became of it.

    Raises runners.client.RegistryError (network, 5xx, JobBusy) for the caller to retry with backoff; every
    other outcome is returned. `timeout_errors` are the exceptions that mean "soft time limit reached";
    `work_dir` holds the job's folder (`job_folder`).
    """
    folder = job_folder(job_id, work_dir)
    claim = _claim(registry, job_id, claimant, lease_seconds, folder)
    if isinstance(claim, JobOutcome):
        return claim
    with _lease(registry, job_id, claimant, lease_seconds, heartbeat_every):
        measured = _pending_or_measured(registry, job_id, claim, claimant, run, timeout_errors, folder)
    if isinstance(measured, JobOutcome):
        shutil.rmtree(folder, ignore_errors=True)
        return measured
    return _deliver(registry, job_id, measured, claimant, folder)


def _claim(registry: JobRegistry, job_id: int, claimant: str, lease_seconds: int, folder: Path) -> Claim | JobOutcome:
    try:
        return registry.claim(job_id, claimant=claimant, lease_seconds=lease_seconds)
    except JobGone as exc:
        pending.pop(job_id, None)
        log.info("job %s: nothing to do: %s", job_id, exc)
        left = any(folder.iterdir()) if folder.is_dir() else False
        # an earlier attempt's files (stored run, upload cut short): kept for whoever uploads them by hand
        return JobOutcome(
            job_id, "skipped", detail=str(exc) + (f"; files of an earlier attempt stay in {folder}" if left else "")
        )


@contextlib.contextmanager
def _lease(
    registry: JobRegistry, job_id: int, claimant: str, lease_seconds: int, heartbeat_every: float | None
) -> Iterator[None]:
    """Renew the lease every `heartbeat_every` seconds (if set) while the block runs: the lease guards the
    measurement; delivery is guarded by the registry."""
    keeper = LeaseKeeper(registry, job_id, claimant, lease_seconds, heartbeat_every) if heartbeat_every else None
    if keeper is not None:
        keeper.start()
    try:
        yield
    finally:
        if keeper is not None:
            keeper.stopped.set()


def _pending_or_measured(
    registry: JobRegistry,
    job_id: int,
    claim: Claim,
    claimant: str,
    run: Callable[[JobSpec, Path], dict[str, Any]],
    timeout_errors: tuple[type[BaseException], ...],
    folder: Path,
) -> dict[str, Any] | JobOutcome:
    """The document measured earlier and not yet delivered (its files still in `folder`), else a new measurement
    in an emptied `folder` (kept until delivered)."""
    document = pending.get(job_id)
    if document is None:
        shutil.rmtree(folder, ignore_errors=True)  # an interrupted attempt's files name no document we hold
        folder.mkdir(parents=True, exist_ok=True)
        measured = _measure(registry, claim, claimant, run, timeout_errors, folder)
        if isinstance(measured, JobOutcome):
            return measured
        document = pending[job_id] = measured
    return document


def _deliver(registry: JobRegistry, job_id: int, document: dict[str, Any], claimant: str, folder: Path) -> JobOutcome:
    submitted = registry.submit(document)  # RegistryError propagates: the caller retries, same document
    pending.pop(job_id, None)
    if submitted.status in ("stored", "known"):
        assert submitted.run_id is not None and submitted.digest is not None
        try:
            registry.complete(job_id, run_id=submitted.run_id, digest=submitted.digest)
        except JobGone as exc:
            log.warning("job %s: run %s stored but not confirmed: %s", job_id, submitted.run_id, exc)
        words, all_kept = upload_words(registry, job_id, document, folder, submitted.run_id)
        if all_kept:  # else the folder stays, with the files not uploaded, for whoever uploads them by hand
            shutil.rmtree(folder, ignore_errors=True)
        return JobOutcome(job_id, "submitted", run_id=submitted.run_id, digest=submitted.digest, detail=words)
    shutil.rmtree(folder, ignore_errors=True)  # no run of this document: the files it names serve nothing
    if submitted.status == "conflict":  # another delivery of this job won, or the job was cancelled
        return JobOutcome(job_id, "duplicate", detail=submitted.message)
    error = f"the registry refused the document: {submitted.message} {submitted.errors or ''}".rstrip()
    log.error("job %s: %s", job_id, error)
    with contextlib.suppress(JobGone):  # cancelled meanwhile: the job is final either way
        registry.fail(job_id, claimant=claimant, error=error)
    return JobOutcome(job_id, "failed", detail=error)
