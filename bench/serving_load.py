"""The serving load generator's own ceiling and accuracy, and its peers (aiperf, guidellm) on the same law.

    python -m bench.serving_load [--quick] [--peers /path/to/venv/bin]

1. ceiling: against an endpoint that answers at once (TTFT 0, gaps 0, capacity 100,000), the highest Poisson
   rate at which the client still keeps up (runners/serving/levels: dispatch lag and event-loop lateness
   within bound, issue rate within 5%), raising the rate ×1.5 per level;
2. streams: N closed-loop users (default 1,000) each holding a stream open (40 tokens 50 ms apart) at once;
3. accuracy: one open-loop level against a known law; each tool's error against the law's TTFT p50/p99,
   ITL p50/p99 and the expected output-token throughput;
4. peers, with --peers DIR (a bin/ holding `aiperf` and `guidellm`): the same level run by each, errors and
   their own ceiling printed beside benchreg's. Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from runners.serving.levels import Level, Objectives
from runners.serving.loadgen import Target, arrivals, closed_loop, open_loop
from runners.serving.shapes import RequestShape, TokenLaw
from runners.serving.simulated import Delay, Law

ACCURACY_LAW = Law(Delay(80.0, 0.3), Delay(15.0, 0.25), capacity=256, seed=5)
IN_TOKENS, OUT_TOKENS = 64, 32


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "runners.serving.simulated", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().rsplit(" ", 1)[-1].strip()


def law_args(law: Law) -> list[str]:
    return ["--ttft-ms", str(law.ttft.median_ms), "--ttft-sigma", str(law.ttft.sigma), "--itl-ms",
            str(law.itl.median_ms), "--itl-sigma", str(law.itl.sigma), "--capacity", str(law.capacity),
            "--seed", str(law.seed)]  # fmt: skip


def level(url: str, rate: float, count: int, tokens: int = 4) -> Level:
    target = Target(url, "simulated", "completions", timeout_s=120)
    prompts = RequestShape(TokenLaw(8), TokenLaw(tokens)).prompts(count, 1)
    run = asyncio.run(open_loop(target, prompts, arrivals(rate, count, 1), count))
    return Level("request-rate", rate, run, Objectives())


def ceiling(seconds: float) -> float:
    proc, url = start("--ttft-ms", "0", "--itl-ms", "0", "--capacity", "100000")
    best, rate = 0.0, 50.0
    try:
        while rate < 100_000:
            lv = level(url, rate, max(50, int(rate * seconds)))
            _, reasons = lv.client()
            done = lv.counts()["completed"] == lv.counts()["sent"]
            print(f"  {rate:9.1f} req/s: issued {lv.issue_rate():9.1f}, kept up {not reasons}, all completed {done}")
            if reasons or not done:
                break
            best, rate = rate, rate * 1.5
    finally:
        proc.terminate()
    return best


def streams(users: int) -> None:
    proc, url = start("--ttft-ms", "10", "--ttft-sigma", "0", "--itl-ms", "50", "--itl-sigma", "0",
                      "--capacity", str(users * 2))  # fmt: skip
    try:
        target = Target(url, "simulated", "completions", timeout_s=120)
        prompts = RequestShape(TokenLaw(8), TokenLaw(40)).prompts(users, 1)
        t = time.perf_counter()
        run = asyncio.run(closed_loop(target, prompts, users))
        wall = time.perf_counter() - t
        lv = Level("concurrency", users, run, Objectives())
        counts, (client, reasons) = lv.counts(), lv.client()
        itl = lv.series("itl_ms")
        print(f"  {users} concurrent streams: {counts['completed']}/{counts['sent']} completed in {wall:.2f} s "
              f"(one stream lasts 1.96 s); ITL p50 {np.median(itl):.2f} ms / p99 {np.quantile(itl, 0.99):.2f} ms "
              f"against 50; client kept up: {client['kept_up']} {'; '.join(reasons)}")  # fmt: skip
    finally:
        proc.terminate()


def truth(law: Law, rate: float, count: int) -> dict[str, float]:
    service = law.service_ms(OUT_TOKENS) / 1e3
    return {
        "ttft_p50": law.ttft.quantile(0.5), "ttft_p99": law.ttft.quantile(0.99),
        "itl_p50": law.itl.quantile(0.5), "itl_p99": law.itl.quantile(0.99),
        "throughput": count * OUT_TOKENS / ((count - 1) / rate + service),
    }  # fmt: skip


def benchreg_level(url: str, rate: float, count: int) -> dict[str, float]:
    target = Target(url, "simulated", "completions", timeout_s=120)
    prompts = RequestShape(TokenLaw(IN_TOKENS), TokenLaw(OUT_TOKENS)).prompts(count, 1)
    lv = Level("request-rate", rate, asyncio.run(open_loop(target, prompts, arrivals(rate, count, 1), count)),
               Objectives())  # fmt: skip
    t, i = lv.series("ttft_ms"), lv.series("itl_ms")
    return {"ttft_p50": float(np.quantile(t, 0.5)), "ttft_p99": float(np.quantile(t, 0.99)),
            "itl_p50": float(np.quantile(i, 0.5)), "itl_p99": float(np.quantile(i, 0.99)),
            "throughput": lv.tokens_per_second()}  # fmt: skip


def _find(data: Any, *names: str) -> Any:
    """The first value under any of `names` found depth-first in nested JSON."""
    if isinstance(data, dict):
        for name in names:
            if name in data:
                return data[name]
        for value in data.values():
            found = _find(value, *names)
            if found is not None:
                return found
    if isinstance(data, list):
        for value in data:
            found = _find(value, *names)
            if found is not None:
                return found
    return None


def aiperf_level(bin_dir: Path, url: str, rate: float, count: int) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(prefix="aiperf-"))
    cmd = [str(bin_dir / "aiperf"), "profile", "--model", "simulated", "--url", url, "--endpoint-type",
           "completions", "--streaming", "--request-rate", str(rate), "--request-count", str(count),
           "--synthetic-input-tokens-mean", str(IN_TOKENS), "--output-tokens-mean", str(OUT_TOKENS),
           "--extra-inputs", "ignore_eos:true", "--artifact-dir", str(out), "--ui", "none"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900)
    data = json.loads(next(out.rglob("profile_export_aiperf.json")).read_text())
    ttft, itl = data["time_to_first_token"], data.get("inter_chunk_latency") or data["inter_token_latency"]
    return {"ttft_p50": ttft["p50"], "ttft_p99": ttft["p99"], "itl_p50": itl["p50"], "itl_p99": itl["p99"],
            "throughput": data["output_token_throughput"]["avg"]}  # fmt: skip


def guidellm_level(bin_dir: Path, url: str, rate: float, count: int) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(prefix="guidellm-")) / "benchmarks.json"
    cmd = [str(bin_dir / "guidellm"), "benchmark", "--target", url, "--model", "simulated", "--processor", "gpt2",
           "--rate-type", "poisson", "--rate", str(rate), "--max-requests", str(count),
           "--data", f"prompt_tokens={IN_TOKENS},output_tokens={OUT_TOKENS}", "--output-path", str(out)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900)
    metrics = _find(json.loads(out.read_text()), "metrics")
    ttft, itl = metrics["time_to_first_token_ms"]["successful"], metrics["inter_token_latency_ms"]["successful"]
    pct = lambda d, k: d["percentiles"][k]  # noqa: E731
    tps = metrics["output_tokens_per_second"]["successful"]["mean"]
    return {"ttft_p50": pct(ttft, "p50"), "ttft_p99": pct(ttft, "p99"), "itl_p50": pct(itl, "p50"),
            "itl_p99": pct(itl, "p99"), "throughput": tps}  # fmt: skip


def accuracy(rate: float, count: int, peers: Path | None) -> None:
    proc, url = start(*law_args(ACCURACY_LAW))
    expected = truth(ACCURACY_LAW, rate, count)
    tools = {"benchreg": lambda: benchreg_level(url, rate, count)}
    if peers is not None:
        tools["aiperf"] = lambda: aiperf_level(peers, url, rate, count)
        tools["guidellm"] = lambda: guidellm_level(peers, url, rate, count)
    print(f"  truth at {rate:g} req/s, {count} requests: " + ", ".join(f"{k} {v:.2f}" for k, v in expected.items()))
    try:
        for name, measure in tools.items():
            try:
                got = measure()
            except subprocess.CalledProcessError as exc:  # a peer that cannot run here is reported, not fatal
                print(f"  {name}: could not run (exit {exc.returncode}): {(exc.stderr or exc.stdout or '')[-400:]}")
                continue
            except Exception as exc:
                print(f"  {name}: could not run: {type(exc).__name__}: {str(exc)[-300:]}")
                continue
            errors = ", ".join(f"{k} {100 * (got[k] / expected[k] - 1):+.1f}%" for k in expected)
            print(f"  {name}: error against the law: {errors}")
    finally:
        proc.terminate()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--peers", type=Path, default=None, help="bin/ directory holding aiperf and guidellm")
    p.add_argument("--skip", default="", help="comma-separated parts to skip: ceiling, streams, accuracy")
    args = p.parse_args(argv)
    skip = set(args.skip.split(","))
    if "ceiling" not in skip:
        print("benchreg ceiling (endpoint answering at once):")
        print(f"  highest sustained rate: {ceiling(2.0 if args.quick else 5.0):.1f} req/s")
    if "streams" not in skip:
        streams(args.streams)
    if "accuracy" not in skip:
        accuracy(8.0 if args.quick else 20.0, 200 if args.quick else 1000, args.peers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
