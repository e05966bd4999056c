"""Harness overhead per timed iteration, and agreement of the runner's median with torch.utils.benchmark.

    .venv/bin/python bench/runner_overhead.py [--quick | --smoke] [--threads N]

Prints numbers, asserts nothing. Both medians are taken in the same process, for the same operation and
thread count, alternating rounds so that machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from runners.measure import Policy, measure, timer, warm_up


def overhead(seconds: float) -> None:
    timed = timer(lambda: None, lambda: None)
    policy = Policy(repetitions=1, min_seconds=max(seconds, 1.0), min_iterations=1000, max_iterations=100_000)
    start = time.perf_counter()
    window = measure(timed, policy)
    wall = time.perf_counter() - start
    inside = float(np.median(window.samples)) * 1e3
    print(
        f"harness overhead: {inside:.3f} µs per timed iteration inside the sample (timer + sync + call), "
        f"{wall / window.iterations * 1e6:.3f} µs per iteration of wall time incl. bookkeeping "
        f"({window.iterations} iterations)"
    )


def agreement(threads: int, size: int, rounds: int, seconds: float) -> None:
    import torch
    import torch.utils.benchmark as tb

    torch.set_num_threads(threads)
    a = torch.randn(size, size)
    b = torch.randn(size, size)

    def op() -> None:
        torch.mm(a, b)

    policy = Policy(repetitions=1, min_seconds=max(seconds, 1.0), min_iterations=50, warmup_max_seconds=5.0)
    ratios = []
    for r in range(rounds):
        timed = timer(op, lambda: None)
        warm_up(timed, policy)
        ours = float(np.median(measure(timed, policy).samples))
        theirs = (
            tb.Timer(stmt="op()", globals={"op": op}, num_threads=threads)
            .blocked_autorange(min_run_time=policy.min_seconds)
            .median
            * 1e3
        )
        ratios.append(ours / theirs)
        print(
            f"  round {r + 1}: runner median {ours:.4f} ms, torch.utils.benchmark median {theirs:.4f} ms, "
            f"ratio {ours / theirs:.3f}"
        )
    print(
        f"agreement: torch.mm {size}x{size} fp32, {threads} thread(s): runner/torch.utils.benchmark median "
        f"ratio {statistics.median(ratios):.3f} (median of {rounds} rounds, range "
        f"{min(ratios):.3f}-{max(ratios):.3f})"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="shorter windows and fewer rounds (< 1 min)")
    p.add_argument("--smoke", action="store_true", help="one round of 1 s windows: CI's check that the bench runs")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--size", type=int, default=256)
    args = p.parse_args()
    seconds, rounds = (1.0, 1) if args.smoke else (1.0, 3) if args.quick else (3.0, 5)
    overhead(seconds)
    agreement(args.threads, args.size, rounds, seconds)


if __name__ == "__main__":
    main()
