"""Every bench in bench/ runs, at its smallest size, and prints its figures with the baseline it measures beside them.

A bench that no longer runs cannot back a figure quoted from it (issue 42: `bench.decisions` and `bench.comparisons`
stopped on rows lacking new columns, `bench.audit_append` timed a log with 2,000,000 findings, and nothing
noticed). Each bench runs here as its users run it, `python -m bench.NAME --smoke ...`, in its own process; the
test fails if it exits non-zero or if a figure line it must print is missing. The sizes are far too small for the
numbers to mean anything: bench/README.md lists the real runs and their last measured values.

The benches that need PostgreSQL are marked `postgres` (.ci/run's PostgreSQL pass runs them; a skip there is a
failure). They work in scratch databases of their own, copied from a template migrated here once per pytest-xdist
worker (devtools/scratch.py, BENCH_SCRATCH_TEMPLATE), and dropped afterwards; none touches the test database.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools import scratch
from tests.conftest import ROOT, SHARED

ROUNDS = SHARED / "data" / "mlperf-rounds"
NUMBER = r"[\d,]+(?:\.\d+)?"


@dataclass(frozen=True)
class Bench:
    """One bench's smoke run: its module, arguments, and the lines (regular expressions) it must print."""

    module: str
    args: tuple[str, ...]
    figures: tuple[str, ...]
    postgres: bool = False


