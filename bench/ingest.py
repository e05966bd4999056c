"""Ingestion: validated submissions/s through the HTTP API (gunicorn + PostgreSQL) against a bare psycopg
INSERT of the same documents, in one run; p50/p99 request latency at 1, 4 and 16 clients; the bulk path
(NDJSON batches) against a bare COPY of the same documents; how long audit entries wait to be numbered; and
the cost of validating one document against jsonschema-rs's time for the same schema; the SQL statements one
submission sends (bench/submission_statements.py); and, when given an MLflow interpreter, the MLflow tracking server's
write rate of the same documents on the same PostgreSQL with the same worker count, interleaved with benchreg's at
each client count, and the ratio (bench/mlflow_peer.py).

Two floors say what this machine allows before any storage, measured in the same run:
- the framework floor (bench/floor.py): the same server answering a submission after authentication, the
  `submit` scope, parsing, protocol.check and the comparability keys, storing nothing, at the same client counts;
- the checks alone: protocol.check, the comparability keys and the summary columns of each bulk document, in this
  process, no HTTP and no database, against the bare COPY.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.ingest [--quick | --smoke] [-n 1500]
        [--mlflow-python /work/mlflow-venv/bin/python]      (or BENCH_MLFLOW_PYTHON=…)

Uses a scratch database (benchreg_bench_ingest_<pid>, and <that>_mlflow for MLflow), created and dropped here.
Prints figures; no pass/fail.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import timeit
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import httpx
import numpy as np
import psycopg

import protocol
from bench import lean_http, mlflow_peer, proc
from devtools import scratch
from protocol.comparability import comparability_keys

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = f"benchreg_bench_ingest_{os.getpid()}"  # several checkouts may share the server


def documents(n: int, tag: str = "bench") -> list[bytes]:
    base = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())
    out = []
    for i in range(n):
        doc = copy.deepcopy(base)
        doc["system"]["name"] = f"{tag}-node-{i:06d}"
        out.append(json.dumps(doc).encode())
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_registry(env: dict[str, str], workers: int) -> tuple[subprocess.Popen[bytes], str, str]:
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--verbosity", "0"], env=env, check=True)
    token = subprocess.run(
        [*manage, "create_token", "--username", "bench", "--scopes", "submit,read"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    port = free_port()  # (env's DJANGO_SETTINGS_MODULE is bench.floor_settings: the product plus /bench/floor)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "registry.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(workers),
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # a busy host takes its time to start gunicorn and import the app
    while True:
        try:
            httpx.get(f"{base}/api/v1/protocol", timeout=5.0)
            break
        except httpx.TransportError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                sys.exit(f"bench.ingest: the registry server did not come up on {base}")
            time.sleep(0.2)
    return server, base, token


def http_ingest(
    base: str, token: str, bodies: list[bytes], clients: int, path: str = "/api/v1/submissions"
) -> tuple[float, list[float]]:
    latencies: list[float] = []

    def send(chunk: list[bytes]) -> list[float]:
        times = []
        with lean_http.Connection(base, {"Authorization": f"Token {token}"}, timeout=30) as client:
            for body in chunk:
                t0 = time.perf_counter()
                status, answer = client.post(path, body)
                times.append(time.perf_counter() - t0)
                assert status == 201, answer[:300]
        return times

    chunks = [bodies[i::clients] for i in range(clients)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for times in pool.map(send, chunks):
            latencies.extend(times)
    return time.perf_counter() - t0, latencies


def checks_alone(bodies: list[bytes]) -> float:
    """Seconds for what every document of a batch must pass before storage, in this process: protocol.check
    (parse, schema, semantics, canonical form, digest), the comparability keys and the summary columns."""
    t0 = time.perf_counter()
    for body in bodies:
        checked = protocol.check(body)
        comparability_keys(checked.document)
        checked.summary.columns()
    return time.perf_counter() - t0


def same_compression(conn: psycopg.Connection[Any], table: str) -> None:
    """The floor's document column compressed as the registry's runs' documents are (migration 0031: LZ4 where the
    server has it), so that the floor is not slowed by a compression the registry does not pay."""
    row = conn.execute(
        "SELECT attcompression FROM pg_attribute WHERE attrelid = 'registry_submission'::regclass "
        "AND attname = 'document'"
    ).fetchone()
    method = {"l": "lz4", "p": "pglz"}.get(row[0] if row else "")
    if method:
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN document SET COMPRESSION {method}")


def bare_insert(url: str, bodies: list[bytes]) -> float:
    """The floor: one psycopg INSERT per document into a JSONB table with a unique digest, no checks."""
    prepared = [(protocol.digest(json.loads(b)), b.decode()) for b in bodies]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bare (id bigserial PRIMARY KEY, digest text UNIQUE, document jsonb)")
        same_compression(conn, "bare")
        t0 = time.perf_counter()
        for digest, text in prepared:
            conn.execute("INSERT INTO bare (digest, document) VALUES (%s, %s)", (digest, text))
        return time.perf_counter() - t0


def bare_copy(url: str, bodies: list[bytes]) -> tuple[float, float | None]:
    """The bulk floor: one COPY of the same documents into a JSONB table with a unique digest, no checks. Returns
    its seconds and the CPU seconds it took (this process and its PostgreSQL backend; None without /proc)."""
    prepared = [(protocol.digest(json.loads(b)), b.decode()) for b in bodies]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bare_copy (id bigserial PRIMARY KEY, digest text UNIQUE, document jsonb)")
        same_compression(conn, "bare_copy")
        backend = [conn.info.backend_pid] if _is_postgres(conn.info.backend_pid) else []
        before, client, t0 = _cpu_of(backend), time.process_time(), time.perf_counter()
        with conn.cursor() as cursor, cursor.copy("COPY bare_copy (digest, document) FROM STDIN") as copy:
            for row in prepared:
                copy.write_row(row)
        seconds, after = time.perf_counter() - t0, _cpu_of(backend)
        cpu = time.process_time() - client + sum(after.values()) - sum(before.values()) if backend else None
        return seconds, cpu


def http_bulk(base: str, token: str, bodies: list[bytes], batch: int) -> float:
    """One client sending NDJSON batches of `batch` documents; every line must come back stored."""
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/x-ndjson"}
    t0 = time.perf_counter()
    with httpx.Client(base_url=base, headers=headers, timeout=300) as client:
        for start in range(0, len(bodies), batch):
            chunk = bodies[start : start + batch]
            response = client.post("/api/v1/submissions", content=b"\n".join(chunk) + b"\n")
            assert response.status_code == 200, response.text[:300]
            results = [json.loads(line) for line in response.text.splitlines()]
            assert len(results) == len(chunk) and all(r["status"] == 201 for r in results), response.text[:300]
    return time.perf_counter() - t0


class CpuMeter:
    """CPU seconds spent by a server (its process and every descendant: gunicorn's workers, MLflow's uvicorn) and by
    the PostgreSQL backends connected to its database, from /proc (Linux, PostgreSQL on this host; otherwise the
    figures are absent). A backend that closes during a run takes its share with it (undercounted, never over)."""

    def __init__(self, root_pid: int, admin_url: str, database: str) -> None:
        self.root_pid, self.admin_url, self.database = root_pid, admin_url, database

    def sample(self) -> dict[str, dict[int, float]] | None:
        try:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [self.database]).fetchall()
            backends = [pid for (pid,) in rows if _is_postgres(pid)]
            if len(backends) < len(rows):  # PostgreSQL on another host or in another PID namespace
                return None
            return {"server": _cpu_of(_descendants(self.root_pid)), "database": _cpu_of(backends)}
        except (OSError, psycopg.Error):
            return None

    @staticmethod
    def spent(
        before: dict[str, dict[int, float]] | None, after: dict[str, dict[int, float]] | None
    ) -> dict[str, float]:
        """Seconds per part between two samples (processes that appeared in between count from zero)."""
        if before is None or after is None or not after["server"]:
            return {}
        return {part: sum(cpu - before[part].get(pid, 0.0) for pid, cpu in after[part].items()) for part in after}


def _is_postgres(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"postgres")
    except OSError:
        return False


def _descendants(root: int) -> list[int]:
    parents = proc.parents()
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found.extend(frontier)
    return found


def _cpu_of(pids: list[int]) -> dict[int, float]:
    out = {}
    for pid in pids:
        with contextlib.suppress(OSError):  # ended meanwhile
            out[pid] = proc.cpu_seconds(pid)
    return out


class QueueWatch:
    """Samples the age of the oldest queued (not yet numbered) audit entry every 20 ms while running."""

    def __init__(self, url: str) -> None:
        self.url, self.worst, self.samples, self._stop = url, 0.0, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                row = conn.execute(
                    "SELECT extract(epoch FROM clock_timestamp() - min(queued_at)) FROM registry_auditqueued"
                ).fetchone()
                if row and row[0] is not None:
                    self.worst = max(self.worst, float(row[0]))
                self.samples += 1
                time.sleep(0.02)

    def __enter__(self) -> QueueWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def validation_cost(body: bytes, repeat: int) -> dict[str, float]:
    import jsonschema_rs
    from jsonschema import Draft202012Validator, FormatChecker

    from protocol.schema import schema_errors

    document = json.loads(body)
    bare = jsonschema_rs.validator_for(protocol.submission_schema(), validate_formats=True)
    reference = Draft202012Validator(protocol.submission_schema(), format_checker=FormatChecker())

    def best(fn) -> float:
        return min(timeit.repeat(fn, number=repeat, repeat=5)) / repeat

    return {
        "jsonschema-rs (schema only, its own formats)": best(lambda: bare.is_valid(document)),
        "jsonschema alone (the reference; used only to list errors)": best(
            lambda: list(reference.iter_errors(document))
        ),
        "protocol schema step (jsonschema-rs, the reference's readings)": best(lambda: schema_errors(document)),
        "protocol.check (parse + schema + semantics + canonical + digest)": best(lambda: protocol.check(body)),
    }


def pct(latencies: list[float], q: float) -> float:
    return float(np.percentile(np.array(latencies) * 1000, q, method="inverted_cdf"))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100 documents per configuration")
    parser.add_argument(
        "--smoke", action="store_true", help="20 documents, 1 and 4 clients, 1 worker: CI's check that the bench runs"
    )
    parser.add_argument("-n", type=int, default=None, help="documents per configuration (default 2000)")
    parser.add_argument("--clients", type=int, nargs="+", default=None, help="concurrent clients (default 1 4 16)")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers (default 2; 1 with --smoke)")
    parser.add_argument("--batch", type=int, default=None, help="documents per NDJSON batch (bulk path; default 500)")
    parser.add_argument("--scratch", default=SCRATCH, help="scratch database name (created and dropped)")
    parser.add_argument(
        "--sequencing",
        default="background",
        choices=["commit", "background"],
        help="BENCHREG_AUDIT_SEQUENCING of the server (docs/audit.md; default: the product's default, background)",
    )
    parser.add_argument(
        "--mlflow-python",
        default=os.environ.get("BENCH_MLFLOW_PYTHON") or None,
        help="an interpreter with MLflow installed (default $BENCH_MLFLOW_PYTHON): measure MLflow's tracking "
        "server beside benchreg (bench/mlflow_peer.py); without it the MLflow figures are absent",
    )
    parser.add_argument(
        "--mlflow-n",
        type=int,
        default=None,
        help="documents MLflow logs per client count (default: -n; fewer is "
        "faster where MLflow is slow, and its rate is still a rate)",
    )
    args = parser.parse_args()
    args.n = args.n or (20 if args.smoke else 100 if args.quick else 2000)
    args.clients = args.clients or ([1, 4] if args.smoke else [1, 4, 16])
    args.batch = args.batch or (10 if args.smoke else 500)
    args.workers = args.workers or (1 if args.smoke else 2)
    args.mlflow_n = args.mlflow_n or args.n
    return args


def statements_per_submission(env: dict[str, str]) -> dict[str, Any]:
    """bench/submission_statements.py against the scratch database, in a process of its own."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.submission_statements"],
        env={**env, "DJANGO_SETTINGS_MODULE": "registry.settings"},
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return cast(dict[str, Any], json.loads(out.strip().splitlines()[-1]))


