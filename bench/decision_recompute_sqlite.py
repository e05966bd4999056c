"""On the embedded default (SQLite), how long a submission waits while the worker recomputes many decisions.

    python -m bench.decision_recompute_sqlite [--decisions 150] [--submissions 40] [--clients 4] [--smoke]

SQLite has one write lock for the whole database, and benchreg takes it when a transaction starts (IMMEDIATE). A
recompute that held it while computing an answer (~0.1-0.2 s each) made a burst of submissions on a question with
~150 decisions wait up to 19 s (issue 42). Here, in a fresh data dir: three runs of the server example, then
`--decisions` decisions on their question (three owners); first `--submissions` submissions are timed with nothing
else running (the baseline), then the same burst from `--clients` threads while a worker process recomputes the
stale decisions as the embedded worker does (every submission marks them all stale again). Prints the longest
wait, p50 and p95 of each, the ratio of the longest wait under recompute to the quiet p50, and what the worker did
meanwhile. No pass/fail (tests/registry/decisions/test_recompute.py bounds the smoke run).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
QUESTION = {
    "workload": "decoder-small",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
    "quality": {"target_ratio": 0.99},
    "demand": {"value": 20000, "unit": "tokens/s"},
    "prices": {"system_hour": {"*": 50.0}, "energy_per_kwh": 0.1},
}
EXAMPLE = json.loads((ROOT / "protocol/examples/inference-server-h100-bf16.json").read_text())


def document(n: int) -> bytes:
    doc = copy.deepcopy(EXAMPLE)
    doc["system"]["name"] = f"bench-recompute-{n}"
    doc["metrics"]["throughput"]["value"] = 1000.0 + n
    doc["metrics"]["quality"]["target_ratio"] = 0.99
    return json.dumps(doc).encode()


def _django(data: Path, *, migrate: bool = True) -> None:
    os.environ.update(BENCHREG_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="registry.settings")
    os.environ["CELERY_BROKER_URL"] = "memory://"  # dispatched after commit, as to the embedded worker's queue
    os.environ["BENCHREG_THROTTLE_USER"] = "1000000/min"
    for name in ("DATABASE_URL", "BENCHREG_EMBEDDED_WORKER"):
        os.environ.pop(name, None)
    import django
    from django.core.management import call_command

    django.setup()
    if migrate:
        call_command("migrate", interactive=False, verbosity=0)


def worker_main(data: Path) -> None:
    """The embedded worker's part, in a process of its own as there: recompute the question's stale decisions,
    pass after pass, until its standard input closes; then print what it did as one JSON line."""
    _django(data, migrate=False)
    from registry.services.decisions import decisions_recompute_stale

    print("ready", flush=True)
    closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
    passes: list[float] = []
    done = {"recomputed": 0, "flagged": 0, "failed": 0}
    while not closed.is_set():
        started = time.perf_counter()
        counts = decisions_recompute_stale(workload="decoder-small", scenario="server")
        if sum(counts.values()):
            passes.append(time.perf_counter() - started)
            for key, value in counts.items():
                done[key] += value
        else:
            closed.wait(0.02)
    print(json.dumps({"passes": passes, "done": done}), flush=True)


def start_worker(data: Path) -> subprocess.Popen[str]:
    """The worker process, once it has loaded Django and is about to recompute."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "bench.decision_recompute_sqlite", "--worker-of", str(data)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    said = worker.stdout.readline()
    if said.strip() != "ready":
        raise SystemExit(f"the worker did not start: {said!r}")
    return worker


def burst(token: str, serial: Any, count: int, clients: int) -> tuple[list[float], list[int]]:
    """`count` submissions from `clients` threads; each one's wait in seconds, and the statuses answered."""
    from django.db import connections
    from django.test import Client

    waits: list[float] = []
    statuses: list[int] = []
    lock = threading.Lock()

    def client_loop(share: int) -> None:
        client = Client(SERVER_NAME="localhost", HTTP_AUTHORIZATION=f"Token {token}")
        try:
            for _ in range(share):
                with lock:
                    body = document(next(serial))
                started = time.perf_counter()
                response = client.post("/api/v1/submissions", body, content_type="application/json")
                with lock:
                    waits.append(time.perf_counter() - started)
                    statuses.append(response.status_code)
        finally:
            connections.close_all()

    shares = [count // clients + (i < count % clients) for i in range(clients)]
    threads = [threading.Thread(target=client_loop, args=(share,)) for share in shares]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return waits, statuses


def _setup(decisions: int) -> str:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test.utils import override_settings

    from registry.services.decisions import decision_create
    from registry.services.tokens import token_create

    user = get_user_model().objects.create_user("bench")
    user.groups.add(Group.objects.get_or_create(name="submitter")[0])
    token = token_create(user=user, name="b", scopes="submit,read")[1]
    owners = [get_user_model().objects.create_user(f"owner-{i}") for i in range(3)]
    with override_settings(BENCHREG_MAX_DECISIONS_PER_USER=max(50, decisions)):
        for i in range(decisions):
            decision_create(owner=owners[i % 3], title=f"decision {i}", question=QUESTION)
    return token


def _line(label: str, waits: list[float]) -> str:
    ms = np.array(waits) * 1000
    return (
        f"{label:<34} longest {ms.max():8.1f} ms   p50 {np.percentile(ms, 50):7.1f} ms   "
        f"p95 {np.percentile(ms, 95):7.1f} ms   ({len(ms)} submissions)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=None, help="decisions on the question (default 150)")
    parser.add_argument("--submissions", type=int, default=None, help="submissions in the burst (default 40)")
    parser.add_argument("--clients", type=int, default=4, help="threads submitting at once (default 4)")
    parser.add_argument("--smoke", action="store_true", help="30 decisions, 12 submissions: CI's check")
    parser.add_argument("--worker-of", type=Path, default=None, help=argparse.SUPPRESS)  # the worker process
    args = parser.parse_args()
    if args.worker_of is not None:
        worker_main(args.worker_of)
        return
    decisions = args.decisions or (30 if args.smoke else 150)
    count = args.submissions or (12 if args.smoke else 40)
    with tempfile.TemporaryDirectory(prefix="bench-recompute-") as data:
        _django(Path(data))
        from registry.models import Decision

        serial = iter(range(10**6))
        token = _setup(decisions)
        burst(token, serial, 2, 1)  # warm-up: code paths, caches
        quiet, _ = burst(token, serial, count, 1)  # the baseline: the same submissions, nothing recomputing
        Decision.objects.update(stale_since=None, recompute_error="")
        worker = start_worker(Path(data))
        loaded, statuses = burst(token, serial, count, args.clients)
        said = worker.communicate(timeout=600)[0].splitlines()
        did = json.loads(next(line for line in said if line.startswith("{")))
        print(f"SQLite, {decisions} decisions on the question, {args.clients} clients submitting")
        print(_line("submissions, nothing recomputing:", quiet))
        print(_line("submissions while recomputing:", loaded))
        bad = [s for s in statuses if s != 201]
        print(f"longest submission wait while recomputing: {max(loaded) * 1000:.1f} ms")
        print(f"ratio (longest while recomputing ÷ quiet p50): {max(loaded) / np.percentile(quiet, 50):.1f}×")
        print(f"answers other than 201 while recomputing: {len(bad)} {sorted(set(bad)) if bad else ''}".rstrip())
        longest = max(did["passes"], default=0.0)
        print(f"the worker meanwhile: {len(did['passes'])} passes, {did['done']}, longest pass {longest * 1000:.0f} ms")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(whole benchmark {time.perf_counter() - t0:.0f} s)")
