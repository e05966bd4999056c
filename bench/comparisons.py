"""Comparable-set lookup and a 10-run comparison at 10k, 100k and 1M stored runs in PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.comparisons [--quick | --smoke]

Creates and drops a scratch database (--scratch NAME; give each engineer their own). Ten real runs share
one comparability key, each on its own configuration (accelerator model) with 5 repetitions of raw latency
samples, so the comparison computes ten arms' intervals and nine ratios; filler rows (synthetic, small
documents) spread over 2,000 other keys bring the table to each size. Prints p50/p95 latency per size, the
growth ratio against the smallest size, the SQL queries per request, and `compare()` alone on the same ten
documents (no database). No pass/fail.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psycopg

from devtools import scratch
from protocol.summary import COLUMN_NAMES

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = "benchreg_bench_compare"
SAMPLES_PER_REPETITION = 400
# The filler's columns that are not summary columns; its summary values are keyed by protocol.summary.COLUMNS' names
# (`filler_summary`), so a renamed or dropped summary column stops the bench by name.
OTHER_COLUMNS = (
    "digest",
    "measurement",
    "document",
    "canonical",
    "comparability_key",
    "comparability_key_software",
    "comparability_key_precision",
    "comparability_key_iso_quality",
    "submitted_by_id",
    "submitted_by_name",
    "submitted_at",
    "trust",
)


def filler_summary(i: int) -> dict[str, object]:
    """Filler row i's summary columns (the rest take their model defaults)."""
    return {
        "protocol_version": "1.0",
        "phase": "inference",
        "workload_name": f"workload-{i % 50}",
        "workload_version": "1.0",
        "scenario_kind": "offline",
        "precision_weights": "bf16",
        "precision_activations": "bf16",
        "batch_size": 1 + i % 64,
        "system_name": f"filler-{i % 500}",
        "accelerator_vendor": "NVIDIA",
        "accelerator_model": f"model-{i % 20}",
        "accelerator_count": 1,
        "submitter": "bench",
        "source": "runner",
        "started_at": None,
        "headline_metric": "throughput",
        "headline_value": float(i % 1000),
        "headline_unit": "samples/s",
        "headline_lower_is_better": False,
        "software_summary": "torch 2.13.0",
        "origin_round": "",
        "origin_division": "",
        "origin_category": "",
        "origin_availability": "",
    }


SUMMARY_COLUMNS = tuple(filler_summary(0))
if set(SUMMARY_COLUMNS) - set(COLUMN_NAMES):
    sys.exit(f"bench filler rows: {sorted(set(SUMMARY_COLUMNS) - set(COLUMN_NAMES))} are not summary columns")
COLUMNS = (*OTHER_COLUMNS, *SUMMARY_COLUMNS)


def setup(admin_url: str, name: str) -> str:
    url = scratch.recreate(admin_url, name)
    os.environ.update(
        DATABASE_URL=url, BENCHREG_DATA_DIR=tempfile.mkdtemp(), DJANGO_SETTINGS_MODULE="registry.settings"
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return url


def ten_documents(kind: str = "raw") -> list[dict]:
    """Ten configurations of the server example: with 5 repetitions of raw latency samples ("raw") or the
    summary alone ("summary", the documents this benchmark used before raw samples)."""
    base = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())
    rng = np.random.default_rng(2026)
    docs = []
    for i in range(10):
        doc = copy.deepcopy(base)
        doc["system"]["name"] = f"bench-system-{i}"
        doc["system"]["accelerators"][0]["model"] = f"bench-accelerator-{i}"
        doc["metrics"]["throughput"]["value"] = 1200.0 + 25 * i
        if kind == "summary":
            docs.append(doc)
            continue
        reps = [np.round(rng.lognormal(np.log(150.0 + i), 0.2, SAMPLES_PER_REPETITION), 4) for _ in range(5)]
        pooled = np.concatenate(reps)
        doc["samples"] = {"latency_ms": {"unit": "ms", "repetitions": [r.tolist() for r in reps]}}
        doc["metrics"]["latency_ms"] = {
            "count": int(pooled.size),
            "method": "nearest-rank",
            "unit": "ms",
            "min": float(pooled.min()),
            "mean": float(pooled.mean()),
            "max": float(pooled.max()),
            **{
                k: float(np.quantile(pooled, q, method="inverted_cdf"))
                for k, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))
            },
        }
        doc["metrics"]["primary"] = "latency_ms.p50"
        docs.append(doc)
    return docs


def _real_runs(user, kind: str):  # type: ignore[no-untyped-def]
    from registry.services.submissions import submission_create

    return [submission_create(document=doc, submitted_by=user)[0] for doc in ten_documents(kind)]


def time_compare(repeats: int, kind: str) -> np.ndarray:
    """Milliseconds per `comparability.compare` of the ten documents, no database."""
    from protocol import comparability

    docs = ten_documents(kind)
    comparability.compare(docs, "system")  # warm caches (contract, schema)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        comparability.compare(docs, "system")
        times.append(time.perf_counter() - t0)
    return np.array(times) * 1000


def model_defaults() -> dict[str, object]:
    """The other columns of registry_submission, each at its model default, so that a filler row is complete.

    A column added with a Django default (as `measurement` and `derived` were) gets no database default: a COPY
    that leaves it out fails on NOT NULL. Reading the model here keeps the filler whole as columns are added; a new
    required column with no default stops the bench by name instead of midway through a COPY.
    """
    from registry.models import Submission

    defaults: dict[str, object] = {}
    for field in Submission._meta.concrete_fields:
        if field.column in COLUMNS or field.primary_key:
            continue
        if field.has_default():
            defaults[field.column] = field.get_default()
        elif not field.null:
            sys.exit(
                f"bench filler rows: registry_submission.{field.column} is required and has no default; "
                "give it a value in bench/comparisons.py's fill()"
            )
    return defaults