class MLflow:
    """MLflow's tracking server on its own scratch database of the same PostgreSQL server, while the bench runs."""

    def __init__(self, python: str, admin_url: str, name: str, workers: int) -> None:
        self.admin_url, self.name = admin_url, name
        url = mlflow_peer.create_database(admin_url, name)
        self.server: subprocess.Popen[bytes] | None = None
        try:
            self.server, self.base = mlflow_peer.start(python, url, workers, free_port())
            self.experiment = mlflow_peer.experiment(self.base, "bench-ingest")
            self.meter = CpuMeter(self.server.pid, admin_url, name)
        except BaseException:  # (start exits the bench if the server does not come up)
            self.close()
            raise

    def ingest(self, bodies: list[bytes], clients: int) -> tuple[float, list[float]]:
        return mlflow_peer.ingest(self.base, self.experiment, bodies, clients)

    def close(self) -> None:
        if self.server is not None:
            mlflow_peer.stop(self.server)
        scratch.drop(self.admin_url, self.name)


Single = dict[int, tuple[float, list[float], float]]
Rates = dict[int, tuple[float, list[float]]]
Cpu = dict[tuple[str, int], dict[str, float]]  # (tool, clients) -> CPU ms per document: server, database, client


class Metered:
    """CPU ms per document of one timed block: the server's processes and database backends (CpuMeter), and this
    process (the bench's clients; for benchreg also QueueWatch's sampling)."""

    def __init__(self, meter: CpuMeter, documents: int) -> None:
        self.meter, self.documents = meter, documents
        self.ms: dict[str, float] = {}

    def __enter__(self) -> Metered:
        self.before, self.client = self.meter.sample(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        client = time.process_time() - self.client
        spent = CpuMeter.spent(self.before, self.meter.sample())
        self.ms = {part: seconds * 1000 / self.documents for part, seconds in {**spent, "client": client}.items()}


def measure_single(
    base: str, token: str, url: str, args: argparse.Namespace, mlflow: MLflow | None, meter: CpuMeter
) -> tuple[Single, Rates, Rates, Cpu]:
    """At each client count, in turn: the framework floor, benchreg's single submissions, then MLflow's runs."""
    single: Single = {}
    floor: Rates = {}
    peer: Rates = {}
    cpu: Cpu = {}
    n = args.n
    for clients in args.clients:
        wall, latencies = http_ingest(base, token, documents(n, f"f{clients}"), clients, "/bench/floor")
        floor[clients] = (n / wall, latencies)
        with Metered(meter, n) as used, QueueWatch(url) as watch:
            wall, latencies = http_ingest(base, token, documents(n, f"c{clients}"), clients)
        single[clients], cpu["benchreg", clients] = (n / wall, latencies, watch.worst), used.ms
        if mlflow is not None:
            with Metered(mlflow.meter, args.mlflow_n) as used:
                wall, latencies = mlflow.ingest(documents(args.mlflow_n, f"m{clients}"), clients)
            peer[clients], cpu["mlflow", clients] = (args.mlflow_n / wall, latencies), used.ms
    return single, floor, peer, cpu


def main() -> None:
    args = arguments()
    admin_url = os.environ.get("DATABASE_URL")
    if not admin_url or not admin_url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (any database; a scratch one is created)")
    n = args.n
    warm = 8 if args.smoke else 40  # requests of each kind before timing: imports, connections, caches
    bodies = documents(n)

    print("validation of one document (inference-server example):")
    costs = validation_cost(bodies[0], 5 if args.smoke else 20 if args.quick else 200)
    fastest = costs["jsonschema-rs (schema only, its own formats)"]
    for name, seconds in costs.items():
        print(f"  {name:68s} {seconds * 1e6:9.1f} µs  ({seconds / fastest:5.1f}× jsonschema-rs)")

    url = scratch.recreate(admin_url, args.scratch)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "BENCHREG_DATA_DIR": tempfile.mkdtemp(),
        "LOG_LEVEL": "ERROR",
        "BENCHREG_AUDIT_SEQUENCING": args.sequencing,
        "DJANGO_SETTINGS_MODULE": "bench.floor_settings",
        "BENCHREG_THROTTLE_USER": "100000000/min",
    }  # the bench's one token sends more than a client would
    server, base, token = start_registry(env, args.workers)
    mlflow: MLflow | None = None
    try:
        if args.mlflow_python:
            mlflow = MLflow(args.mlflow_python, admin_url, f"{args.scratch}_mlflow", args.workers)
            mlflow.ingest(documents(warm, "warm-mlflow"), 4)
        http_ingest(base, token, documents(warm, "warm"), 4)  # warm-up: imports, connections, caches
        http_ingest(base, token, documents(warm, "warm-floor"), 4, "/bench/floor")
        single, floor, peer, cpu = measure_single(
            base, token, url, args, mlflow, CpuMeter(server.pid, admin_url, args.scratch)
        )
        statements = statements_per_submission(env)
        bulk_docs = documents(n, "bulk")
        with Metered(CpuMeter(server.pid, admin_url, args.scratch), n) as bulk_cpu:
            bulk = n / http_bulk(base, token, bulk_docs, args.batch)
        checks_rate = n / checks_alone(documents(n, "checks"))
        bare = n / bare_insert(url, bodies)
        copy_seconds, copy_cpu = bare_copy(url, bulk_docs)
        copy_rate = n / copy_seconds
        with psycopg.connect(url, autocommit=True) as conn:
            queued = conn.execute("SELECT count(*) FROM registry_auditqueued").fetchone()
            entries = conn.execute("SELECT count(*), max(seq) FROM registry_auditentry").fetchone()
    finally:
        if mlflow is not None:
            mlflow.close()
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        scratch.drop(admin_url, args.scratch)

    print(
        f"\ningestion of {n} distinct documents per configuration ({args.workers} gunicorn workers, audit "
        f"sequencing {args.sequencing}), one run:"
    )
    print(
        f"  SQL statements per single submission (the request's thread): {statements['statements']}, of which "
        f"{statements['transaction_commands']} transaction commands"
    )
    print(f"  bare psycopg INSERT, one connection, no checks:      {bare:8.1f} rows/s")
    report_single(single, floor, bare)
    report_mlflow(single, peer, args)
    report_cpu(cpu)
    print(f"  bare COPY of the bulk documents, no checks:          {copy_rate:8.1f} rows/s")
    print(
        f"  HTTP bulk (NDJSON, {args.batch} per request, 1 client):     {bulk:8.1f} /s  "
        f"({bulk / copy_rate:.3f} of bare COPY)"
    )
    print(
        f"  the checks alone, one process, no HTTP or database:  {checks_rate:8.1f} /s  "
        f"({checks_rate / copy_rate:.3f} of bare COPY)  bulk/checks {bulk / checks_rate:.2f}"
    )
    report_bulk_bound(bulk_cpu.ms, copy_cpu, n, copy_rate)
    print(f"  audit log after the run: {entries[0]} entries (max seq {entries[1]}), {queued[0]} still queued")


