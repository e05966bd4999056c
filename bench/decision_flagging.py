"""What a submitter pays for other people's decisions: one submission with 0 and with 60 decisions on its question.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.decision_flagging [--repeats 20] [--smoke]

Creates and drops a scratch database (--scratch NAME). Three runs of the server example answer the question; then
POST /api/v1/submissions of one more run of the same workload and scenario is timed `--repeats` times with no
decision on the question, and again with 60 decisions on it (three owners, 20 each). Before each timed submission
every decision is made current again, so each one marks all 60 (the worst case; a run stored while they are still
stale marks none). Tasks go to an in-memory broker (as to Redis or RabbitMQ in a deployment: dispatched after the
commit, run by a worker), so the time is the submitter's. The recompute of the 60, as the worker runs it, is timed
apart. Prints p50/p95 and SQL statements of each, and their ratio (p50). No pass/fail.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time

import numpy as np

from bench.comparisons import ROOT, setup
from devtools import scratch

SCRATCH = "benchreg_bench_decision_flagging"
QUESTION = {
    "workload": "decoder-small",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
    "quality": {"target_ratio": 0.99},
    "demand": {"value": 20000, "unit": "tokens/s"},
    "prices": {"system_hour": {"*": 50.0}, "energy_per_kwh": 0.1},
}


def document(n: int) -> dict:
    doc = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())
    doc = copy.deepcopy(doc)
    doc["system"]["name"] = f"bench-flag-{n}"
    doc["metrics"]["throughput"]["value"] = 1000.0 + n
    doc["metrics"]["quality"]["target_ratio"] = 0.99
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=None, help="submissions timed each way (default 20)")
    parser.add_argument("--decisions", type=int, default=None, help="decisions on the question (default 60)")
    parser.add_argument(
        "--smoke", action="store_true", help="3 submissions, 6 decisions: CI's check that the bench runs"
    )
    parser.add_argument("--scratch", default=SCRATCH, help="scratch database name (created and dropped)")
    args = parser.parse_args()
    args.repeats = args.repeats or (3 if args.smoke else 20)
    args.decisions = args.decisions or (6 if args.smoke else 60)
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (a scratch database is created and dropped)")
    os.environ["CELERY_BROKER_URL"] = "memory://"  # dispatch as a deployment does; nothing consumes it here
    setup(admin_url, args.scratch)
    try:
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Group
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext, override_settings

        from registry.models import Decision
        from registry.services.decisions import decision_create, decisions_recompute_stale
        from registry.services.tokens import token_create

        user = get_user_model().objects.create_user("bench")
        user.groups.add(Group.objects.get_or_create(name="submitter")[0])
        client = Client(
            SERVER_NAME="localhost",
            HTTP_AUTHORIZATION=f"Token {token_create(user=user, name='b', scopes='submit,read')[1]}",
        )
        serial = iter(range(10**6))

        def submit_timed() -> tuple[list[float], int]:
            times, queries = [], 0
            for _ in range(args.repeats):
                Decision.objects.update(stale_since=None)  # worst case: every decision is marked by this run
                body = json.dumps(document(next(serial)))
                with CaptureQueriesContext(connection) as seen:
                    t0 = time.perf_counter()
                    response = client.post("/api/v1/submissions", body, content_type="application/json")
                    times.append((time.perf_counter() - t0) * 1000)
                assert response.status_code == 201, response.content[:300]
                queries = len(seen)
            return times, queries

        for _ in range(3):
            client.post("/api/v1/submissions", json.dumps(document(next(serial))), content_type="application/json")
        submit_timed()  # warm-up: code paths, caches, plans
        none, q_none = submit_timed()
        owners = [get_user_model().objects.create_user(f"owner-{i}") for i in range(3)]
        with override_settings(BENCHREG_MAX_DECISIONS_PER_USER=max(50, args.decisions)):
            for i in range(args.decisions):
                decision_create(owner=owners[i % 3], title=f"decision {i}", question=QUESTION)
        many, q_many = submit_timed()
        t0 = time.perf_counter()
        done = decisions_recompute_stale(workload="decoder-small", scenario="server")
        worker_ms = (time.perf_counter() - t0) * 1000
        print(f"{'decisions on the question':>26} | {'submission p50':>14} {'p95':>9} {'SQL':>4}")
        for label, times, q in ((0, none, q_none), (args.decisions, many, q_many)):
            print(f"{label:>26} | {np.percentile(times, 50):12.1f}ms {np.percentile(times, 95):7.1f}ms {q:>4}")
        print(f"ratio (p50, {args.decisions} ÷ 0): {np.percentile(many, 50) / np.percentile(none, 50):.2f}×")
        print(f"the worker's recompute of the {args.decisions} afterwards: {worker_ms:.0f} ms ({done})")
    finally:
        from django.db import connections

        connections.close_all()
        scratch.drop(admin_url, args.scratch)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(whole benchmark {time.perf_counter() - t0:.0f} s)")
