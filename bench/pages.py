"""Server time of the browsing pages with 100k runs stored in PostgreSQL: catalogue (plain, filtered, searched,
one comparable set sorted by headline), overview matrix, run page, comparison page — against a trivial view in the
same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.pages [--quick | --smoke] [--runs N]

Uses a scratch database (benchreg_bench_pages), created, migrated, filled by bulk insert of synthetic rows (the
catalogue's summary table is then filled by `manage.py rebuild_catalogue`, as the services would have kept it) and
dropped here. Synthetic rows are built from the protocol's examples (real documents, ~5 KB each) with workload,
system, accelerator, precision, batch size, submitter and framework version varied; comparability keys are
computed per question, not per row, and the rows are not re-validated (this measures reading, not ingest).
Server time is measured around Django's handler (middleware, session, templates, queries), in-process.
Prints figures; no pass/fail.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from devtools import scratch

ROOT = Path(__file__).resolve().parent.parent
# BENCH_SCRATCH_DB: another name where several checkouts benchmark on one server at once.
SCRATCH = os.environ.get("BENCH_SCRATCH_DB", "benchreg_bench_pages")
BUDGET_MS = 300.0
EXAMPLES = ("inference-server-h100-bf16", "inference-offline-cpu-int8", "training-h100-bf16")
WORKLOADS = 24
SYSTEMS = 600
ACCELERATORS = (
    ("NVIDIA", "H100 80GB HBM3"),
    ("NVIDIA", "H200 141GB HBM3e"),
    ("NVIDIA", "B200 180GB HBM3e"),
    ("NVIDIA", "L40S 48GB"),
    ("AMD", "Instinct MI300X"),
    ("AMD", "Instinct MI325X"),
    ("Intel", "Gaudi 3"),
    ("Google", "TPU v5p"),
)
PRECISIONS = ("bf16", "fp16", "fp8", "int8")
BATCHES = (1, 8, 32, 64)
TORCH = ("2.11.0", "2.12.0", "2.13.0", "2.13.1", "2.14.0")


def _question(base: dict[str, Any], workload: int, precision: str, batch: int) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    doc["workload"]["name"] = f"{doc['workload']['name']}-{workload:02d}"
    doc["workload"]["shape"]["batch_size"] = batch
    doc["precision"]["weights"] = precision
    return doc


def fill(n: int, seed: int = 7) -> dict[str, Any]:
    """Bulk-insert n synthetic runs (and a few withdrawals); returns ids to benchmark pages with."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from protocol.comparability import comparability_key
    from protocol.summary import summarize
    from registry.models import Submission, Withdrawal

    rng = random.Random(seed)
    user = get_user_model().objects.create_user("bench", password="bench-password-not-secret")
    bases = [json.loads((ROOT / "protocol/examples" / f"{name}.json").read_text()) for name in EXAMPLES]
    questions: dict[tuple[int, int, str, int], tuple[dict[str, Any], dict[str, str]]] = {}
    now = timezone.now()
    batch: list[Submission] = []
    for i in range(n):
        b, w = rng.randrange(len(bases)), rng.randrange(WORKLOADS)
        p, bs = rng.choice(PRECISIONS), rng.choice(BATCHES)
        if (b, w, p, bs) not in questions:
            doc = _question(bases[b], w, p, bs)
            questions[(b, w, p, bs)] = (
                doc,
                {a: comparability_key(doc, a) for a in ("system", "software", "precision")},
            )
        template, keys = questions[(b, w, p, bs)]
        doc = copy.deepcopy(template)
        vendor, model = rng.choice(ACCELERATORS)
        doc["system"]["name"] = f"lab-{model.split()[0 if vendor != 'AMD' else 1].lower()}-{rng.randrange(SYSTEMS):03d}"
        for acc in doc["system"].get("accelerators") or []:
            acc["vendor"], acc["model"] = vendor, model
        doc["software"].setdefault("frameworks", {})["torch"] = rng.choice(TORCH)
        doc["provenance"]["submitter"] = f"lab-{rng.randrange(30)}"
        primary = doc["metrics"]["primary"].partition(".")[0]
        metric = doc["metrics"].get(primary)
        if isinstance(metric, dict) and isinstance(metric.get("value"), int | float):
            metric["value"] = round(metric["value"] * rng.uniform(0.5, 2.0), 3)
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        batch.append(
            Submission(
                digest=(run_digest := "sha256:" + hashlib.sha256(f"{i}:{text}".encode()).hexdigest()),
                measurement=run_digest,  # every synthetic run its own measurement, as the run store would say
                document=doc,
                canonical=text,
                comparability_key=keys["system"],
                comparability_key_software=keys["software"],
                comparability_key_precision=keys["precision"],
                **summarize(doc).columns(),
                submitted_by=user,
                submitted_by_name=user.username,
                submitted_at=now,
            )
        )
        if len(batch) == 2000:
            Submission.objects.bulk_create(batch)
            batch = []
    Submission.objects.bulk_create(batch)
    ids = list(Submission.objects.order_by("id").values_list("id", flat=True))
    Withdrawal.objects.bulk_create(
        [
            Withdrawal(
                submission_id=pk,
                reason="synthetic",
                withdrawn_by=user,
                withdrawn_by_name=user.username,
                withdrawn_at=now,
            )
            for pk in rng.sample(ids, max(1, n // 500))
        ]
    )
    return {"user": user, "questions": len(questions)}


def pick_pages(user: Any) -> dict[str, str]:
    """URLs to time: the largest comparable set gives a run with neighbours and a comparison of three."""
    from django.db.models import Count

    from registry.models import Submission
    from registry.services.comparisons import comparison_create

    key = (
        Submission.objects.filter(withdrawal__isnull=True)
        .values("comparability_key")
        .annotate(n=Count("*"))
        .order_by("-n")
        .first()["comparability_key"]
    )
    runs = list(Submission.objects.filter(comparability_key=key, withdrawal__isnull=True).order_by("id")[:3])
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user)
    sample = runs[0]
    from registry.presentation import charts
    from registry.web.comparisons import COMPARISON_CHARTS

    drawn = charts.comparison_charts(comparison.result, [r.document for r in runs])
    chart_pages = {
        f"comparison chart '{name}' (SVG)": f"/comparisons/{comparison.pk}/charts/{name}.svg"
        for name, (_, function, _) in COMPARISON_CHARTS.items()
        if function in drawn
    }
    return {
        "trivial view (login page)": "/accounts/login/",
        "catalogue": "/",
        "catalogue, 2 facets": f"/?precision={sample.precision_weights}&vendor={sample.accelerator_vendor}",
        "catalogue, search": "/?q=h100+lab-1",
        "catalogue, search matching every run": "/?q=lab",
        "catalogue, one set by headline": f"/?set={key}&sort=headline_desc",
        "catalogue, page 40": "/?page=40&sort=headline_asc",
        "overview matrix": "/matrix/",
        "overview matrix, 2 facets": f"/matrix/?precision={sample.precision_weights}&scenario={sample.scenario_kind}",
        "run page": f"/runs/{sample.pk}/",
        "comparison page (3 runs)": f"/comparisons/{comparison.pk}/",
        **chart_pages,
    }


def time_pages(user: Any, pages: dict[str, str], repeats: int, *, cold: bool) -> dict[str, list[float]]:
    """Server time per request. cold: the registry's caches (catalogue counts, chart SVGs) are emptied before
    each request, as after a new run arrives; warm: the same data version as the previous request."""
    from django.core.cache import cache
    from django.test import Client

    client = Client(SERVER_NAME="localhost")  # a host the settings allow (testserver is for tests only)
    client.force_login(user)
    out: dict[str, list[float]] = {}
    for name, url in pages.items():
        for _ in range(2):  # warm the process (templates, contract, query plans) as a running server has it
            assert client.get(url).status_code == 200, url
        times = []
        for _ in range(repeats):
            if cold:
                cache.clear()
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, url
        out[name] = times
    return out


def report(results: dict[str, list[float]], n: int, questions: int, label: str) -> None:
    baseline = statistics.median(results["trivial view (login page)"])
    print(f"\n{n:,} runs stored ({questions} distinct questions), PostgreSQL; {label}; server time per request, ms")
    print(f"{'page':<44} {'p50':>8} {'p95':>8} {'p50 / trivial':>14}  within {BUDGET_MS:.0f} ms (p95)")
    for name, times in results.items():
        ordered = sorted(times)
        p50 = statistics.median(ordered)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(f"{name:<44} {p50:8.1f} {p95:8.1f} {p50 / baseline:13.1f}x  {'yes' if p95 <= BUDGET_MS else 'NO'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 runs and fewer repeats")
    parser.add_argument("--smoke", action="store_true", help="1,000 runs, 2 repeats: CI's check that the bench runs")
    parser.add_argument("--runs", type=int, default=None, help="runs to store (default 100,000)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database afterwards")
    parser.add_argument("--scratch", default=SCRATCH, help="scratch database name (created and dropped)")
    args = parser.parse_args()
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url.startswith(("postgres://", "postgresql://")):
        sys.exit("set DATABASE_URL to a PostgreSQL server (e.g. postgres://postgres@127.0.0.1:5432/postgres)")
    n = args.runs or (1_000 if args.smoke else 10_000 if args.quick else 100_000)
    repeats = args.repeats or (2 if args.smoke else 10 if args.quick else 40)

    os.environ["DATABASE_URL"] = scratch.recreate(admin_url, args.scratch)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost")  # the bench client is SERVER_NAME="localhost"
    try:
        import django
        from django.core.management import call_command
        from django.db import connection

        django.setup()
        from registry.models import CatalogueCell

        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        filled = fill(n)
        stored = time.perf_counter()
        call_command("rebuild_catalogue", verbosity=0)
        rebuilt = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")  # as autovacuum would have done on a live registry
        print(
            f"stored {n:,} synthetic runs in {stored - started:.0f} s; rebuild_catalogue took "
            f"{rebuilt - stored:.1f} s for {CatalogueCell.objects.count():,} cells"
        )
        pages = pick_pages(filled["user"])
        from registry.warmup import prepare_process

        prepare_process()  # as registry/wsgi.py readies every server process (and freezes the fill's objects too)
        for cold in (True, False):
            label = "cold (caches emptied before each request)" if cold else "warm (same data version)"
            report(time_pages(filled["user"], pages, repeats, cold=cold), n, filled["questions"], label)
        connection.close()
    finally:
        if not args.keep:
            scratch.drop(admin_url, args.scratch)


if __name__ == "__main__":
    main()
