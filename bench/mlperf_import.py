"""Whole-round MLPerf import: result folders per second and total time through the full path (parse, map,
protocol check, store with audit entries, in batches) against the time to merely read and parse the same
files, in one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.mlperf_import ROUND_DIR
        [--round v4.1] [--batch-size 200]

ROUND_DIR is a published round (e.g. an extracted mlcommons/inference_results_v4.1 or training_results_v4.0);
the shared trimmed copies under ../shared/data/mlperf-rounds/ work too. Uses a scratch database
(benchreg_bench_mlperf, or --scratch), created, migrated and dropped here. Prints figures; no pass/fail. Its size is
the tree's: CI's check that it runs (tests/bench) gives it one submitter's folder of a trimmed round.

The baseline ("parse only") reads every file the importer read (the files its report marks 'used') and
parses it the cheapest way that still looks at every record: json.loads of each :::MLLOG line, a split of
each other line. The ratio says what the mapping, the protocol checks and the database cost on top of that.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

from devtools import scratch

SCRATCH = "benchreg_bench_mlperf"


def _parse_only(root: Path, paths: list[str]) -> float:
    started = time.perf_counter()
    for rel in paths:
        text = (root / rel).read_bytes().decode("utf-8", errors="replace")
        for line in text.splitlines():
            if ":::MLLOG " in line:
                with contextlib.suppress(ValueError):
                    json.loads(line.split(":::MLLOG ", 1)[1])
            elif rel.endswith(".json"):
                break
            else:
                line.partition(":")
        if rel.endswith(".json"):
            with contextlib.suppress(ValueError):
                json.loads(text)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--round", dest="round_name")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--scratch", default=SCRATCH, help="scratch database name (created and dropped)")
    args = parser.parse_args()
    if not args.root.is_dir():
        parser.error(f"{args.root}: not a folder (give a published round, e.g. ../shared/data/mlperf-rounds/...)")
    admin_url = scratch.database_url(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"), "postgres"
    )
    url = scratch.recreate(admin_url, args.scratch)
    os.environ.update(
        DATABASE_URL=url, BENCHREG_DATA_DIR=tempfile.mkdtemp(), DJANGO_SETTINGS_MODULE="registry.settings"
    )
    import django

    django.setup()
    from django.core.management import call_command

    from registry.services.imports import mlperf_import
    from registry.services.tokens import user_for_token

    try:
        call_command("migrate", verbosity=0)
        user = user_for_token(username="mlperf-bench")
        started = time.perf_counter()
        result = mlperf_import(
            root=args.root, submitted_by=user, round_name=args.round_name, batch_size=args.batch_size
        )
        full = time.perf_counter() - started
        started = time.perf_counter()
        again = mlperf_import(root=args.root, submitted_by=user, round_name=args.round_name, batch_size=args.batch_size)
        second = time.perf_counter() - started
        used = sorted({f.path for item in result.plan.items for f in item.files if f.status == "used"})
        size = sum((args.root / p).stat().st_size for p in used)
        parse = min(_parse_only(args.root, used) for _ in range(3))
        folders = len(result.outcomes)
        counts = ", ".join(f"{n} {s}" for s, n in sorted(result.counts.items()))
        print(
            f"MLPerf {result.suite} round {result.plan.round}: {folders} result folders ({counts}); "
            f"{len(used)} files read, {size / 2**20:.0f} MiB"
        )
        print(
            f"full import (PostgreSQL, batches of {args.batch_size}): {full:8.1f} s  "
            f"{folders / full:7.1f} result folders/s"
        )
        print(
            f"re-import (all known):                 {second:8.1f} s  {folders / second:7.1f} result folders/s "
            f"({', '.join(f'{n} {s}' for s, n in sorted(again.counts.items()))})"
        )
        print(f"parse only (same files, best of 3):    {parse:8.1f} s  {folders / parse:7.1f} result folders/s")
        print(f"ratio full import / parse only:        {full / parse:8.1f}×")
    finally:
        from django.db import connections

        connections.close_all()
        scratch.drop(admin_url, args.scratch)


if __name__ == "__main__":
    main()