def report_single(single: Single, floor: Rates, bare: float) -> None:
    for clients, (rate, latencies, worst) in single.items():
        print(
            f"  HTTP single documents, {clients:2d} client(s):             {rate:8.1f} /s  "
            f"({rate / bare:.3f} of bare INSERT)  p50 {pct(latencies, 50):.1f} ms  p99 {pct(latencies, 99):.1f} ms"
            f"  oldest queued audit entry {worst * 1000:.0f} ms"
        )
    if len(single) > 1:
        low, high = min(single), max(single)
        print(f"  throughput {high} clients / {low} client(s):                {single[high][0] / single[low][0]:8.2f}x")
    for clients, (rate, latencies) in floor.items():
        print(
            f"  framework floor (checks, stores nothing), {clients:2d} client(s): {rate:8.1f} /s  "
            f"({rate / bare:.3f} of bare INSERT)  p50 {pct(latencies, 50):.1f} ms  p99 {pct(latencies, 99):.1f} ms"
            f"  real/floor {single[clients][0] / rate:.2f}"
        )


def report_mlflow(single: Single, peer: Rates, args: argparse.Namespace) -> None:
    if not peer:
        print(
            "  MLflow: not run (give --mlflow-python or BENCH_MLFLOW_PYTHON): the ratio to MLflow's write rate is "
            "absent"
        )
        return
    for clients, (rate, latencies) in peer.items():
        print(
            f"  MLflow runs (create + log-batch + update), {clients:2d} client(s): {rate:8.1f} /s  "
            f"p50 {pct(latencies, 50):.1f} ms  p99 {pct(latencies, 99):.1f} ms  "
            f"benchreg/MLflow {single[clients][0] / rate:.2f}x"
        )


