"""What every `benchreg` command and every pytest worker pays before doing anything: the wall and CPU time of a few
commands' `--help`, and of pytest collecting tests/registry, against bare Django's start-up (`django.setup()` with
no apps) measured in the same run. A busy host slows every line; the CPU column and the ratios say what the
registry adds to Django's own start-up.

    python -m bench.startup [--repeats 5]
    python -m bench.startup --smoke      # one repeat, pytest collecting tests/registry/presentation only (CI)

Each line is a process of its own (`sys.executable`, run from the repository root), timed from its start to its
exit; CPU is the child's user + system time. Prints figures; no pass/fail. Goal (issue 42, the test loop; issue 41,
a sweep imported in under 2 s): the registry's start-up a small part of a command, not seconds of it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BARE = "import django; from django.conf import settings; settings.configure(); django.setup()"
# (label, arguments after `python`); the first two are the baselines, the rest what users and CI run.
INTERPRETER = ("python -c pass", ["-c", "pass"])
BASELINE = ("django.setup(), no apps (bare Django)", ["-c", BARE])
LINES = [
    ("django.setup() of registry.settings", ["-c", "import django; django.setup()"]),
    ("benchreg --version (client, no Django)", ["-m", "registry.cli", "--version"]),
    ("benchreg migrate --help", ["-m", "registry.cli", "migrate", "--help"]),
    ("benchreg import serving --help", ["-m", "registry.cli", "import", "serving", "--help"]),
    ("benchreg audit verify --help", ["-m", "registry.cli", "audit", "verify", "--help"]),
]


def _collect(folder: str) -> tuple[str, list[str]]:
    options = ["-p", "no:cacheprovider", "-q", "-n", "0", "--collect-only", folder]
    return (f"pytest --collect-only {folder}", ["-m", "pytest", *options])


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one `python ARGS` process; raises CalledProcessError if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True, capture_output=True, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(lines: list[tuple[str, list[str]]], repeats: int, env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Median wall and CPU of each line, the lines interleaved within each repeat (load drifts alike on all)."""
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in lines}
    for _ in range(repeats):
        for label, args in lines:
            samples[label].append(timed(args, env))
    return {
        label: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
        for label, got in samples.items()
    }


def report(figures: dict[str, tuple[float, float]], repeats: int) -> None:
    base_wall, base_cpu = figures[BASELINE[0]]
    print(f"start-up, median of {repeats}; host load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'':52} {'wall s':>8} {'CPU s':>8} {'CPU / bare':>11} {'CPU beyond bare s':>18}")
    for label, (wall, cpu) in figures.items():
        ratio = cpu / base_cpu if base_cpu > 0 else float("nan")
        print(f"{label:52} {wall:8.2f} {cpu:8.2f} {ratio:10.2f}x {cpu - base_cpu:18.2f}")
    wall, cpu = figures[LINES[0][0]]
    print(f"the registry's app loading beyond bare Django: {cpu - base_cpu:.2f} s CPU, {wall - base_wall:.2f} s wall")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--collect", default="tests/registry", help="the tests pytest collects (default tests/registry)"
    )
    parser.add_argument("--smoke", action="store_true", help="one repeat, collecting tests/registry/presentation")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.collect = 1, "tests/registry/presentation"
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as data:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "registry.settings"}
        env.setdefault("BENCHREG_DATA_DIR", data)
        lines = [INTERPRETER, BASELINE, *LINES, _collect(args.collect)]
        report(measure(lines, args.repeats, env), args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
