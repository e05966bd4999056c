"""`audit verify`'s run checks (registry/audit/verify/runs.py: each run's text, columns, keys and entry) over N
stored runs, in one process against in ranges of id, one process per core (registry/audit/verify/ranges.py), on
the same rows in one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.audit_runs [-n 4000] [--repeats 3]

Creates and drops a scratch database (--scratch NAME). The runs are the server example on N machine names, stored
as a lab stores them (submission_create). Prints each way's median wall and CPU (this process's, and the range
processes' together) and the ratio; no pass/fail. The entries' checks have their own bench (bench.audit_append).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import sys
import time
from typing import Any

from bench.comparisons import ROOT, setup
from devtools import scratch

SCRATCH = "benchreg_bench_audit_runs"


def _cpu() -> float:
    """CPU seconds of this process and of its waited-for children (the range processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=4000, help="runs stored (default 4000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="200 runs, 1 repeat: CI's check that the bench runs")
    parser.add_argument("--scratch", default=SCRATCH, help="scratch database name (created and dropped)")
    args = parser.parse_args()
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (a scratch database is created and dropped)")
    count, repeats = (200, 1) if args.smoke else (args.n, args.repeats)
    setup(admin_url, args.scratch)
    try:
        from django.contrib.auth import get_user_model

        from registry.audit.sequencer import audit_integrate
        from registry.audit.verify import ranges, runs
        from registry.audit.verify.findings import Report
        from registry.services.submissions import submission_create

        user = get_user_model().objects.create_user("bench")
        base = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())
        started = time.perf_counter()
        for i in range(count):
            doc = copy.deepcopy(base)
            doc["system"]["name"] = f"bench-node-{i:06d}"
            submission_create(document=doc, submitted_by=user)
        audit_integrate()
        print(f"{count:,} runs stored in {time.perf_counter() - started:.1f} s; {ranges.cores()} cores")

        ways: dict[str, dict[str, list[float]]] = {}
        for _ in range(repeats):  # alternated, so a drift of the host falls on both
            for name, ranges_from in (("one process", 10**12), ("in ranges", 0)):
                runs.RUN_RANGES_FROM = ranges_from
                report: Any = Report()
                cpu, wall = _cpu(), time.perf_counter()
                runs.verify_runs(report)
                figures = ways.setdefault(name, {"wall": [], "cpu": []})
                figures["wall"].append(time.perf_counter() - wall)
                figures["cpu"].append(_cpu() - cpu)
                assert report.runs == count and not report.findings, (report.runs, report.findings[:3])
        for name, figures in ways.items():
            wall, cpu = statistics.median(figures["wall"]), statistics.median(figures["cpu"])
            print(
                f"verify_runs {name:<12} {wall:7.2f} s wall (of {len(figures['wall'])}), {cpu:6.2f} CPU-s, "
                f"{1e3 * wall / count:.3f} ms per run"
            )
        one, split = (statistics.median(ways[k]["wall"]) for k in ("one process", "in ranges"))
        print(f"in ranges / one process: {split / one:.2f}x wall")
    finally:
        from django.db import connections

        connections.close_all()
        scratch.drop(admin_url, args.scratch)


if __name__ == "__main__":
    main()
