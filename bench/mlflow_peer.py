"""The MLflow tracking server beside benchreg in `bench.ingest`: the same documents written as MLflow runs.

Not a bench of its own. `bench.ingest --mlflow-python /path/to/python` (or $BENCH_MLFLOW_PYTHON) starts
`mlflow server` from that interpreter (MLflow installed in its own virtual environment, e.g.
`python3 -m venv /work/mlflow-venv && /work/mlflow-venv/bin/pip install mlflow psycopg2-binary`) on the same
PostgreSQL server, in a scratch database of its own, with the same worker count as benchreg's gunicorn. Each
document becomes one MLflow run the way MLflow's own client logs one: `runs/create`, one `runs/log-batch` with the
document's numeric leaves under /metrics as metrics and every other scalar leaf as a param (the same count of values
a benchreg submission stores), and `runs/update` to FINISHED; a run is written when all three have answered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench import lean_http
from devtools import scratch

API = "/api/2.0/mlflow"
MAX_PARAMS_PER_BATCH = 100  # MLflow's limit per runs/log-batch


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, value) of every scalar in a document, paths as MLflow keys ("metrics/throughput/value")."""
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in leaves(item, f"{path}/{key}" if path else key)]
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in leaves(item, f"{path}/{i}")]
    return [(path, value)]


def as_run(body: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(params, metrics) of one document as MLflow's log-batch takes them."""
    params, metrics = [], []
    for key, value in leaves(json.loads(body)):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and key.startswith("metrics/"):
            metrics.append({"key": key, "value": float(value), "timestamp": 0, "step": 0})
        else:
            params.append({"key": key, "value": str(value)[:6000]})
    return params, metrics


def sqlalchemy_url(url: str) -> str:
    """A libpq URL (postgres://…) as SQLAlchemy names PostgreSQL through psycopg2 (MLflow otherwise picks psycopg 3)."""
    return "postgresql+psycopg2://" + url.split("://", 1)[1]


def start(python: str, database_url: str, workers: int, port: int) -> tuple[subprocess.Popen[bytes], str]:
    """`mlflow server` on `database_url` with `workers` workers; returns the process and its base URL once it answers
    (exits the bench if it does not come up)."""
    artifacts = tempfile.mkdtemp(prefix="bench-mlflow-")
    command = [
        python,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        sqlalchemy_url(database_url),
        "--default-artifact-root",
        artifacts,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    # A session of its own: its workers are stopped with it (stop()).
    # Its job runner (huey consumers for GenAI evaluation jobs) does nothing for tracking writes and, started with
    # the server, takes the host's CPU from both servers: off, as a tracking-only deployment would run it.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    # Its log goes to a file: a pipe nobody reads fills up and stops the server.
    log = tempfile.NamedTemporaryFile(prefix="bench-mlflow-", suffix=".log", delete=False)  # noqa: SIM115
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # it creates its schema (alembic) first
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=5.0).status_code == 200:
                return server, base
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            stop(server)
            error = Path(log.name).read_text(errors="replace")[-2000:]
            sys.exit(f"bench.ingest: mlflow server did not come up on {base}:\n{error}")
        time.sleep(0.5)


def experiment(base: str, name: str) -> str:
    """A new experiment's id. Asked up to 10 times: on a busy host a worker that answered /health may drop the
    first requests while its siblings still start."""
    for attempt in range(10):
        try:
            response = httpx.post(f"{base}{API}/experiments/create", json={"name": name}, timeout=60)
            response.raise_for_status()
            return str(response.json()["experiment_id"])
        except httpx.TransportError:
            if attempt == 9:
                raise
            time.sleep(2)
    raise AssertionError("unreachable")


def _log_run(client: lean_http.Connection, experiment_id: str, name: str, run: tuple[list[Any], list[Any]]) -> None:
    params, metrics = run
    now = int(time.time() * 1000)
    status, created = client.post_json(
        f"{API}/runs/create", {"experiment_id": experiment_id, "run_name": name, "start_time": now}
    )
    assert status == 200, str(created)[:300]
    run_id = created["run"]["info"]["run_id"]
    for start_at in range(0, max(len(params), 1), MAX_PARAMS_PER_BATCH):
        chunk = params[start_at : start_at + MAX_PARAMS_PER_BATCH]
        batch = {"run_id": run_id, "params": chunk, "metrics": metrics if start_at == 0 else []}
        status, logged = client.post_json(f"{API}/runs/log-batch", batch)
        assert status == 200, str(logged)[:300]
    status, finished = client.post_json(f"{API}/runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": now})
    assert status == 200, str(finished)[:300]


def ingest(base: str, experiment_id: str, bodies: list[bytes], clients: int) -> tuple[float, list[float]]:
    """Each document logged as one run by `clients` concurrent clients: (wall seconds, per-run latencies)."""
    runs = [as_run(body) for body in bodies]  # converted before timing, as benchreg's bodies are serialised

    def send(indices: list[int]) -> list[float]:
        times = []
        with lean_http.Connection(base, timeout=60) as client:  # the same client as benchreg's in bench.ingest
            for i in indices:
                t0 = time.perf_counter()
                _log_run(client, experiment_id, f"run-{i}", runs[i])
                times.append(time.perf_counter() - t0)
        return times

    chunks = [list(range(len(runs)))[i::clients] for i in range(clients)]
    latencies: list[float] = []
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for times in pool.map(send, chunks):
            latencies.extend(times)
    return time.perf_counter() - t0, latencies


def stop(server: subprocess.Popen[bytes]) -> None:
    """Stop the server and its workers (its own process group)."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(10)


def create_database(admin_url: str, name: str) -> str:
    """An empty scratch database for MLflow (never a copy of benchreg's template), dropped and created; its URL."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return scratch.database_url(admin_url, name)