BENCHES = [
    Bench(
        "audit_proofs",
        ("--smoke",),
        (
            rf"leaf_hash of every entry\s+{NUMBER} s\s+{NUMBER}x",  # against plain SHA-256 of the same entries
            rf"build from leaf hashes .*\s{NUMBER}x baseline",
            rf"verify \(mean of 2,000\)\s+{NUMBER} µs",
        ),
    ),
    Bench(
        "runner_overhead",
        ("--smoke",),
        (
            rf"harness overhead: {NUMBER} µs per timed iteration",
            rf"runner/torch.utils.benchmark median ratio {NUMBER}",
        ),
    ),
    Bench(
        "reports",
        ("--smoke",),
        (
            rf"^\s+2\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}",  # a report of 2 runs
            rf"benchreg verify: median {NUMBER} s.*pdfsig: median {NUMBER} s.*ratio {NUMBER}x",
        ),
    ),
    Bench(
        "serving_load",
        ("--smoke",),
        (
            r"aiperf: not run \(no --peers-aiperf",  # the peers CI does not install are named, not skipped silently
            r"guidellm: not run \(no --peers-guidellm",
            # benchreg's TTFT p50 beside the law's truth (± the sd a perfect client shows), with its error in %
            rf"^\s+TTFT p50 ms\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+[+-]{NUMBER}$",
            rf"benchreg ceiling: {NUMBER} req/s",
            r"streams: 50 concurrent: 50/50 completed",
        ),
    ),
    Bench(
        "serving_telemetry",
        ("--smoke",),
        (
            rf"engine page {NUMBER} KiB, 17 samples kept: benchreg {NUMBER} ms CPU .*ratio {NUMBER}x",
            rf"dcgm page {NUMBER} KiB, 40 samples kept: benchreg {NUMBER} ms CPU .*ratio {NUMBER}x",
        ),
    ),
    Bench(
        "serving_import",
        ("--smoke",),
        (
            rf"sweep: aiperf-0\.13\.0: 5 levels, \d+ files read, {NUMBER} MB",
            rf"first import \(timed apart\)\s+{NUMBER} s",  # the files read once before the timed imports
            rf"benchreg import serving \(fresh SQLite\)\s+{NUMBER} s",  # against start-up and reading the files
            rf"start-up alone \(the command's --help\)\s+{NUMBER} s",
            rf"read \+ json\.loads of the same files\s+{NUMBER} s",
            rf"import / read ratio {NUMBER}x; import beyond start-up -?{NUMBER} s",
            rf"CPU time \(user \+ system, median\): import {NUMBER} s, start-up {NUMBER} s, read {NUMBER} s; import "
            rf"beyond start-up -?{NUMBER} s CPU, -?{NUMBER}x the read",
        ),
    ),
    Bench(
        "startup",
        ("--smoke",),
        (
            rf"^django\.setup\(\), no apps \(bare Django\)\s+{NUMBER}\s+{NUMBER}\s+1\.00x",  # the in-run baseline
            rf"^benchreg import serving --help\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}x",
            rf"^pytest --collect-only tests/registry/presentation\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}x",
            rf"the registry's app loading beyond bare Django: -?{NUMBER} s CPU",
        ),
    ),
    Bench(
        "comparisons",
        ("--smoke",),
        (
            rf"compare\(\) of 10 runs .* p50 {NUMBER} ms",
            # at 1,000 runs: lookup p50, p95, SQL | comparison p50, p95, SQL | growth against 200 runs
            rf"^\s+1,000 \|\s+{NUMBER}ms\s+{NUMBER}ms\s+\d+ \|\s+{NUMBER}ms\s+{NUMBER}ms\s+\d+ \|"
            rf"\s+{NUMBER}× /\s+{NUMBER}×",
        ),
        postgres=True,
    ),
    Bench(
        "decisions",
        ("--smoke",),
        (
            # at 1,000 runs: decision p50, p95, SQL, CPU | lookup p50, p95, SQL, CPU | ratios of p50 and of CPU
            rf"^\s+1,000 \|\s+{NUMBER}ms\s+{NUMBER}ms\s+\d+\s+{NUMBER}ms "
            rf"\|\s+{NUMBER}ms\s+{NUMBER}ms\s+\d+\s+{NUMBER}ms \|\s+{NUMBER}×;\s+{NUMBER}×",
        ),
        postgres=True,
    ),
    Bench(
        "decision_flagging",
        ("--smoke",),
        (rf"ratio \(p50, 6 ÷ 0\): {NUMBER}×", rf"the worker's recompute of the 6 afterwards: {NUMBER} ms"),
        postgres=True,
    ),
    Bench(
        "audit_append",
        ("--smoke",),
        (
            rf"4 writers: audit_append .* {NUMBER}x of {NUMBER} plain INSERTs/s",
            rf"verify_log .*\s{NUMBER}x stream, {NUMBER}x SHA-256; OK",  # a log that verifies, or the bench stops
            rf"verify_log CPU in this process and its workers\s+{NUMBER} CPU-s\s+{NUMBER}x the stream's CPU",
            rf"verify_log CPU with PostgreSQL's\s+({NUMBER} CPU-s .* no schedule ends before {NUMBER} s|absent)",
            rf"verify_log / stream, median of 2 alternating rounds\s+{NUMBER}x",
            rf"GET /api/v1/audit/inclusion, anonymous .* {NUMBER} ms",
        ),
        postgres=True,
    ),
    Bench(
        "audit_runs",
        ("--smoke",),
        (
            rf"verify_runs one process\s+{NUMBER} s wall \(of 1\),\s+{NUMBER} CPU-s",
            rf"verify_runs in ranges\s+{NUMBER} s wall \(of 1\),\s+{NUMBER} CPU-s",  # every run found, none amiss
            rf"in ranges / one process: {NUMBER}x wall",
        ),
        postgres=True,
    ),
    Bench(
        "pages",
        ("--smoke",),
        (rf"^catalogue\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}x", rf"^run page\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}x"),
        postgres=True,
    ),
    Bench(
        "scaling_plan",
        ("--smoke",),
        (
            rf"with the index \(0028\): {NUMBER} ms",
            rf"without it \(baseline, every training run's document read\): {NUMBER} ms",
            rf"ratio without / with: {NUMBER}x",
        ),
        postgres=True,
    ),
    Bench(
        "tiles",
        ("--smoke",),
        (rf"ratio tile / static: {NUMBER}", rf"sign \+ cosign with 3 witness\(es\): median {NUMBER} ms"),
        postgres=True,
    ),
    Bench(
        "ingest",
        ("--smoke",),
        (
            rf"HTTP single documents,  4 client\(s\):\s+{NUMBER} /s\s+\({NUMBER} of bare INSERT\)",
            rf"framework floor .*real/floor {NUMBER}",
            rf"HTTP bulk .*\({NUMBER} of bare COPY\)",
            rf"core\(s\) all busy allow at most +{NUMBER} /s +\({NUMBER} of bare COPY\)|CPU per bulk document: absent",
            r"audit log after the run: \d+ entries .*, 0 still queued",
            r"SQL statements per single submission \(the request's thread\): \d+, of which \d+ transaction commands",
            rf"CPU per submission,  4 client\(s\), benchreg: server .* = +{NUMBER} ms|CPU per document, benchreg, 4 "
            r"client\(s\): absent",
            rf"MLflow(: not run \(give --mlflow-python| runs .*benchreg/MLflow {NUMBER}x)",
        ),
        postgres=True,
    ),
    Bench(
        "openapi_contract",
        ("--smoke",),
        (
            r"schemathesis --checks all, 1 examples, seed 1, operations .*: [1-9]\d* cases in",
            rf"ratio cases/s : baseline = {NUMBER}",
        ),
        postgres=True,
    ),
    Bench(
        "decision_recompute_sqlite",
        ("--smoke",),
        (
            rf"longest submission wait while recomputing: {NUMBER} ms",
            rf"ratio \(longest while recomputing ÷ quiet p50\): {NUMBER}×",
            r"answers other than 201 while recomputing: 0$",
            rf"the worker meanwhile: [1-9]\d* passes, .*longest pass {NUMBER} ms",
        ),
    ),
    Bench(
        "mlperf_import",
        ("--round", "v5.1"),  # its size is the tree's: one submitter of a trimmed published round (mlperf_tree)
        (
            r"MLPerf inference round v5\.1: [1-9]\d* result folders",
            rf"re-import \(all known\):.*{NUMBER} result folders/s",
            rf"ratio full import / parse only:\s+{NUMBER}×",
        ),
        postgres=True,
    ),
]


