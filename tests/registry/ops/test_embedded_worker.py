"""The embedded default (SQLite, no broker, no other service) runs its background work beside `benchreg serve`: a
supervisor keeps a Celery worker and beat running over a filesystem queue in the data dir
(registry/worker/supervisor.py, registry/worker/broker.py). A report request is answered at once as queued and
rendered by the worker; the worker survives load and unreadable message files; a killed worker or beat reads as not
ready until the supervisor restarts it. Everything listens on 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

import protocol
from registry.worker import heartbeats
from registry.worker.supervisor import Part, Supervisor
from tests.conftest import load_example
from tests.registry.ops.services import ROOT, free_port
from tests.registry.reports.conftest import PRICES, SIZING, fleet_documents

# One server for the module's tests on one xdist worker (`--dist loadgroup`): starting it costs ~30 s here.
# `embedded`: the server drops DATABASE_URL (it is the SQLite default), so CI runs these in its SQLite pass only.
pytestmark = [pytest.mark.xdist_group("embedded-server"), pytest.mark.embedded]


@dataclass
class Embedded:
    base: str
    token: str
    data: Path
    log: Path
    server: subprocess.Popen[bytes]

    def ready(self) -> httpx.Response:
        return httpx.get(f"{self.base}/readyz", timeout=30)

    def wait_ready(self, seconds: float) -> httpx.Response:
        deadline, answer = time.monotonic() + seconds, None
        while time.monotonic() < deadline:
            try:
                answer = self.ready()
                if answer.status_code == 200:
                    return answer
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"not ready after {seconds} s: {answer and answer.text}\n{self.tail()}")

    def pid(self, part: str) -> int:
        beat = heartbeats.read(self.data, part)
        assert beat is not None and beat.pid is not None
        return beat.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self) -> str:
        return self.text()[-4000:]


def _env(data: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "BENCHREG_EMBEDDED_WORKER", "DJANGO_SETTINGS_MODULE")
    }
    env.update(BENCHREG_DATA_DIR=str(data), BENCHREG_THROTTLE_USER="100000/min")
    return env


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Embedded]:
    data = tmp_path_factory.mktemp("embedded")
    env, manage = _env(data), [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    token = (
        subprocess.run(
            [*manage, "create_token", "--username", "lab-embedded", "--scopes", "submit,read", "--grant-role"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    port, log = free_port(), data / "serve.log"
    server = subprocess.Popen(
        [sys.executable, "-m", "registry.cli", "serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    embedded = Embedded(f"http://127.0.0.1:{port}", token, data, log, server)
    try:
        embedded.wait_ready(180)  # the first start migrates nothing but loads Django in three processes
        yield embedded
    finally:
        with contextlib.suppress(ProcessLookupError):  # the last test stops it itself
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
        # the supervisor runs in a session of its own; serve stops it on the way out, and it stops both parts
        for part in (*heartbeats.PARTS, heartbeats.SUPERVISOR):
            assert not heartbeats.read(data, part).process_alive(), f"the {part} outlived serve"  # type: ignore[union-attr]


@pytest.mark.slow
def test_benchreg_serve_renders_reports_in_its_own_worker_process(embedded: Embedded) -> None:
    with httpx.Client(base_url=embedded.base, headers={"Authorization": f"Token {embedded.token}"}, timeout=120) as api:
        runs = [
            api.post(
                "/api/v1/submissions", content=protocol.canonicalize(doc), headers={"Content-Type": "application/json"}
            ).json()["id"]
            for doc in fleet_documents(2)
        ]
        comparison = api.post("/api/v1/comparisons", json={"runs": runs, "prices": PRICES, "sizing": SIZING})
        assert comparison.status_code == 201, comparison.text
        answer = api.post(
            "/api/v1/reports", json={"comparison": comparison.json()["id"], "title": "Embedded", "decision": "d"}
        )
        assert answer.status_code == 202 and answer.json()["status"] == "queued", answer.text
        deadline, report = time.monotonic() + 240, answer.json()
        while report["status"] in ("queued", "rendering") and time.monotonic() < deadline:
            time.sleep(1)
            report = api.get(f"/api/v1/reports/{report['id']}").json()
        assert report["status"] == "ready", (report, embedded.tail())
        pdf = api.get(f"/api/v1/reports/{report['id']}/pdf")
        assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")


PRODUCER = """
import sys, time
from registry.celery import app
end = time.monotonic() + float(sys.argv[1])
n = 0
while time.monotonic() < end:
    app.send_task("celery.accumulate", args=(n,))
    n += 1
    time.sleep(0.005)
