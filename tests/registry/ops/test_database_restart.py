"""Faults end in a clear answer: the registry's own PostgreSQL cluster is stopped and restarted under clients.

The cluster and the server are private to this module (tests/registry/ops/services.py): initdb in a temporary directory,
its own port, gunicorn with two workers. While the database is down every API answer is a 503 problem with
Retry-After (never a 500) and nothing is stored; `benchreg submit` and RegistryClient retry through the restart
and say so; every document ends up stored exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

import protocol
from devtools.documents import variant
from runners.client import RegistryClient, RetryPolicy
from tests.conftest import load_example
from tests.registry.ops.services import ROOT, PrivateCluster, RegistryServer

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Any:
    pg = PrivateCluster()
    pg.start()
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE benchreg")
    yield pg
    pg.remove()


@pytest.fixture(scope="module")
def registry(cluster: PrivateCluster, tmp_path_factory: pytest.TempPathFactory) -> Any:
    env = {
        **os.environ,
        "DATABASE_URL": cluster.database_url("benchreg"),
        "BENCHREG_DATA_DIR": str(tmp_path_factory.mktemp("data")),
        "CELERY_BROKER_URL": "",
        "BENCHREG_THROTTLE_USER": "100000/min",
        "BENCHREG_THROTTLE_ANON": "100000/min",
        "BENCHREG_RETRY_AFTER_S": "1",
        "DJANGO_SETTINGS_MODULE": "registry.settings",
    }
    server = RegistryServer(env)
    server.manage("migrate", "-v0")
    token = (
        server.manage("create_token", "--username", "lab-restart", "--scopes", "submit,read", "--grant-role")
        .strip()
        .splitlines()[-1]
    )
    server.start()
    yield server, token
    server.stop()


def _document(label: str) -> dict[str, Any]:
    return variant(load_example("inference-server-h100-bf16"), f"restart-{label}")


def _stored_digests(server: RegistryServer, token: str) -> list[str]:
    response = httpx.get(
        f"{server.url}/api/v1/submissions",
        params={"limit": 500},
        headers={"Authorization": f"Token {token}"},
        timeout=30,
    )
    response.raise_for_status()
    return [run["digest"] for run in response.json()["results"]]


def _restart_after(cluster: PrivateCluster, seconds: float) -> threading.Thread:
    def later() -> None:
        time.sleep(seconds)
        cluster.start()

    thread = threading.Thread(target=later)
    thread.start()
    return thread


def test_with_the_database_down_the_api_answers_503_problems_and_stores_nothing(
    cluster: PrivateCluster, registry: Any
) -> None:
    server, token = registry
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    document = _document("refused")
    body = protocol.canonicalize(document)
    cluster.stop()
    try:
        answers = [
            httpx.post(f"{server.url}/api/v1/submissions", content=body, headers=headers, timeout=30) for _ in range(4)
        ]
        listing = httpx.get(f"{server.url}/api/v1/submissions", headers=headers, timeout=30)
        alive = httpx.get(f"{server.url}/healthz", timeout=30)
        ready = httpx.get(f"{server.url}/readyz", timeout=30)
    finally:
        cluster.start()
    for answer in [*answers, listing]:
        assert answer.status_code == 503, answer.text
        assert answer.headers["Content-Type"] == "application/problem+json"
        assert answer.headers["Retry-After"] == "1"
        assert answer.json()["code"] == "database-unavailable"
    assert alive.status_code == 200  # liveness does not depend on the database: nobody restarts a sound web process
    assert ready.status_code == 503 and ready.json()["checks"]["database"]["status"] == "failed"
    assert ready.headers["Retry-After"] == "1"
    assert protocol.digest(document) not in _stored_digests(server, token), "stored while its client was told 503"
    assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200


def test_benchreg_submit_retries_through_a_restart_and_says_so(
    cluster: PrivateCluster, registry: Any, tmp_path: Path
) -> None:
    server, token = registry
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_document("cli")))
    cluster.stop()
    restarter = _restart_after(cluster, 3.0)
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", "submit", str(path), "--server", server.url, "--token", token],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    restarter.join()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stored as run" in done.stdout and "retr" in done.stdout.split("stored as run")[1], done.stdout
    assert "retrying: POST /api/v1/submissions: registry answered 503" in done.stderr, done.stderr
    again = subprocess.run(
        [sys.executable, "-m", "registry.cli", "submit", str(path), "--server", server.url, "--token", token],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "already known as run" in again.stdout, again.stdout


def test_four_clients_through_a_restart_store_every_run_exactly_once(cluster: PrivateCluster, registry: Any) -> None:
    server, token = registry
    documents = {f"{c}-{i}": _document(f"many-{c}-{i}") for c in range(4) for i in range(5)}
    outcomes: dict[str, Any] = {}
    notes: list[str] = []

    def client(c: int) -> None:
        with RegistryClient(
            server.url, token, retry=RetryPolicy(attempts=12, initial=0.2, cap=3.0), on_retry=notes.append
        ) as api:
            for i in range(5):
                outcomes[f"{c}-{i}"] = api.submit(documents[f"{c}-{i}"])
                time.sleep(0.2)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    cluster.stop()
    cluster.start()  # pg_ctl waits for both: the clients meet the outage and the restart
    for thread in threads:
        thread.join(timeout=240)
    assert {o.status for o in outcomes.values()} <= {"stored", "known"}, outcomes
    assert len(outcomes) == 20
    assert not [n for n in notes if "answered 500" in n], notes
    stored = _stored_digests(server, token)
    wanted = {o.digest for o in outcomes.values()}
    assert wanted <= set(stored) and len(stored) == len(set(stored)), "a run is missing or stored twice"


def test_the_mlperf_import_retries_through_a_restart_and_says_so(cluster: PrivateCluster, registry: Any) -> None:
    from tests.registry.importers.test_admin_upload import SAMPLE

    server, _ = registry
    cluster.stop()
    # The database comes back once the command has said it is retrying (not after a fixed delay: on a busy host
    # the command may not reach the database within any delay chosen here, and would never meet the outage).
    command = subprocess.Popen(
        [sys.executable, "-m", "registry.cli", "import", "mlperf", str(SAMPLE), "--no-progress"],
        cwd=ROOT,
        env=server.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []

    def restart_once_retrying() -> None:
        assert command.stderr is not None
        restarted = False
        for line in command.stderr:
            said.append(line)
            if not restarted and "retrying: the database is unavailable" in line:
                cluster.start()
                restarted = True
        if not restarted:
            cluster.start()  # the command ended without meeting the outage: the assertions below say so

    restarter = threading.Thread(target=restart_once_retrying)
    restarter.start()
    try:
        stdout = command.stdout.read() if command.stdout else ""  # stderr is drained by the thread meanwhile
        command.wait(timeout=180)
    finally:
        restarter.join(timeout=60)
    done = subprocess.CompletedProcess(command.args, command.returncode, stdout, "".join(said))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "retrying: the database is unavailable (OperationalError" in done.stderr, done.stderr
    assert "the import succeeded after" in done.stderr and "Traceback" not in done.stderr
    again = subprocess.run(
        [sys.executable, "-m", "registry.cli", "import", "mlperf", str(SAMPLE), "--no-progress"],
        cwd=ROOT,
        env=server.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert again.returncode == 0 and "retrying" not in again.stderr
    assert "│      0 │     3 │" in again.stdout, again.stdout


def test_the_mlperf_import_gives_up_with_a_clear_message(cluster: PrivateCluster, registry: Any) -> None:
    from tests.registry.importers.test_admin_upload import SAMPLE

    server, _ = registry
    cluster.stop()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "registry.cli", "import", "mlperf", str(SAMPLE), "--no-progress", "--attempts", "2"],
            cwd=ROOT,
            env=server.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        cluster.start()
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "the database stayed unavailable after 2 attempt(s): OperationalError" in done.stderr, done.stderr
