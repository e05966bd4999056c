"""The agent's side, without a registry: one job's steps, the HTTP mapping, the credential file, the worker."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

import protocol
from runners.agent import cli, credentials, jobs, worker
from runners.agent.credentials import Credential
from runners.agent.jobs import Claim, JobBusy, JobGone, Submitted, run_job
from runners.agent.remote import HttpJobRegistry
from runners.client import RegistryClient, RegistryError, RetryPolicy
from tests.conftest import load_example


class FakeRegistry:
    """Records calls; answers as told."""

    def __init__(self, *, claim_error: Exception | None = None, submit: list[Any] | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.claim_error = claim_error
        self.answers = submit or [Submitted("stored", run_id=7, digest="sha256:" + "0" * 64)]
        self.documents: list[dict[str, Any]] = []

    def claim(self, job_id: int, *, claimant: str, lease_seconds: int) -> Claim:
        self.calls.append(("claim", claimant))
        if self.claim_error:
            raise self.claim_error
        return Claim(
            job=job_id,
            agent="rig-a",
            spec={"phase": "inference", "workload": "mlp-classifier"},
            attempts=1,
            soft_time_limit=60,
            time_limit=90,
        )

    def start(self, job_id: int, *, claimant: str) -> None:
        self.calls.append(("start", job_id))

    def heartbeat(self, job_id: int, *, claimant: str, lease_seconds: int) -> None:
        self.calls.append(("heartbeat", job_id))

    def submit(self, document: dict[str, Any]) -> Submitted:
        self.documents.append(document)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def complete(self, job_id: int, *, run_id: int, digest: str) -> None:
        self.calls.append(("complete", run_id))

    def fail(self, job_id: int, *, claimant: str, error: str, timed_out: bool = False) -> None:
        self.calls.append(("fail", (error, timed_out)))


def fake_run(spec: Any, folder: Path) -> dict[str, Any]:
    fake_run.count += 1  # type: ignore[attr-defined]
    return load_example("inference-offline-cpu-int8")


@pytest.fixture(autouse=True)
def _fresh() -> None:
    fake_run.count = 0  # type: ignore[attr-defined]
    jobs.pending.clear()


def test_a_job_is_claimed_run_submitted_with_its_provenance_and_confirmed() -> None:
    registry = FakeRegistry()
    outcome = run_job(registry, 42, claimant="w1", run=fake_run)
    assert outcome.outcome == "submitted" and outcome.run_id == 7
    assert [c[0] for c in registry.calls] == ["claim", "start", "complete"]
    provenance = registry.documents[0]["provenance"]
    assert provenance["job"] == "42" and provenance["agent"] == "rig-a"
    protocol.check(registry.documents[0])


def test_a_job_that_is_gone_is_not_run() -> None:
    outcome = run_job(FakeRegistry(claim_error=JobGone("job 42 is submitted")), 42, claimant="w", run=fake_run)
    assert outcome.outcome == "skipped" and fake_run.count == 0  # type: ignore[attr-defined]


def test_a_job_that_is_gone_leaves_an_earlier_attempts_files_and_says_where(tmp_path: Path) -> None:
    left = jobs.job_folder(42, tmp_path) / "serving-requests.jsonl"  # a stored run whose upload was cut short
    left.parent.mkdir()
    left.write_text("{}\n")
    gone = FakeRegistry(claim_error=JobGone("job 42 is submitted"))
    outcome = run_job(gone, 42, claimant="w", run=fake_run, work_dir=tmp_path)
    assert outcome.detail == f"job 42 is submitted; files of an earlier attempt stay in {left.parent}"
    assert left.is_file()


def test_a_runner_that_fails_leaves_no_folder_behind(tmp_path: Path) -> None:
    def broken(spec: Any, folder: Path) -> dict[str, Any]:
        (folder / "half-written.jsonl").write_text("{")
        raise RuntimeError("CUDA out of memory")

    assert run_job(FakeRegistry(), 42, claimant="w", run=broken, work_dir=tmp_path).outcome == "failed"
    assert not jobs.job_folder(42, tmp_path).exists()


def test_a_busy_job_is_retried_by_the_caller() -> None:
    with pytest.raises(RegistryError):
        run_job(FakeRegistry(claim_error=JobBusy("held")), 42, claimant="w", run=fake_run)


def test_a_runner_failure_is_reported_with_its_message() -> None:
    registry = FakeRegistry()

    def broken(spec: Any, folder: Path) -> dict[str, Any]:
        raise ValueError("int8 needs calibration data")

    outcome = run_job(registry, 42, claimant="w", run=broken)
    assert outcome.outcome == "failed"
    assert ("fail", ("ValueError: int8 needs calibration data", False)) in registry.calls


def test_a_soft_time_limit_is_reported_as_timed_out() -> None:
    class Soft(Exception):
        pass

    def slow(spec: Any, folder: Path) -> dict[str, Any]:
        raise Soft()

    registry = FakeRegistry()
    assert run_job(registry, 42, claimant="w", run=slow, timeout_errors=(Soft,)).outcome == "timed_out"
    assert registry.calls[-1][0] == "fail" and registry.calls[-1][1][1] is True


def test_a_retry_after_a_transient_submit_error_sends_the_same_document() -> None:
    registry = FakeRegistry(submit=[RegistryError("502"), Submitted("known", run_id=7, digest="sha256:" + "0" * 64)])
    with pytest.raises(RegistryError):
        run_job(registry, 42, claimant="w", run=fake_run)
    assert run_job(registry, 42, claimant="w", run=fake_run).outcome == "submitted"
    assert fake_run.count == 1  # type: ignore[attr-defined]
    assert protocol.digest(registry.documents[0]) == protocol.digest(registry.documents[1])


def test_a_job_that_already_has_a_run_ends_as_a_duplicate() -> None:
    registry = FakeRegistry(submit=[Submitted("conflict", message="job 42 already has run 3")])
    assert run_job(registry, 42, claimant="w", run=fake_run).outcome == "duplicate"
    assert "complete" not in [c[0] for c in registry.calls]


def test_the_lease_is_renewed_while_the_runner_works() -> None:
    import time

    registry = FakeRegistry()

    def slow(spec: Any, folder: Path) -> dict[str, Any]:
        time.sleep(0.35)
        return fake_run(spec)

    run_job(registry, 42, claimant="w", run=slow, heartbeat_every=0.1)
    assert sum(1 for c in registry.calls if c[0] == "heartbeat") >= 2


def http(handler: Any) -> HttpJobRegistry:
    # every retry the client would make, without its real backoff (a 503 otherwise sleeps about 15 s of it)
    quick = RetryPolicy(attempts=6, initial=0.001, cap=0.01)
    return HttpJobRegistry(
        RegistryClient("http://registry", "tok", transport=httpx.MockTransport(handler), retry=quick)
    )


def problem(status: int, code: str) -> httpx.Response:
    return httpx.Response(status, json={"status": status, "code": code, "detail": code})


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (problem(409, "job-leased"), JobBusy),
        (problem(409, "job-finished"), JobGone),
        (problem(404, "not-found"), JobGone),
        (problem(401, "not-authenticated"), JobGone),
        (problem(503, "down"), RegistryError),
    ],
)
def test_http_answers_map_to_the_job_protocol(answer: httpx.Response, error: type[Exception]) -> None:
    with pytest.raises(error):
        http(lambda request: answer).claim(1, claimant="w", lease_seconds=10)


def test_http_claim_reads_the_spec_and_submit_reads_the_run() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/jobs/5/claim":
            assert json.loads(request.content) == {"claimant": "w", "lease_seconds": 10}
            return httpx.Response(
                200,
                json={
                    "id": 5,
                    "agent": "rig-a",
                    "spec": {"phase": "inference"},
                    "attempts": 1,
                    "soft_time_limit": 60,
                    "time_limit": 90,
                },
            )
        if request.url.path == "/api/v1/submissions":
            return httpx.Response(409, json={"code": "job-has-run", "detail": "job 5 already has run 1"})
        raise AssertionError(request.url)

    remote = http(handler)
    assert remote.claim(5, claimant="w", lease_seconds=10).spec == {"phase": "inference"}
    assert remote.submit(load_example("inference-offline-cpu-int8")).status == "conflict"


def test_the_credential_file_is_private_and_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "conf" / "agent.json"
    cred = Credential(server="https://r", token="brt_x", agent="rig-a", agent_id=3, queue="q", broker_url="redis://b")
    credentials.save(cred, path)
    path.chmod(0o644)
    credentials.save(cred, path)  # rewriting an existing file makes it private again
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    monkeypatch.setenv("BENCHREG_AGENT_BROKER_URL", "redis://elsewhere")
    monkeypatch.setenv("BENCHREG_AGENT_LEASE_SECONDS", "9")
    loaded = credentials.load(path)
    assert loaded.token == "brt_x" and loaded.broker_url == "redis://elsewhere" and loaded.lease_seconds == 9
    assert "lease_seconds" not in json.loads(path.read_text())


def test_enroll_registers_this_machine_and_saves_its_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: dict[str, Any] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        sent.update(json.loads(request.content))
        return httpx.Response(
            201,
            json={
                "agent": {"id": 4, "name": "rig-a", "queue": "benchreg.agent.rig-a.1"},
                "token": "brt_agent",
                "broker_url": "redis://broker:6379/0",
            },
        )

    monkeypatch.setattr(
        cli,
        "RegistryClient",
        lambda server, token: RegistryClient(server, token, transport=httpx.MockTransport(handler)),
    )
    path = tmp_path / "agent.json"
    assert (
        cli.main(["enroll", "--server", "https://r", "--token", "bre_once", "--name", "rig-a", "--config", str(path)])
        == 0
    )
    assert sent["token"] == "bre_once" and {"system", "software", "inventory"} <= set(sent["inventory"])
    saved = credentials.load(path)
    assert (saved.token, saved.queue, saved.broker_url) == (
        "brt_agent",
        "benchreg.agent.rig-a.1",
        "redis://broker:6379/0",
    )


def test_the_agent_worker_consumes_its_own_queue_one_job_at_a_time() -> None:
    cred = Credential(
        server="https://r", token="t", agent="rig-a", agent_id=1, queue="benchreg.agent.rig-a.x", broker_url="redis://b"
    )
    argv = cli.worker_argv(cred)
    assert argv[argv.index("--queues") + 1] == cred.queue
    assert argv[argv.index("--concurrency") + 1] == "1" and argv[argv.index("--prefetch-multiplier") + 1] == "1"
    app = worker.configure(cred)
    assert app.conf.task_serializer == "json" and app.conf.accept_content == ["json"]
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1 and app.conf.task_default_queue == cred.queue
    task = app.tasks[worker.TASK_NAME]
    assert task.autoretry_for == (RegistryError,) and task.retry_backoff