print(n)
"""

GARBAGE = {
    "00_empty.celery.msg": b"",
    "01_torn.celery.msg": b'{"body": "eyJh',
    "02_foreign.celery.msg": b'{"hello": "world"}',
    "03_binary.webhooks.msg": b"\x00\xff" * 64,
}


def _unconsumed(messages: Path) -> set[Path]:
    """Message files still there two seconds later: beat keeps publishing (every second, and the sweeps in a burst),
    so a file that appeared a moment ago is pending, not lost; one the worker never takes stays."""
    first = set(messages.iterdir())
    time.sleep(2)
    return first & set(messages.iterdir())


def _chunks(data: bytes, size: int = 1000) -> Iterator[bytes]:
    """`data` as a generator: httpx sends it chunked, with no Content-Length, as `curl -T -` does."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.mark.slow
def test_bodies_sent_chunked_are_read_whole_and_held_to_the_same_limits(embedded: Embedded) -> None:
    """Django reads no body without a Content-Length: a chunked document was refused as lacking every field
    (registry/chunked.py reads it for Django under gunicorn)."""
    export = b'{"index": 0, "outcome": "completed"}\n'
    sha = hashlib.sha256(export).hexdigest()
    doc, other = (load_example("inference-server-h100-bf16") for _ in range(2))
    doc["protocol"] = "benchreg.submission/1.3"
    doc["system"]["name"] = "chunked-1"
    doc["provenance"]["artifacts"] = [
        {"name": "requests.jsonl", "sha256": f"sha256:{sha}", "bytes": len(export), "media_type": "application/jsonl"}
    ]
    other["system"]["name"] = "chunked-2"
    with httpx.Client(base_url=embedded.base, headers={"Authorization": f"Token {embedded.token}"}, timeout=120) as api:
        sent = api.post(
            "/api/v1/submissions",
            content=_chunks(protocol.canonicalize(doc)),
            headers={"Content-Type": "application/json"},
        )
        assert (
            sent.request.headers.get("Transfer-Encoding") == "chunked" and "Content-Length" not in sent.request.headers
        )
        assert sent.status_code == 201, sent.text
        assert sent.json()["digest"] == protocol.digest(doc)

        batch = b"\n".join(protocol.canonicalize(d) for d in (doc, other)) + b"\n"
        lines = api.post(
            "/api/v1/submissions", content=_chunks(batch), headers={"Content-Type": "application/x-ndjson"}
        ).text.splitlines()
        assert [json.loads(line)["result"] for line in lines] == ["known", "stored"]

        artifact = api.put(
            f"/api/v1/submissions/{sent.json()['id']}/artifacts/{sha}",
            content=_chunks(export, 7),
            headers={"Content-Type": "application/octet-stream"},
        )
        assert artifact.status_code == 201, artifact.text
        assert api.get(f"/api/v1/submissions/{sent.json()['id']}/artifacts/{sha}").content == export

        # Past the document's limit: the endpoint's own answer, as with a Content-Length. Past every body's: refused
        # while read, before Django.
        big = api.post(
            "/api/v1/submissions",
            content=_chunks(b" " * (6 * 1024 * 1024), 65536),
            headers={"Content-Type": "application/json"},
        )
        assert big.status_code == 413 and big.json()["code"] == "payload-too-large", big.text
        huge = api.post(
            "/api/v1/submissions",
            content=_chunks(b" " * (40 * 1024 * 1024), 1 << 20),
            headers={"Content-Type": "application/json"},
        )
        assert huge.status_code == 413 and "the most this path accepts" in huge.json()["detail"], huge.text
        runs = api.get("/api/v1/submissions", params={"limit": 100}).json()["results"]
        assert sorted(
            run["digest"] for run in runs if run["digest"] in {protocol.digest(doc), protocol.digest(other)}
        ) == sorted({protocol.digest(doc), protocol.digest(other)})


