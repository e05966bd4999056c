"""Answering a decision over 10k, 100k and 1M stored runs with 20 candidate configurations, against the
comparable-set lookup for one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.decisions [--quick | --smoke]

Creates and drops a scratch database (--scratch NAME). Twenty configurations (accelerator model × precision)
of the server example, three runs each, answer the question; filler rows (bench.comparisons' synthetic rows,
other workloads) bring the table to each size. Times POST /api/v1/decisions (select the candidate runs, answer,
store the answer and its cited runs, audit) and GET /api/v1/submissions/<id>/comparable (one index lookup) with
the same client, and prints p50/p95 of each, the median CPU milliseconds of this process per request (client and
server Python, not PostgreSQL's), and their ratios. No pass/fail.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import cProfile
import importlib
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from bench.comparisons import ROOT, fill, measure, setup
from devtools import scratch

SCRATCH = "benchreg_bench_decisions"
QUESTION = {
    "workload": "decoder-small",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
    "quality": {"target_ratio": 0.99},
    "demand": {"value": 20000, "unit": "tokens/s"},
    "prices": {"system_hour": {"*": 50.0}, "energy_per_kwh": 0.1},
}


def candidate_documents() -> list[dict]:
    """20 configurations × 3 runs of the server example, each with a quality target (iso-quality axis)."""
    base = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())
    rng = np.random.default_rng(14)
    docs = []
    for config in range(20):
        for rep in range(3):
            doc = copy.deepcopy(base)
            doc["system"]["name"] = f"bench-system-{config}-{rep}"
            doc["system"]["accelerators"][0]["model"] = f"bench-accelerator-{config // 2}"
            doc["precision"]["weights"] = "bf16" if config % 2 == 0 else "fp16"
            doc["metrics"]["throughput"]["value"] = round(float(rng.lognormal(np.log(1000 + 30 * config), 0.05)), 3)
            doc["metrics"]["quality"]["target_ratio"] = 0.99
            docs.append(doc)
    return docs


def forget(body: dict[str, Any], i: int) -> dict[str, Any]:
    """The request's body, each run's remembered grouping forgotten first (protocol.decisions.answer)."""
    importlib.import_module("protocol.decisions.answer").forget_groupings()
    return body


def answer_parts(user: Any, repeats: int) -> dict[str, float]:
    """Median milliseconds of each part of one answer, each timed in-process (no HTTP) over `repeats` answers: what
    POST /api/v1/decisions spends its time on beyond the request and its response."""
    from django.db import transaction

    from protocol import canonical
    from protocol import decisions as dec
    from registry.selectors.decisions import decision_candidate_runs
    from registry.services.decisions import decision_create, decision_evidence, decision_question

    question = decision_question(QUESTION)
    times: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def timed(name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        times.setdefault(name, []).append((time.perf_counter() - start) * 1000)

    for _ in range(repeats):
        with timed("select the candidate runs and parse their documents"):
            runs = decision_candidate_runs(question=question)
        with timed("their references (decision_evidence)"):
            evidence = decision_evidence(runs)
        with timed("the arithmetic (protocol.decisions.answer_question)"):
            answer = dec.answer_question(question, evidence, digests_name_documents=True)
        with timed("the answer's digest (RFC 8785)"):
            canonical.digest(answer)
        with transaction.atomic(), timed("decision_create, all of it"):
            decision_create(owner=user, title="parts", question=QUESTION)
    medians = {name: float(np.median(values)) for name, values in times.items()}
    whole = medians.pop("decision_create, all of it")
    medians["storing and auditing it (decision_create less the parts above)"] = whole - sum(medians.values())
    medians["decision_create, all of it"] = whole
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1k and 10k rows only")
    parser.add_argument(
        "--smoke", action="store_true", help="200 and 1,000 rows, 3 repeats: CI's check that the bench runs"
    )
    parser.add_argument("--repeats", type=int, default=None, help="requests timed per size (default 20)")
    parser.add_argument("--scratch", default=SCRATCH, help="scratch database name (created and dropped)")
    parser.add_argument(
        "--profile",
        default=None,
        metavar="FILE",
        help="cProfile the remembered answers' requests into FILE (pstats; their times include the profiler)",
    )
    parser.add_argument("--sizes", default=None, help="comma-separated table sizes, e.g. 10000,100000")
    args = parser.parse_args()
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (a scratch database is created and dropped)")
    sizes = [200, 1_000] if args.smoke else [1_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000]
    args.repeats = args.repeats or (3 if args.smoke else 20)
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    # Every timed request declares a decision of the bench's one user: sizes × 2 × repeats of them, beyond the default
    # quota of 50 at --sizes 10000,100000 --repeats 30 (the quota is counted in each request, as it is served).
    os.environ.setdefault("BENCHREG_MAX_DECISIONS_PER_USER", str(max(50, (len(sizes) + 1) * (2 * args.repeats + 5))))
    url = setup(admin_url, args.scratch)
    try:
        from django.contrib.auth import get_user_model
        from django.test import Client

        from registry.services.submissions import submission_create
        from registry.services.tokens import token_create

        user = get_user_model().objects.create_user("bench")
        from django.contrib.auth.models import Group

        user.groups.add(Group.objects.get_or_create(name="submitter")[0])
        token = token_create(user=user, name="b", scopes="submit,read")[1]
        client = Client(SERVER_NAME="localhost", HTTP_AUTHORIZATION=f"Token {token}")
        runs = [submission_create(document=d, submitted_by=user)[0] for d in candidate_documents()]
        body = {"title": "bench", "question": QUESTION}
        have, rows, colds = len(runs), [], []
        from registry.warmup import prepare_process

        for size in sizes:
            fill(url, have, size, user.pk)
            have = size
            # As registry/wsgi.py readies every server process: without it, a full garbage collection walks the
            # ~400k objects a process holds at some request, which a server does not (bench/pages.py does the same).
            prepare_process()
            cpu_lookup: list[float] = []
            cpu_answer: list[float] = []
            lookup, q_lookup = measure(
                client, f"/api/v1/submissions/{runs[0].pk}/comparable", None, args.repeats, lambda b, i: b, cpu_lookup
            )
            profile = cProfile.Profile() if args.profile else None
            with profile or contextlib.nullcontext():
                answer, q_answer = measure(client, "/api/v1/decisions", body, args.repeats, lambda b, i: b, cpu_answer)
            if profile is not None:
                profile.dump_stats(args.profile)  # the last size's; the first request of each size warms up
            cpu_cold: list[float] = []
            cold, _ = measure(client, "/api/v1/decisions", body, args.repeats, forget, cpu_cold)
            rows.append((size, lookup, q_lookup, answer, q_answer, np.median(cpu_answer), np.median(cpu_lookup)))
            colds.append((size, cold, np.median(cpu_cold), lookup))
        print(
            f"{'runs':>9} | {'decision p50':>12} {'p95':>8} {'SQL':>4} {'CPU':>7} | {'lookup p50':>10} {'p95':>7} "
            f"{'SQL':>4} {'CPU':>7} | decision / lookup (p50; CPU)"
        )
        for size, lookup, ql, answer, qa, cpu_a, cpu_l in rows:
            print(
                f"{size:>9,} | {np.percentile(answer, 50):10.1f}ms {np.percentile(answer, 95):7.1f}ms {qa:>4} "
                f"{cpu_a:5.1f}ms | {np.percentile(lookup, 50):8.1f}ms {np.percentile(lookup, 95):6.1f}ms {ql:>4} "
                f"{cpu_l:5.1f}ms | {np.percentile(answer, 50) / np.percentile(lookup, 50):6.1f}×; {cpu_a / cpu_l:5.1f}×"
            )
        parts = answer_parts(user, args.repeats)  # at the last, largest size
        print(f"Where an answer's time goes at {sizes[-1]:,} runs (each part in-process, median of {args.repeats}):")
        for name, ms in parts.items():
            print(f"  {name:66s} {ms:7.1f} ms")
        print("Nothing remembered (each run's grouping worked out again, as for runs no answer has read yet):")
        for size, cold, cpu_c, lookup in colds:
            print(
                f"{size:>9,} | {np.percentile(cold, 50):10.1f}ms {np.percentile(cold, 95):7.1f}ms      "
                f"{cpu_c:5.1f}ms | decision / lookup {np.percentile(cold, 50) / np.percentile(lookup, 50):6.1f}×"
            )
    finally:
        from django.db import connections

        connections.close_all()
        scratch.drop(admin_url, args.scratch)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(whole benchmark {time.perf_counter() - t0:.0f} s)")
