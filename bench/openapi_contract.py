"""The OpenAPI contract, run long: Schemathesis with every check against a real server process on a scratch
PostgreSQL database (docs/api.md). The CI test runs the same thing with 3 examples per operation.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.openapi_contract --examples 50
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.openapi_contract --smoke

Prints the cases generated, failures and the time taken, and as a same-run baseline the rate of plain
GET /api/v1/protocol requests against the same server (the ratio says how much of the time is fuzzing work
rather than serving). Exit status 1 if Schemathesis found anything; its report is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from devtools import scratch
from devtools.contract import agent_pass, failure_report, fetch_schema, schemathesis_command, schemathesis_run

ROOT = Path(__file__).resolve().parent.parent
# The smoke run's operations: the protocol's and the runs' (reads, a submission, its refusals), enough to run every
# step of the bench in seconds; the contract test in CI fuzzes every operation.
SMOKE_OPERATIONS = "^/api/v1/(protocol|submissions)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=None, help="max examples per operation and phase (50)")
    parser.add_argument("--workers", type=int, default=None, help="Schemathesis workers (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument(
        "--operations",
        metavar="REGEX",
        help="only the operations whose path matches (Schemathesis --include-path-regex); default every one",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"1 example, 1 worker, the operations under {SMOKE_OPERATIONS}: CI's check that the bench runs "
        "(tests/registry/api/test_openapi_contract.py fuzzes every operation)",
    )
    parser.add_argument("--scratch", default="bench_openapi_contract", help="scratch database (created and dropped)")
    args = parser.parse_args()
    args.examples = args.examples or (1 if args.smoke else 50)
    # One worker in the smoke run, as in tests/registry/api/test_openapi_contract.py: Schemathesis' workers are
    # threads, and two of them parsing source at once can trip CPython 3.11's AST recursion check.
    args.workers = args.workers or (1 if args.smoke else 2)
    args.operations = args.operations or (SMOKE_OPERATIONS if args.smoke else None)
    admin_url = os.environ.get("DATABASE_URL", "")
    if not admin_url.startswith("postgres"):
        parser.error("set DATABASE_URL to a PostgreSQL server (a scratch database is created there)")
    name = args.scratch
    env = {
        **os.environ,
        "DATABASE_URL": scratch.recreate(admin_url, name),
        "DJANGO_SETTINGS_MODULE": "registry.settings",
        "BENCHREG_THROTTLE_ANON": "1000000/min",
        "BENCHREG_THROTTLE_USER": "1000000/min",
        "BENCHREG_THROTTLE_VERIFY": "1000000/min",
    }
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    seeded = subprocess.run(
        [
            python,
            "manage.py",
            "shell",
            "-c",
            "import json; from devtools.contract import seed; print('SEED' + json.dumps(seed()))",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    seed_ids = json.loads(next(line[4:] for line in seeded.splitlines() if line.startswith("SEED")))
    port = _free_port()
    server = subprocess.Popen(
        [
            python,
            "-m",
            "gunicorn",
            "registry.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--timeout",
            "120",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # a busy host takes its time to start gunicorn and import the app
        while True:
            try:
                if httpx.get(f"{base}/api/v1/protocol", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"bench.openapi_contract: the registry server did not come up on {base}")
                time.sleep(0.5)
        started = time.perf_counter()
        with httpx.Client(base_url=base) as client:
            for _ in range(200):
                client.get("/api/v1/protocol")
        baseline_rate = 200 / (time.perf_counter() - started)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            schema = fetch_schema(base, Path(folder))
            command = schemathesis_command(
                base,
                seed_ids["token"],
                schema=schema,
                max_examples=args.examples,
                seed_value=args.seed,
                workers=args.workers,
                extra=["--include-path-regex", args.operations] if args.operations else None,
            )
            # The agent-only operations with the agent's token first, while the agent and its job are as seeded (the
            # admin's pass revokes agents and cancels jobs); not in the smoke run, which selects other operations.
            agent = (
                None
                if args.smoke
                else schemathesis_run(agent_pass(command, seed_ids), timeout=3600, job=seed_ids["job"])
            )
            result = schemathesis_run(command, timeout=3600, job=seed_ids["job"])
        seconds = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
        if not args.keep:
            scratch.drop(admin_url, name)
    output = result.stdout + result.stderr
    generated = _generated(output)
    if agent is not None:
        agent_output = agent.stdout + agent.stderr
        generated += _generated(agent_output)
        output += "\n" + agent_output
    print(
        f"schemathesis --checks all, {args.examples} examples, seed {args.seed}"
        f"{f', operations {args.operations}' if args.operations else ''}"
        f"{', then the agent-only ones with the agent token' if agent is not None else ''}: {generated} cases "
        f"in {seconds:.1f} s ({generated / seconds:.1f} cases/s), exit {result.returncode}"
        f"{f' / {agent.returncode}' if agent is not None else ''}"
    )
    print(
        f"baseline: GET /api/v1/protocol {baseline_rate:.1f} req/s; ratio cases/s : baseline = "
        f"{generated / seconds / baseline_rate:.3f}"
    )
    failed = result.returncode != 0 or (agent is not None and agent.returncode != 0)
    if failed:
        print(failure_report(output))
    return 1 if failed else 0


def _generated(output: str) -> int:
    cases = re.search(r"(\d+) generated", output)
    return int(cases.group(1)) if cases else 0


if __name__ == "__main__":
    sys.exit(main())
