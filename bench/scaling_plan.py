"""Finding a scaling plan's runs (/scaling/<id>/, registry.selectors.scaling): the selector's query timed on a table
of many training runs, with the expression index of migration 0028 and without it (the baseline: the same query
reading every training run's document).

Needs DATABASE_URL (PostgreSQL): a scratch database is created, migrated and dropped. One plan of 6 runs is stored
through the submission service; the table is filled to `--runs` rows by copying that run in SQL (each copy another
digest and plan id). `python -m bench.scaling_plan --help`; `--smoke` is CI's check that it runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from devtools import scratch
from devtools.documents import scaling_plan_documents

SCRATCH = "benchreg_bench_scaling"
PLAN_PATH = "{scenario,distributed,scaling,id}"


def _setup(admin_url: str, name: str) -> None:
    url = scratch.recreate(admin_url, name)
    os.environ.update(
        DATABASE_URL=url, BENCHREG_DATA_DIR=tempfile.mkdtemp(), DJANGO_SETTINGS_MODULE="registry.settings"
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _fill(rows: int) -> None:
    """One plan stored through the service, then copies of its first run up to `rows` runs, in plans of 6."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from registry.services.submissions import submission_create

    user = get_user_model().objects.create_user("bench")
    for doc in scaling_plan_documents("bench-plan", [1, 2, 4]):
        submission_create(document=doc, submitted_by=user)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'registry_submission' "
            "AND is_generated = 'NEVER' AND column_name NOT IN ('id', 'digest', 'document')"
        )
        columns = [c for (c,) in cursor.fetchall()]
        names = ", ".join(columns)
        cursor.execute(
            f"INSERT INTO registry_submission ({names}, digest, document) "  # column names from the catalog
            f"SELECT {names}, 'sha256:' || md5(g::text) || md5(g::text), "
            f"jsonb_set(document, '{PLAN_PATH}', to_jsonb('plan-' || (g / 6)::text)) "
            "FROM registry_submission, generate_series(1, %s) g WHERE id = (SELECT min(id) FROM registry_submission)",
            [max(0, rows - 6)],
        )
        cursor.execute("ANALYZE registry_submission")


def _time(repeats: int) -> tuple[float, int]:
    """Median ms of the selector for the stored plan, and the runs it found."""
    from registry.selectors.scaling import scaling_runs

    times, found = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        found = len(scaling_runs(scaling_id="bench-plan"))
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50_000, help="training runs in the table (default 50,000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed lookups each way (median)")
    parser.add_argument("--smoke", action="store_true", help="600 runs, 3 lookups: CI's check that the bench runs")
    parser.add_argument("--scratch", default=SCRATCH, help="scratch database name (created and dropped)")
    args = parser.parse_args()
    runs, repeats = (600, 3) if args.smoke else (args.runs, args.repeats)
    admin = scratch.database_url(os.environ["DATABASE_URL"], "postgres")
    try:
        _setup(admin, args.scratch)
        _fill(runs)
        from django.db import connection

        indexed, found = _time(repeats)
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX registry_sub_scaling_plan")
        scanned, again = _time(repeats)
        connection.close()
    finally:
        scratch.drop(admin, args.scratch)
    print(f"runs in the table: {runs:,}; the plan's runs found: {found} and {again}")
    print(f"with the index (0028): {indexed:.2f} ms")
    print(f"without it (baseline, every training run's document read): {scanned:.2f} ms")
    print(f"ratio without / with: {scanned / indexed:.1f}x")


if __name__ == "__main__":
    main()