def _postgres_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else ""


@pytest.fixture(scope="module")
def template() -> Iterator[str]:
    """A scratch database migrated once (per pytest-xdist worker: the benches spread over both of scripts/test's
    workers, much of their time being waits), copied by every PostgreSQL bench here instead of migrating its own."""
    admin = scratch.database_url(_postgres_url(), "postgres")
    name = f"benchreg_bench_template_{os.getpid()}"
    url = scratch.recreate(admin, name)
    env = {**os.environ, "DATABASE_URL": url, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "registry.settings"}
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=900)
        yield name
    finally:
        scratch.drop(admin, name)


@pytest.fixture
def mlperf_tree(tmp_path: Path) -> Path:
    """One submitter's folder of the trimmed published round v5.1, alone in a round folder of its own."""
    source = ROUNDS / "inference_v5.1" / "closed" / "Dell"
    if not source.is_dir():  # a skip of this `postgres` test fails CI (tests/conftest.py)
        pytest.skip(f"{source}: the shared MLPerf rounds are not beside this checkout (../shared/data/mlperf-rounds)")
    root = tmp_path / "inference_v5.1"
    shutil.copytree(source, root / "closed" / "Dell")
    return root


def run_bench(bench: Bench, tmp_path: Path, env_extra: dict[str, str], extra_args: tuple[str, ...] = ()) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "BENCHREG_DATA_DIR": str(tmp_path / "data"),  # any bench that keeps no data directory of its own
        **env_extra,
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{bench.module}", *bench.args, *extra_args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    print(f"bench.{bench.module} {' '.join(bench.args)}: {time.perf_counter() - started:.1f} s\n{done.stdout}")
    assert done.returncode == 0, f"bench.{bench.module} exited {done.returncode}:\n{output[-6000:]}"
    missing = [figure for figure in bench.figures if not re.search(figure, done.stdout, re.MULTILINE)]
    assert not missing, f"bench.{bench.module} did not print {missing}:\n{output[-6000:]}"
    return done.stdout


# Benches whose smoke run a test elsewhere makes and also bounds (run once, not twice).
RUN_ELSEWHERE = {"decision_recompute_sqlite": "tests/registry/decisions/test_recompute.py"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "bench", [b for b in BENCHES if not b.postgres and b.module not in RUN_ELSEWHERE], ids=lambda b: b.module
)
def test_bench_runs_and_prints_its_figures(bench: Bench, tmp_path: Path) -> None:
    run_bench(bench, tmp_path, {})


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.parametrize("bench", [b for b in BENCHES if b.postgres], ids=lambda b: b.module)
def test_postgres_bench_runs_and_prints_its_figures(
    bench: Bench, template: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    extra: tuple[str, ...] = ()
    if bench.module == "mlperf_import":
        extra = (str(request.getfixturevalue("mlperf_tree")),)
    env = {"DATABASE_URL": scratch.database_url(_postgres_url(), "postgres"), scratch.TEMPLATE_ENV: template}
    if bench.module not in ("audit_append",):  # it names its scratch database by its process id already
        extra = (*extra, "--scratch", f"benchreg_bench_ci_{bench.module}_{os.getpid()}")
    run_bench(bench, tmp_path, env, extra)


def test_every_bench_module_is_run_here_and_listed_in_the_readme() -> None:
    """A bench added to bench/ without a smoke run here would rot unseen, and without a row in bench/README.md its
    figures would have no goal or last value to be read against. The helpers are run by the benches that use them."""
    # run by ingest and serving_load
    helpers = {
        "__init__",
        "floor",
        "floor_settings",
        "serving_peers",
        "mlflow_peer",
        "submission_statements",
        "lean_http",
        "proc",
    }
    modules = {path.stem for path in (ROOT / "bench").glob("*.py")} - helpers
    assert modules == {bench.module for bench in BENCHES}
    rows = set(re.findall(r"^\| `(\w+)` \|", (ROOT / "bench" / "README.md").read_text(), re.MULTILINE))
    assert rows == modules, f"bench/README.md rows {sorted(rows)} differ from the benches {sorted(modules)}"
