"""Ingestion: validated submissions/s through the HTTP API (gunicorn + PostgreSQL) against a bare psycopg
INSERT of the same documents, in one run; p50/p99 request latency; and the cost of validating one document
against fastjsonschema's time for the same schema.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.ingest [--quick]

Uses a scratch database (benchreg_bench_ingest), created and dropped here. Prints figures; no pass/fail.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import psycopg

import protocol
from bench import scratch

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = "benchreg_bench_ingest"


def documents(n: int) -> list[bytes]:
    base = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())
    out = []
    for i in range(n):
        doc = copy.deepcopy(base)
        doc["system"]["name"] = f"bench-node-{i:06d}"
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
    port = free_port()
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
    for _ in range(100):
        try:
            httpx.get(f"{base}/api/v1/protocol", timeout=1.0)
            break
        except httpx.TransportError:
            time.sleep(0.2)
    return server, base, token


def http_ingest(base: str, token: str, bodies: list[bytes], clients: int) -> tuple[float, list[float]]:
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    latencies: list[float] = []

    def send(chunk: list[bytes]) -> list[float]:
        times = []
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            for body in chunk:
                t0 = time.perf_counter()
                response = client.post("/api/v1/submissions", content=body)
                times.append(time.perf_counter() - t0)
                assert response.status_code == 201, response.text[:300]
        return times

    chunks = [bodies[i::clients] for i in range(clients)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for times in pool.map(send, chunks):
            latencies.extend(times)
    return time.perf_counter() - t0, latencies


def bare_insert(url: str, bodies: list[bytes]) -> float:
    """The floor: one psycopg INSERT per document into a JSONB table with a unique digest, no checks."""
    prepared = [(protocol.digest(json.loads(b)), b.decode()) for b in bodies]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bare (id bigserial PRIMARY KEY, digest text UNIQUE, document jsonb)")
        t0 = time.perf_counter()
        for digest, text in prepared:
            conn.execute("INSERT INTO bare (digest, document) VALUES (%s, %s)", (digest, text))
        return time.perf_counter() - t0


def validation_cost(body: bytes, repeat: int) -> dict[str, float]:
    import fastjsonschema

    document = json.loads(body)
    fast = fastjsonschema.compile(protocol.submission_schema())
    from jsonschema import Draft202012Validator, FormatChecker

    from protocol.schema import schema_errors

    reference = Draft202012Validator(protocol.submission_schema(), format_checker=FormatChecker())

    def best(fn) -> float:
        return min(timeit.repeat(fn, number=repeat, repeat=5)) / repeat

    return {
        "fastjsonschema (schema only)": best(lambda: fast(document)),
        "jsonschema alone (the reference; used only to list errors)": best(
            lambda: list(reference.iter_errors(document))),
        "protocol schema step (compiled fast path)": best(lambda: schema_errors(document)),
        "protocol.check (parse + schema + semantics + canonical + digest)": best(lambda: protocol.check(body)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small N for a smoke run")
    parser.add_argument("-n", type=int, default=None, help="documents to submit")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    args = parser.parse_args()
    admin_url = os.environ.get("DATABASE_URL")
    if not admin_url or not admin_url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (any database; a scratch one is created)")
    n = args.n or (100 if args.quick else 2000)
    bodies = documents(n)

    print("validation of one document (inference-server example):")
    costs = validation_cost(bodies[0], 20 if args.quick else 200)
    floor = costs["fastjsonschema (schema only)"]
    for name, seconds in costs.items():
        print(f"  {name:68s} {seconds * 1e6:9.1f} µs  ({seconds / floor:5.1f}× fastjsonschema)")

    url = scratch.recreate(admin_url, SCRATCH)
    env = {**os.environ, "DATABASE_URL": url, "BENCHREG_DATA_DIR": tempfile.mkdtemp(), "LOG_LEVEL": "ERROR"}
    server, base, token = start_registry(env, args.workers)
    try:
        http_ingest(
            base, token, documents(20)[:0] + [b.replace(b"bench-node", b"warm-node") for b in bodies[:20]], args.clients
        )  # warm-up: imports, connections, caches
        wall, latencies = http_ingest(base, token, bodies, args.clients)
        bare = bare_insert(url, bodies)
    finally:
        server.terminate()
        server.wait(10)
        scratch.drop(admin_url, SCRATCH)
    api_rate, bare_rate = n / wall, n / bare
    ms = np.array(latencies) * 1000
    print(
        f"\ningestion of {n} distinct documents ({args.clients} concurrent clients, {args.workers} gunicorn workers):"
    )
    print(f"  HTTP API (validate + canonicalise + store + audit): {api_rate:8.1f} submissions/s")
    print(f"  bare psycopg INSERT, one connection, no checks:    {bare_rate:8.1f} rows/s")
    print(f"  ratio API / bare insert:                           {api_rate / bare_rate:8.3f}")
    print(
        f"  request latency: p50 {np.percentile(ms, 50, method='inverted_cdf'):.1f} ms, "
        f"p99 {np.percentile(ms, 99, method='inverted_cdf'):.1f} ms, mean {statistics.fmean(ms):.1f} ms"
    )


if __name__ == "__main__":
    main()