def fill(url: str, start: int, stop: int, user_id: int) -> None:
    """COPY synthetic rows; each row's keys fall in one of 2,000 groups unrelated to the real runs."""
    defaults = model_defaults()
    columns = (*COLUMNS, *defaults)
    rest = tuple(defaults.values())
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY registry_submission ({', '.join(columns)}) FROM STDIN") as copy_:
            for i in range(start, stop):
                key = f"sha256:{i % 2000:064x}"
                digest = f"sha256:f{i:063x}"
                other = (digest, digest, "{}", "{}", key, key, key, key, user_id, "bench", "2026-01-01T00:00:00Z")
                # each filler row its own measurement (digest twice), as the run store gives every distinct run
                copy_.write_row((*other, "declared", *filler_summary(i).values(), *rest))
        conn.commit()
        cur.execute("ANALYZE registry_submission")
        conn.commit()


def measure(
    client, path: str, body: dict | None, repeats: int, vary, cpu: list[float] | None = None
) -> tuple[np.ndarray, int]:  # type: ignore[no-untyped-def]
    """Milliseconds per request and the SQL statements of the last; `cpu`, when given, receives each request's CPU
    milliseconds in this process (the client and the server's Python, not PostgreSQL's: on a shared host the wall
    time also counts waiting for a core)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times = []
    queries = 0
    for i in range(repeats):
        payload = vary(body, i) if body is not None else None
        with CaptureQueriesContext(connection) as captured:
            t0, c0 = time.perf_counter(), time.process_time()
            response = (
                client.get(path)
                if payload is None
                else client.post(path, json.dumps(payload), content_type="application/json")
            )
            times.append(time.perf_counter() - t0)
            if cpu is not None:
                cpu.append((time.process_time() - c0) * 1000)
        assert response.status_code in (200, 201), response.content[:300]
        queries = len(captured)
    return np.array(times) * 1000, queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1k and 10k rows only")
    parser.add_argument(
        "--smoke", action="store_true", help="200 and 1,000 rows, 3 repeats: CI's check that the bench runs"
    )
    parser.add_argument("--repeats", type=int, default=None, help="requests timed per size (default 30)")
    parser.add_argument("--scratch", default=SCRATCH, help="scratch database name (created and dropped)")
    parser.add_argument("--sizes", default=None, help="comma-separated table sizes, e.g. 10000,100000")
    parser.add_argument(
        "--documents",
        choices=["raw", "summary"],
        default="raw",
        help="the ten runs carry raw samples (default) or only their summaries",
    )
    args = parser.parse_args()
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (a scratch database is created and dropped)")
    sizes = [200, 1_000] if args.smoke else [1_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000]
    args.repeats = args.repeats or (3 if args.smoke else 30)
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    pure = time_compare(args.repeats, args.documents)
    shape = f"5 repetitions of {SAMPLES_PER_REPETITION} samples each" if args.documents == "raw" else "summaries only"
    print(
        f"compare() of 10 runs (10 arms, {shape}), no database: "
        f"p50 {np.percentile(pure, 50):.1f} ms, p95 {np.percentile(pure, 95):.1f} ms"
    )
    url = setup(admin_url, args.scratch)
    try:
        from django.contrib.auth import get_user_model
        from django.test import Client

        from registry.services.tokens import token_create

        user = get_user_model().objects.create_user("bench")
        token = token_create(user=user, name="b", scopes="submit,read")[1]
        client = Client(SERVER_NAME="localhost", HTTP_AUTHORIZATION=f"Token {token}")  # testserver is for tests
        runs = _real_runs(user, args.documents)
        compare_body = {"runs": [r.pk for r in runs], "axis": "system"}

        counter = iter(range(10**9))

        def vary(body, i):  # a new price each time, so every request computes and stores a comparison
            return {**body, "prices": {"bench-system-0": 1.0 + next(counter) / 1000}}

        have, rows = 10, []
        for size in sizes:
            t0 = time.perf_counter()
            fill(url, have, size, user.pk)
            fill_s, have = time.perf_counter() - t0, size
            lookup, q_lookup = measure(client, f"/api/v1/submissions/{runs[0].pk}/comparable", None, args.repeats, vary)
            compare, q_compare = measure(client, "/api/v1/comparisons", compare_body, max(5, args.repeats // 3), vary)
            rows.append((size, lookup, q_lookup, compare, q_compare, fill_s))
        first = rows[0]
        print(
            f"{'runs':>9} | {'lookup p50':>10} {'p95':>7} {'SQL':>4} | {'compare p50':>11} {'p95':>7} {'SQL':>4}"
            " | growth p50 lookup / compare"
        )
        for size, lookup, ql, compare, qc, _ in rows:
            print(
                f"{size:>9,} | {np.percentile(lookup, 50):8.1f}ms {np.percentile(lookup, 95):6.1f}ms {ql:>4} | "
                f"{np.percentile(compare, 50):9.1f}ms {np.percentile(compare, 95):6.1f}ms {qc:>4} | "
                f"{np.percentile(lookup, 50) / np.percentile(first[1], 50):5.2f}× / "
                f"{np.percentile(compare, 50) / np.percentile(first[3], 50):5.2f}×"
            )
    finally:
        from django.db import connections

        connections.close_all()
        scratch.drop(admin_url, args.scratch)


if __name__ == "__main__":
    main()
