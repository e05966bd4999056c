"""Decision reports: render + sign time for reports of 2, 10 and 50 runs, and verification time.

    .venv/bin/python bench/reports.py [--quick | --smoke] [--sizes 2,10,50] [--repeats 3]

Runs against the embedded default (SQLite in a fresh temporary data directory, eager Celery), so it measures the
report pipeline, not a database server. Each run carries raw samples (720 TTFT values, 60 throughput values), as
runner-produced runs do. Per size it prints the median over repeats of:
total (the end-to-end request: checkpoint, evidence, charts, PDF/A-3b, PAdES signature with timestamp, file,
audit entry), verify (`report_verify`: signature, evidence, proofs and the registry lookup), and the same steps
one by one: evidence (checkpoint, proofs, JSON), charts (matplotlib SVG), render (WeasyPrint) and sign; plus the
PDF size and page count. Key generation (first use) is timed once on its own.

Then the standalone verifier as a third party runs it: `benchreg verify FILE --cert PEM --log-key VKEY` in a fresh
interpreter each time (start-up included, no Django), against `pdfsig FILE` (poppler, C) on the same file, both
timed like hyperfine (one warm-up, then --verify-runs runs; median and min wall time) and given as a ratio.
Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LAST: dict[str, bytes] = {}  # the last report rendered, for --keep and the verify timing
SYSTEMS = ("bench-h100", "bench-h200", "bench-mi300", "bench-gaudi3", "bench-l40s")
# Each system its own accelerator: arms are configurations, so five models make a five-arm report.
ACCELERATORS = (
    ("NVIDIA", "H100 80GB HBM3"),
    ("NVIDIA", "H200 141GB HBM3e"),
    ("AMD", "Instinct MI300X"),
    ("Intel", "Gaudi 3"),
    ("NVIDIA", "L40S"),
)


def _setup() -> None:
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.update(
        BENCHREG_DATA_DIR=tempfile.mkdtemp(prefix="benchreg-bench-reports-"), DJANGO_SETTINGS_MODULE="registry.settings"
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _document(base: dict, i: int) -> dict:
    """Run i: one of five systems, each with its own accelerator (repetitions beyond five), with raw TTFT and
    throughput samples."""
    doc = copy.deepcopy(base)
    system = SYSTEMS[i % len(SYSTEMS)]
    rng = random.Random(i)
    speed = 1.0 + 0.15 * (i % len(SYSTEMS)) + 0.002 * i
    doc["system"]["name"] = system
    vendor, model = ACCELERATORS[i % len(SYSTEMS)]
    doc["system"]["accelerators"][0].update(vendor=vendor, model=model)
    doc["metrics"]["throughput"]["value"] = round(1260.8 * speed, 2)
    ttft = [round(rng.lognormvariate(4.1, 0.25) / speed, 3) for _ in range(720)]
    doc["samples"] = {
        "ttft_ms": {"unit": "ms", "repetitions": [ttft[k::3] for k in range(3)]},
        "throughput": {
            "unit": "tokens/s",
            "repetitions": [[round(rng.gauss(1260.8 * speed, 20), 2) for _ in range(20)] for _ in range(3)],
        },
    }
    pooled = sorted(ttft)
    ranks = {p: pooled[-(-q * len(pooled) // 100) - 1] for p, q in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99))}
    doc["metrics"]["ttft_ms"].update(
        count=len(pooled), min=pooled[0], max=pooled[-1], mean=round(sum(pooled) / len(pooled), 3), **ranks
    )
    return doc


def _comparison(user, n: int, start: int):  # type: ignore[no-untyped-def]
    from registry.services.comparisons import comparison_create
    from registry.services.submissions import submission_create

    base = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())
    runs = [submission_create(document=_document(base, start + i), submitted_by=user)[0] for i in range(n)]
    prices = {s: 2.0 + k for k, s in enumerate(SYSTEMS)}
    return comparison_create(runs=runs, axis="system", created_by=user, prices=prices)[0]


def _one(user, n: int, start: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    from registry.choices import CheckpointReason
    from registry.reports import REASON_PREFIX
    from registry.reports.context import report_context
    from registry.reports.evidence import evidence_build
    from registry.reports.render import render_pdf
    from registry.reports.signing import sign_pdf, signing_identity
    from registry.selectors.standing import comparison_members
    from registry.services.audit import checkpoint_sign
    from registry.services.reports import certificate_words, report_bytes, report_render, report_request, report_verify

    comparison = _comparison(user, n, start)
    identity = signing_identity()
    t0 = time.perf_counter()
    # Outside a transaction the on-commit hook fires at once and Celery runs eagerly: this is request + render.
    report = report_request(comparison=comparison, title=f"Bench {n}", decision="bench", requested_by=user)
    total = time.perf_counter() - t0
    done = report_render(report_id=report.pk)  # a no-op now: shows the task is idempotent
    assert done is not None and done.status == "ready", done and done.last_error
    pdf = report_bytes(done)
    t1 = time.perf_counter()
    verdict = report_verify(pdf=pdf)
    verify = time.perf_counter() - t1
    assert verdict.valid, verdict.lines()
    # The same steps again, one by one, to see where the time goes.
    t2 = time.perf_counter()
    checkpoint = checkpoint_sign(reason=CheckpointReason.REPORT)
    runs = comparison_members(done.comparison)
    evidence = evidence_build(report=done, runs=runs, checkpoint=checkpoint, identity=identity)
    t3 = time.perf_counter()
    context = {
        **report_context(evidence.document, certificate=certificate_words(identity)),
        "evidence_digest": evidence.digest,
    }
    t4 = time.perf_counter()
    unsigned = render_pdf(context, evidence=evidence.canonical, evidence_digest=evidence.digest)
    t5 = time.perf_counter()
    sign_pdf(unsigned, identity=identity, reason=REASON_PREFIX + evidence.digest)
    t6 = time.perf_counter()
    out: dict[str, float] = {
        "evidence": t3 - t2,
        "charts": t4 - t3,
        "render": t5 - t4,
        "sign": t6 - t5,
        "total": total,
        "verify": verify,
    }
    out.update(kib=len(pdf) / 1024, evidence_kib=len(evidence.canonical) / 1024, pages=_pages(pdf))
    LAST["pdf"] = pdf
    return out


def _pages(pdf: bytes) -> float:
    import io

    from pyhanko.pdf_utils.reader import PdfFileReader

    return float(PdfFileReader(io.BytesIO(pdf), strict=False).root["/Pages"]["/Count"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes 2 and 10, one repeat")
    parser.add_argument(
        "--smoke", action="store_true", help="size 2, one repeat, one verify run: CI's check that the bench runs"
    )
    parser.add_argument("--sizes", default="2,10,50")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the last (largest) report here, to look at")
    parser.add_argument("--verify-runs", type=int, default=10, help="timed runs of each verifier command")
    args = parser.parse_args()
    sizes = [2] if args.smoke else [2, 10] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeats = 1 if args.quick or args.smoke else args.repeats
    if args.smoke:
        args.verify_runs = 1
    _setup()
    from django.contrib.auth import get_user_model

    from registry.reports.signing import signing_identity

    user = get_user_model().objects.create_user("bench", password="bench-only-password")
    t = time.perf_counter()
    signing_identity()
    print(f"key generation on first use (CA, ECDSA P-256 signer, RSA-3072 TSA): {time.perf_counter() - t:.2f} s")
    print(
        f"{'runs':>5} {'evidence s':>10} {'charts s':>9} {'render s':>9} {'sign s':>7} {'total s':>8} "
        f"{'verify s':>9} {'PDF KiB':>8} {'evid KiB':>9} {'pages':>6}"
    )
    start = 0
    for n in sizes:
        samples = []
        for _ in range(repeats):
            samples.append(_one(user, n, start))
            start += n
        med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
        print(
            f"{n:>5} {med['evidence']:>10.2f} {med['charts']:>9.2f} {med['render']:>9.2f} {med['sign']:>7.2f} "
            f"{med['total']:>8.2f} {med['verify']:>9.2f} {med['kib']:>8.0f} {med['evidence_kib']:>9.0f} "
            f"{med['pages']:>6.0f}"
        )
    if args.keep:
        args.keep.write_bytes(LAST["pdf"])
    _verify_wall_time(LAST["pdf"], args.verify_runs)


def _wall(command: list[str], runs: int) -> list[float]:
    """Wall time of `command` in a fresh process, like hyperfine: one warm-up, then `runs` timed runs."""
    subprocess.run(command, capture_output=True, check=False)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(command, capture_output=True, check=False)
        times.append(time.perf_counter() - t)
    return times


def _verify_wall_time(pdf: bytes, runs: int) -> None:
    from registry.audit.keys import checkpoint_key
    from registry.reports.signing import signing_identity

    folder = Path(tempfile.mkdtemp(prefix="benchreg-bench-verify-"))
    (folder / "report.pdf").write_bytes(pdf)
    (folder / "cert.pem").write_bytes(signing_identity().public_pem())  # the published material, nothing else
    env_free = [sys.executable, "-c", "import sys; from registry.cli import main; sys.exit(main())"]
    ours = [
        *env_free,
        "verify",
        str(folder / "report.pdf"),
        "--cert",
        str(folder / "cert.pem"),
        "--log-key",
        checkpoint_key().vkey,
    ]
    done = subprocess.run(ours, capture_output=True, text=True, check=False)
    print(f"\nstandalone verify ({len(pdf) / 1024:.0f} KiB report): {done.stdout.splitlines()[1:2]}")
    mine = _wall(ours, runs)
    line = f"  benchreg verify: median {statistics.median(mine):.3f} s, min {min(mine):.3f} s (wall, with start-up)"
    if shutil.which("pdfsig"):
        theirs = _wall(["pdfsig", str(folder / "report.pdf")], runs)
        line += (
            f"; pdfsig: median {statistics.median(theirs):.3f} s, min {min(theirs):.3f} s; ratio "
            f"{statistics.median(mine) / statistics.median(theirs):.1f}x (median)"
        )
    print(line)


if __name__ == "__main__":
    main()