@pytest.mark.slow
def test_the_worker_survives_load_and_unreadable_message_files(embedded: Embedded) -> None:
    """Beat publishes every second (audit-integrate) while two producer processes publish as fast as they can:
    kombu's own filesystem transport lost its worker to a half-written file within seconds of this."""
    worker = embedded.pid("worker")
    env = {**_env(embedded.data), "BENCHREG_EMBEDDED_WORKER": "1"}
    producers = [
        subprocess.Popen([sys.executable, "-c", PRODUCER, "12"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    time.sleep(5)  # the garbage lands mid-load
    messages = embedded.data / "queue" / "messages"
    for name, content in GARBAGE.items():
        (messages / name).write_bytes(content)
    sent = sum(int(p.communicate(timeout=60)[0]) for p in producers)
    assert all(p.returncode == 0 for p in producers)
    deadline = time.monotonic() + 40
    while _unconsumed(messages) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _unconsumed(messages) == set(), f"{len(_unconsumed(messages))} of {sent} left\n{embedded.tail()}"
    quarantined = {p.name for p in (embedded.data / "queue" / "quarantine").iterdir()}
    assert quarantined == set(GARBAGE)
    assert embedded.pid("worker") == worker, "the worker was restarted: it died under load"
    assert "killed by signal" not in embedded.text() and "exited with status" not in embedded.text()
    assert embedded.ready().status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize("part", ["worker", "beat"])
def test_a_killed_part_reads_as_not_ready_until_the_supervisor_restarts_it(embedded: Embedded, part: str) -> None:
    embedded.wait_ready(60)
    victim = embedded.pid(part)
    os.kill(victim, signal.SIGKILL)
    time.sleep(0.2)
    down = embedded.ready()
    assert down.status_code == 503, down.text
    assert down.headers["Retry-After"]
    check = down.json()["checks"][part]
    assert (
        check["status"] == "failed" and f"embedded {part} is not running (process {victim} is gone)" in check["detail"]
    )
    other = "beat" if part == "worker" else "worker"
    assert down.json()["checks"][other]["status"] == "ok"
    up = embedded.wait_ready(60)
    assert up.json()["checks"][part]["status"] == "ok"
    assert embedded.pid(part) != victim
    assert f"embedded {part} (pid {victim}) killed by signal 9" in embedded.text()
    assert f"embedded {part} restarted" in embedded.text()


@pytest.mark.slow
def test_a_killed_supervisor_reads_as_not_ready_until_serve_restarts_it(embedded: Embedded) -> None:
    """kill -9 of the supervisor: /readyz says so by name (not "the supervisor restarts it"); serve stops the
    orphaned worker and beat, starts a new supervisor, and it a new worker and beat; nothing of the old one is left."""
    embedded.wait_ready(120)
    old = {part: embedded.pid(part) for part in (*heartbeats.PARTS, heartbeats.SUPERVISOR)}
    os.kill(old["supervisor"], signal.SIGKILL)
    deadline, seen = time.monotonic() + 60, None
    while time.monotonic() < deadline:
        seen = embedded.ready()
        if seen.json()["checks"]["supervisor"]["status"] == "failed":
            break
        time.sleep(0.1)
    assert seen is not None and seen.status_code == 503, seen and seen.text
    assert seen.headers["Retry-After"]
    detail = seen.json()["checks"]["supervisor"]["detail"]
    assert f"the embedded supervisor is not running (process {old['supervisor']} is gone)" in detail, detail
    assert "`benchreg serve` starts it again" in detail
    up = embedded.wait_ready(240)
    assert up.json()["checks"]["supervisor"]["status"] == "ok"
    for part, pid in old.items():
        assert embedded.pid(part) != pid, part
        assert not heartbeats.Heartbeat(pid=pid, age_s=0).process_alive(), f"the old {part} (pid {pid}) is left"
    assert f"embedded supervisor (pid {old['supervisor']}) killed by signal 9" in embedded.text(), embedded.tail()
    assert "embedded supervisor restarted" in embedded.text()


def test_a_stop_signal_wakes_the_supervisor_at_once_and_stops_its_parts(tmp_path: Path) -> None:
    """The handler only sets a flag and writes to a pipe: a real SIGTERM, delivered while the loop sleeps or holds
    anything, stops it within a poll, and both parts are stopped with it."""
    parts = [Part(name, [sys.executable, "-c", "import time; time.sleep(120)"]) for name in heartbeats.PARTS]
    supervisor = Supervisor(parts, data_dir=tmp_path, stale_s=60, backoff_max_s=2, heartbeat_s=0.1)
    previous = signal.signal(signal.SIGALRM, supervisor.request_stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        started = time.monotonic()
        supervisor.run()  # in this (main) thread, where the signal lands
        took = time.monotonic() - started
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert took < 3.0 + 5, took  # the parts stop on their SIGTERM at once
    assert all(p.process is not None and p.process.poll() is not None for p in parts)
    beat = heartbeats.read(tmp_path, heartbeats.SUPERVISOR)
    assert beat is not None and beat.pid == os.getpid()


def test_a_stop_request_never_blocks_even_when_its_wake_up_pipe_is_full(tmp_path: Path) -> None:
    """A signal handler that blocked would hang the supervisor: 100,000 requests (the pipe holds 64 KiB) return at
    once, and the loop still starts and ends."""
    supervisor = Supervisor([], data_dir=tmp_path, stale_s=60, backoff_max_s=2)
    started = time.monotonic()
    for _ in range(100_000):
        supervisor.request_stop()
    assert time.monotonic() - started < 30
    loop = threading.Thread(target=supervisor.run)
    loop.start()
    loop.join(timeout=10)
    assert not loop.is_alive()


def test_the_supervisor_restarts_a_dead_part_with_growing_delays_and_kills_a_frozen_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Plain processes in place of Celery: one that exits at once, one that never writes its heartbeat."""
    parts = [
        Part("worker", [sys.executable, "-c", "raise SystemExit(3)"]),
        Part("beat", [sys.executable, "-c", "import time; time.sleep(120)"]),
    ]
    supervisor = Supervisor(parts, data_dir=tmp_path, stale_s=2, backoff_max_s=2)
    thread = threading.Thread(target=supervisor.run)
    with caplog.at_level(logging.INFO, logger="registry.worker.supervisor"):
        thread.start()
        time.sleep(9)
        supervisor.request_stop()
        thread.join(timeout=40)
    assert not thread.is_alive()
    log = caplog.text
    assert "embedded worker (pid" in log and "exited with status 3" in log
    delays = [
        line.rsplit("restarting it in ", 1)[1]
        for line in log.splitlines()
        if "embedded worker" in line and "restarting it in" in line
    ]
    assert delays[:3] == ["1 s", "2 s", "2 s"]  # 1, 2, then capped at backoff_max_s
    assert "embedded beat (pid" in log and "wrote no heartbeat for" in log and "killed by signal 9" in log
    assert all(p.process is None or p.process.poll() is not None for p in parts)


# Last in the module: it stops the module's server.
@pytest.mark.slow
def test_sigterm_to_serve_stops_it_and_every_process_it_started(embedded: Embedded) -> None:
    """SIGTERM to `benchreg serve` alone (what systemd or docker stop send): it stops within a bound, and the
    supervisor, worker and beat (in a session of their own, so not sent the signal) go with it."""
    embedded.wait_ready(120)
    pids = {part: embedded.pid(part) for part in (*heartbeats.PARTS, heartbeats.SUPERVISOR)}
    os.kill(embedded.server.pid, signal.SIGTERM)
    started = time.monotonic()
    embedded.server.wait(timeout=120)
    took = time.monotonic() - started
    print(f"serve stopped {took:.1f} s after SIGTERM (load {os.getloadavg()[0]:.1f})")
    assert took < 60, took
    for part, pid in pids.items():
        assert not heartbeats.Heartbeat(pid=pid, age_s=0).process_alive(), f"the {part} (pid {pid}) outlived serve"