def report_bulk_bound(bulk_ms: dict[str, float], copy_cpu: float | None, n: int, copy_rate: float) -> None:
    """The CPU one bulk document takes, and what that allows on this machine's cores: the rate no way of spreading
    the same work over the cores could pass (every core busy with nothing else), as a share of bare COPY."""
    if "server" not in bulk_ms or copy_cpu is None:
        print("  CPU per bulk document: absent (no /proc, or PostgreSQL not on this host)")
        return
    total = bulk_ms["server"] + bulk_ms["database"]  # a client runs elsewhere: its CPU is not the registry's
    cores = os.cpu_count() or 1
    ceiling = cores * 1000 / total
    print(
        f"  CPU per bulk document: server {bulk_ms['server']:.3f} ms + PostgreSQL {bulk_ms['database']:.3f} ms = "
        f"{total:.3f} ms (and the bench client's {bulk_ms['client']:.3f} ms); bare COPY's per row, client and "
        f"PostgreSQL, {copy_cpu * 1000 / n:.3f} ms"
    )
    print(
        f"  at that CPU, {cores} core(s) all busy allow at most {ceiling:8.1f} /s  ({ceiling / copy_rate:.3f} of bare "
        f"COPY): a share above it needs less work per document, not another way to spread it"
    )


def report_cpu(cpu: Cpu) -> None:
    """CPU ms per document where it was spent: a figure a busy host's scheduling does not move the way rates move."""
    for (tool, clients), ms in cpu.items():
        if "server" not in ms:
            print(f"  CPU per document, {tool}, {clients} client(s): absent (no /proc, or PostgreSQL not on this host)")
            continue
        total = ms["server"] + ms["database"] + ms["client"]
        print(
            f"  CPU per {'submission' if tool == 'benchreg' else 'MLflow run'}, {clients:2d} client(s), {tool:8s}: "
            f"server {ms['server']:6.2f} ms + PostgreSQL {ms['database']:5.2f} ms + bench client {ms['client']:5.2f} ms"
            f" = {total:6.2f} ms"
        )
    for clients in sorted({c for _, c in cpu}):
        ours, theirs = cpu.get(("benchreg", clients), {}), cpu.get(("mlflow", clients), {})
        if "server" in ours and "server" in theirs:
            ratio = sum(theirs.values()) / sum(ours.values())
            print(f"  CPU per MLflow run / CPU per benchreg submission, {clients:2d} client(s): {ratio:8.2f}x")


if __name__ == "__main__":
    main()
