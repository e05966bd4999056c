"""The serving load generator's own ceiling and accuracy, side by side with its peers aiperf and guidellm.

    python -m bench.serving_load [--quick | --smoke] [--pin] \\
        [--peers-aiperf /work/venvs/peers-aiperf/bin] [--peers-guidellm /work/venvs/peers-guidellm/bin]

Peers (each in its own venv, docs/serving.md "Peers"): `pip install aiperf==0.13.0`; guidellm needs torch, so
`pip install torch==2.13.0` (CPU) first, then `pip install guidellm==0.8.1`. Neither needs the network to run:
both read the committed word-level tokenizer (tests/fixtures/serving/tokenizer).

1. accuracy: one open-loop level (Poisson, 20 req/s, 1,000 requests of 64 input and 32 output tokens; --quick
   8 req/s, 200) against the simulated endpoint's known law, each tool against a fresh endpoint with the same
   seed; capacity is far above the load, so nothing queues and the truth is the law itself: TTFT and gap
   quantiles are the lognormal's, TPOT (a request's mean gap) quantiles come from a large seeded draw of the
   law, throughput is count × output tokens ÷ ((count − 1)/rate + mean service). Each truth is printed with
   the sampling spread (sd) a perfect client would show at this request count. A table gives each tool's
   figure and its error in %; devtools/serving_peers.py says which of each tool's fields is read.
2. ceiling: against an endpoint that answers at once (TTFT 0, gaps 0, capacity 100,000), constant arrivals
   from 50 req/s up ×1.5 per rung (max(50, rate × 5 s) requests; --quick 2 s); a level is sustained when the
   achieved request rate, (completed − 1) ÷ (last answer − first request sent), is within 5% of the target
   and every request completed: the same rule for every tool, computed from its per-request records. The tools
   climb side by side (each rung run by every tool still standing, so the host's load falls on all alike); a
   rung is tried twice before a tool stops (a stall of the host fails one try, a limit fails both), and a
   tool that stops tries once more halfway (×√1.5) above its last rung, so tools within 50% do not tie on
   the ladder. The endpoint answers from 2 processes (--workers 2); a failure while it used ≥ 80% of the CPUs
   they could have is the endpoint's: that ceiling is a lower bound. benchreg also prints its own "client kept up"
   verdict (runners/serving/levels.py), which is stricter.
3. streams: N closed-loop users (default 1,000) each holding a stream open (40 tokens 50 ms apart) at once.

Every client run prints what it cost: processes, threads and cores (CPU seconds ÷ wall seconds, all its
processes). --pin puts every client on CPU 0 and every endpoint on CPU 1, so a multi-process peer and
benchreg get the same single core. Prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench import proc
from bench.serving_peers import OUT_TOKENS, PEERS, Spec, Usage, benchreg
from devtools.serving_peers import Figures
from runners.serving.levels import Level, Objectives
from runners.serving.loadgen import Target, closed_loop
from runners.serving.shapes import RequestShape, TokenLaw
from runners.serving.simulated import Delay, Law

ACCURACY_LAW = Law(Delay(80.0, 0.3), Delay(15.0, 0.25), capacity=256, seed=5)
# The ceiling's endpoint answers at once, from ENDPOINT_WORKERS processes: one Python process answers ~2,000-3,000
# streamed requests/s on a free core, near the client's own ceiling, and on a shared host a single process gets
# one task's share of the CPUs; its workers let the client, not the endpoint, meet its limit first.
ENDPOINT_WORKERS = 2
INSTANT = ("--ttft-ms", "0", "--itl-ms", "0", "--capacity", "100000", "--workers", str(ENDPOINT_WORKERS))
LADDER_START, LADDER_STEP, TRIES = 50.0, 1.5, 2
ENDPOINT_BOUND = 0.8  # the share of the CPUs its workers could use past which a failed level is the endpoint's
ENDPOINT_CPU: set[int] | None = None  # --pin: the CPU every endpoint runs on
ROWS = (("TTFT p50 ms", "ttft", 0), ("TTFT p99 ms", "ttft", 1), ("gap p50 ms", "gap", 0), ("gap p99 ms", "gap", 1),
        ("TPOT p50 ms", "tpot", 0), ("TPOT p99 ms", "tpot", 1), ("output tok/s", "tokens_per_s", None))  # fmt: skip


class Endpoint:
    """A fresh simulated endpoint (runners/serving/simulated.py) in processes of its own, and their CPU seconds."""

    def __init__(self, *args: str) -> None:
        cmd = [sys.executable, "-m", "runners.serving.simulated", "--port", "0", *args]
        pin = (lambda: os.sched_setaffinity(0, ENDPOINT_CPU)) if ENDPOINT_CPU else None
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, preexec_fn=pin)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().rsplit(" ", 1)[-1].strip()

    def _pids(self) -> list[int]:
        """Its process and the workers it forked (--workers), from /proc."""
        pids = [self.proc.pid]
        pids += [pid for pid, parent in proc.parents().items() if parent == self.proc.pid]
        return pids

    def cpu_s(self) -> float:
        """CPU seconds of all its processes."""
        total = 0.0
        for pid in self._pids():
            with contextlib.suppress(OSError):  # ended meanwhile
                total += proc.cpu_seconds(pid)
        return total

    def demand_s(self) -> float:
        """Seconds on a CPU plus seconds waiting for one, all its processes' threads (Linux schedstat)."""
        total = 0
        for pid in self._pids():
            with contextlib.suppress(OSError):
                for task in Path(f"/proc/{pid}/task").iterdir():
                    on_cpu, waited = (task / "schedstat").read_text().split()[:2]
                    total += int(on_cpu) + int(waited)
        return total / 1e9

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def law_args(law: Law) -> list[str]:
    return ["--ttft-ms", str(law.ttft.median_ms), "--ttft-sigma", str(law.ttft.sigma), "--itl-ms",
            str(law.itl.median_ms), "--itl-sigma", str(law.itl.sigma), "--capacity", str(law.capacity),
            "--seed", str(law.seed)]  # fmt: skip


def truth(law: Law, spec: Spec, reps: int = 100) -> dict[str, tuple[float, float | None]]:
    """Each figure's true value under `law`, and the sd of its estimate from `spec.count` requests (None: not drawn)."""
    rng = np.random.default_rng(0)
    tpot_pool = law.itl.draw(rng, 100_000 * (OUT_TOKENS - 1)).reshape(100_000, -1).mean(axis=1)
    values = {"ttft": (law.ttft.quantile(0.5), law.ttft.quantile(0.99)),
              "gap": (law.itl.quantile(0.5), law.itl.quantile(0.99)),
              "tpot": (float(np.quantile(tpot_pool, 0.5)), float(np.quantile(tpot_pool, 0.99)))}  # fmt: skip
    draws = []
    for _ in range(reps):  # what a perfect client would estimate from spec.count requests
        gaps = law.itl.draw(rng, spec.count * (OUT_TOKENS - 1)).reshape(spec.count, -1)
        samples = {"ttft": law.ttft.draw(rng, spec.count), "gap": gaps.ravel(), "tpot": gaps.mean(axis=1)}
        draws.append({(k, i): float(np.quantile(v, q)) for k, v in samples.items() for i, q in enumerate((0.5, 0.99))})
    out: dict[str, tuple[float, float | None]] = {
        f"{k}{i}": (values[k][i], float(np.std([d[(k, i)] for d in draws]))) for k in values for i in (0, 1)
    }
    service_s = law.service_ms(OUT_TOKENS) / 1e3
    out["tokens_per_s"] = (spec.count * OUT_TOKENS / ((spec.count - 1) / spec.rate + service_s), None)
    return out


def _cell(figures: Figures, attr: str, index: int | None) -> float | None:
    value: Any = getattr(figures, attr)
    if value is None:
        return None
    return float(value if index is None else value[index])


def print_table(expected: dict[str, tuple[float, float | None]], results: dict[str, Figures]) -> None:
    """One row per figure: the truth (± the sd a perfect client shows), then each tool's value and error in %."""
    print(f"  {'figure':<14}{'truth':>9}{'± sd':>7}" + "".join(f"{name:>12}{'err %':>8}" for name in results))
    for label, attr, index in ROWS:
        value, sd = expected[f"{attr}{'' if index is None else index}"]
        line = f"  {label:<14}{value:>9.2f}{(f'{sd:.2f}' if sd is not None else '-'):>7}"
        for figures in results.values():
            got = _cell(figures, attr, index)
            line += f"{'n/a':>12}{'':>8}" if got is None else f"{got:>12.2f}{100 * (got / value - 1):>+8.1f}"
        print(line)
    print(f"  {'issued req/s':<14}{'':>16}" + "".join(f"{f.issued_rps:>12.2f}{'':>8}" for f in results.values()))
    print(f"  {'completed':<14}{'':>16}" + "".join(f"{f'{f.completed}/{f.sent}':>12}{'':>8}" for f in results.values()))


def accuracy(spec: Spec, peers: dict[str, Path], work: Path, repeats: int = 1) -> None:
    """The accuracy level `repeats` times, the tools' order rotated each time (so a drift of the host or of the
    endpoint falls on each tool in turn); with several repeats, benchreg's TTFT against each peer's, repeat by
    repeat: one repeat's difference is within the endpoint's own run-to-run spread."""
    law = ACCURACY_LAW
    print(f"accuracy: law TTFT lognormal(median {law.ttft.median_ms:g} ms, sigma {law.ttft.sigma:g}), gaps "
          f"lognormal({law.itl.median_ms:g} ms, {law.itl.sigma:g}), capacity {law.capacity}, seed {law.seed}; "
          f"{spec.pattern} {spec.rate:g} req/s, {spec.count} requests, 64 in / {OUT_TOKENS} out tokens")  # fmt: skip
    tools = ["benchreg", *peers]
    rounds: list[dict[str, Figures]] = []
    for repeat in range(repeats):
        results: dict[str, Figures] = {}
        for name in tools[repeat % len(tools) :] + tools[: repeat % len(tools)]:
            endpoint = Endpoint(*law_args(law))  # fresh, same seed: the same draws in arrival order
            try:
                figures, usage, note = _measure(name, peers, endpoint.url, spec, work)
            except Exception as exc:  # a peer that cannot run here is reported, not fatal
                print(f"  {name}: could not run: {type(exc).__name__}: {str(exc)[-500:]}")
                continue
            finally:
                endpoint.stop()
            results[name] = figures
            print(f"  {name}: {usage.line()}; load average after {os.getloadavg()[0]:.2f}{note}")
        print_table(truth(law, spec), {name: results[name] for name in tools if name in results})
        rounds.append(results)
    if repeats > 1:
        print_differences(rounds, list(peers))


def print_differences(rounds: list[dict[str, Figures]], peers: list[str]) -> None:
    """benchreg's TTFT p50 and p99 minus each peer's, per repeat and their median (ms)."""
    for peer in peers:
        for index, label in ((0, "p50"), (1, "p99")):
            diffs = [r["benchreg"].ttft[index] - r[peer].ttft[index] for r in rounds if "benchreg" in r and peer in r]
            if diffs:
                shown = ", ".join(f"{d:+.2f}" for d in diffs)
                print(f"  TTFT {label} benchreg − {peer}: {shown} ms; median {float(np.median(diffs)):+.2f} ms")


def _measure(name: str, peers: dict[str, Path], url: str, spec: Spec, work: Path) -> tuple[Figures, Usage, str]:
    """One tool's figures and cost, and for benchreg a note on its own lateness."""
    if name != "benchreg":
        return (*PEERS[name](peers[name], url, spec, work), "")
    figures, level, usage = benchreg(url, spec)
    return figures, usage, "; " + lateness(level)


def lateness(level: Level) -> str:
    """benchreg times TTFT from the scheduled arrival; the peers from the send. The dispatch lag is the difference."""
    lag = np.asarray([r.dispatch_lag_ms for r in level.run.records if r.sent == r.sent])
    from_send = np.asarray([(r.chunks[0] - r.sent) * 1e3 for r in level.completed])
    return (f"dispatch lag p50 {np.quantile(lag, 0.5):.2f} / p99 {np.quantile(lag, 0.99):.2f} ms; TTFT from the "
            f"send p50 {np.quantile(from_send, 0.5):.2f} / p99 {np.quantile(from_send, 0.99):.2f} ms")  # fmt: skip


def sustained(figures: Figures, spec: Spec) -> bool:
    """The ceiling's rule, the same for every tool: every request completed, achieved rate within 5% of target."""
    return figures.completed == spec.count and abs(figures.achieved_rps / spec.rate - 1) <= 0.05


Measure = Callable[[str, Spec], tuple[Figures, Usage, str]]


def try_level(name: str, measure: Measure, rate: float, seconds: float) -> tuple[bool, float] | None:
    """One try of `name` at a constant `rate` against a fresh instant endpoint: (sustained, the endpoint's CPU
    share over the level in cores, all its workers), or None when the tool could not run. Near the cores its
    workers could use, the endpoint was saturated: the level measured it, not the client. The share of the
    level it spent on a CPU or waiting for one is printed beside: near 1 with a low CPU share, the host starved
    it, which the client's own processes may have done on a shared host, so that is not counted as its limit."""
    spec = Spec(rate, max(50, int(rate * seconds)), "constant")
    endpoint = Endpoint(*INSTANT)
    try:
        idle = endpoint.cpu_s(), endpoint.demand_s()  # its start-up (imports) is not the level's
        figures, usage, verdict = measure(endpoint.url, spec)
        # over the level as it ran (first request sent to last answer), which a starved endpoint stretches
        span = (figures.completed - 1) / figures.achieved_rps if figures.achieved_rps else spec.count / rate
        busy, wanted = (endpoint.cpu_s() - idle[0]) / span, (endpoint.demand_s() - idle[1]) / span
    except Exception as exc:  # a peer that cannot run here is reported, not fatal
        print(f"  {name:>8} {rate:9.1f} req/s: could not run: {type(exc).__name__}: {str(exc)[-400:]}")
        return None
    finally:
        endpoint.stop()
    ok = sustained(figures, spec)
    print(f"  {name:>8} {rate:9.1f} req/s: issued {figures.issued_rps:9.1f}, achieved {figures.achieved_rps:9.1f}, "
          f"completed {figures.completed}/{spec.count}, sustained {ok}{verdict}; endpoint busy {busy:.0%} of a "
          f"core, on a CPU or waiting for one {wanted:.0%}; client {usage.line()}; "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    return ok, busy


def held(name: str, measure: Measure, rate: float, seconds: float) -> tuple[bool, float]:
    """Whether `name` sustains `rate` in one of TRIES tries, and the endpoint's CPU share in the last try.

    On a shared host the OS keeps a process off every CPU for 100-300 ms at times; in a level of a few seconds
    that alone breaks the 5% rule, for any tool. A stall fails one try; a client's own limit fails every one.
    """
    busy = 0.0
    for _ in range(TRIES):
        result = try_level(name, measure, rate, seconds)
        if result is None:
            return False, busy
        ok, busy = result
        if ok:
            return True, busy
    return False, busy


def ceilings(peers: dict[str, Path], seconds: float, work: Path, rungs: int | None = None) -> None:
    """Every tool's highest sustained constant rate, measured side by side (module docstring, 2).

    The tools climb one ladder together, each rung run by every tool still standing before the next rung, so a
    change in the host's load falls on all of them alike. A tool that fails a rung tries the rate halfway
    between (geometrically) it and the rung it held: with only x1.5 rungs two tools within 50% of each
    other would tie. A failure while the endpoint used most of the CPUs its workers could have (80%) is the
    endpoint's, not the client's: that ceiling is a lower bound (">=").
    """
    tools: dict[str, Measure] = {"benchreg": benchreg_ceiling_level}
    tools |= {name: _peer_level(name, bin_dir, work) for name, bin_dir in peers.items()}
    print(f"ceilings side by side (endpoint answering at once from {ENDPOINT_WORKERS} processes; each rung tried "
          f"up to {TRIES} times):")  # fmt: skip
    best, bounded = dict.fromkeys(tools, 0.0), dict.fromkeys(tools, False)
    saturated = ENDPOINT_BOUND * min(ENDPOINT_WORKERS, len(ENDPOINT_CPU or os.sched_getaffinity(0)))
    standing, rate, climbed = list(tools), LADDER_START, 0
    while standing and rate < 100_000 and (rungs is None or climbed < rungs):
        climbed += 1
        for name in list(standing):
            ok, busy = held(name, tools[name], rate, seconds)
            if ok:
                best[name] = rate
                continue
            standing.remove(name)
            if best[name] and busy < saturated:
                between = best[name] * LADDER_STEP**0.5
                ok, busy_between = held(name, tools[name], between, seconds)
                best[name], busy = (between, busy) if ok else (best[name], busy_between)
            bounded[name] = busy >= saturated
        rate *= LADDER_STEP
    capped = standing and rungs is not None and climbed >= rungs
    for name in tools:
        why = " (a lower bound: the endpoint, not the client, stopped it)" if bounded[name] else ""
        if capped and name in standing:
            why = f" (a lower bound: the ladder stopped after {rungs} rungs, --smoke)"
        print(f"  {name} ceiling: {best[name]:.1f} req/s{why}")
    for name in peers:
        ratio = best["benchreg"] / best[name] if best[name] else float("inf")
        sign = {(False, False): "=", (True, False): ">=", (False, True): "<="}.get(
            (bounded["benchreg"], bounded[name]), "~ (both stopped by the endpoint)"
        )
        print(f"ceiling benchreg/{name}: {best['benchreg']:.1f} / {best[name]:.1f} req/s {sign} {ratio:.2f}")


def benchreg_ceiling_level(url: str, spec: Spec) -> tuple[Figures, Usage, str]:
    figures, level, usage = benchreg(url, spec)
    _, reasons = level.client()
    return figures, usage, f" (own verdict: kept up {not reasons}{': ' + '; '.join(reasons) if reasons else ''})"


def _peer_level(name: str, bin_dir: Path, work: Path) -> Measure:
    def level(url: str, spec: Spec) -> tuple[Figures, Usage, str]:
        figures, usage = PEERS[name](bin_dir, url, spec, work)
        return figures, usage, ""

    return level


def streams(users: int) -> None:
    endpoint = Endpoint("--ttft-ms", "10", "--ttft-sigma", "0", "--itl-ms", "50", "--itl-sigma", "0",
                        "--capacity", str(users * 2))  # fmt: skip
    try:
        target = Target(endpoint.url, "simulated", "completions", timeout_s=120)
        prompts = RequestShape(TokenLaw(8), TokenLaw(40)).prompts(users, 1)
        t, cpu = time.perf_counter(), time.process_time()  # the endpoint is another process: this is the client's
        run = asyncio.run(closed_loop(target, prompts, users))
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        lv = Level("concurrency", users, run, Objectives())
        counts, (client, reasons) = lv.counts(), lv.client()
        itl, loop = lv.series("itl_ms"), np.asarray(run.loop_lag_ms)
        chunks = sum(len(r.chunks) for r in lv.completed)
        print(f"streams: {users} concurrent: {counts['completed']}/{counts['sent']} completed in {wall:.2f} s "
              f"(one stream lasts 1.96 s); ITL p50 {np.median(itl):.2f} ms / p99 {np.quantile(itl, 0.99):.2f} ms "
              f"against 50; client CPU {cpu:.2f} s ({cpu / wall:.0%} of one core, {cpu / chunks * 1e6:.1f} us per "
              f"streamed chunk), event-loop lateness p99 {np.quantile(loop, 0.99):.2f} ms; client kept up: "
              f"{client['kept_up']} {'; '.join(reasons)}")  # fmt: skip
    finally:
        endpoint.stop()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="shorter levels (accuracy 8 req/s × 200, ceiling 2 s)")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="accuracy 8 req/s × 40, ceiling levels of 50 requests, 50 streams: CI's check that the bench runs",
    )
    p.add_argument("--streams", type=int, default=None, help="concurrent streams (default 1000)")
    for name in PEERS:
        p.add_argument(f"--peers-{name}", type=Path, metavar="BIN", help=f"a bin/ directory holding `{name}`")
    p.add_argument("--pin", action="store_true", help="clients on CPU 0, endpoints on CPU 1")
    p.add_argument("--skip", default="", help="comma-separated parts to skip: accuracy, ceiling, streams")
    p.add_argument(
        "--accuracy-repeats", type=int, default=1, help="the accuracy level this many times, the tools' order rotated"
    )
    p.add_argument("--keep", type=Path, help="keep the peers' output files here (default: a removed temp dir)")
    return p


def _peers(args: argparse.Namespace) -> dict[str, Path] | str:
    """The peer bin/ directories asked for, or the error naming the one that lacks its executable."""
    peers = {name: getattr(args, f"peers_{name}") for name in PEERS if getattr(args, f"peers_{name}")}
    for name, bin_dir in peers.items():
        if not os.access(bin_dir / name, os.X_OK):
            return f"--peers-{name} {bin_dir}: no executable {bin_dir / name}"
    return peers


def _pin() -> str | None:
    global ENDPOINT_CPU
    if len(os.sched_getaffinity(0)) < 2:
        return "--pin needs 2 CPUs (clients on CPU 0, endpoints on CPU 1)"
    os.sched_setaffinity(0, {0})  # before any thread starts: threads and peer processes inherit it
    ENDPOINT_CPU = {1}
    return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    peers = _peers(args)
    problem = peers if isinstance(peers, str) else (_pin() if args.pin else None)
    if problem or isinstance(peers, str):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    skip = set(filter(None, args.skip.split(",")))
    if skip - {"accuracy", "ceiling", "streams"}:
        print(f"error: --skip {args.skip}: the parts are accuracy, ceiling, streams", file=sys.stderr)
        return 2
    print(f"host: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
          f"{'; pinned: clients on CPU 0, endpoints on CPU 1' if args.pin else ''}")  # fmt: skip
    for name in PEERS:
        if name not in peers:  # said, not skipped silently: the table below has benchreg's column only
            print(
                f"{name}: not run (no --peers-{name} BIN given; installing it: docs/serving.md, 'Peers side by side')"
            )
    with tempfile.TemporaryDirectory(prefix="serving-load-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if "accuracy" not in skip:
            spec = Spec(8.0, 40) if args.smoke else Spec(8.0, 200) if args.quick else Spec(20.0, 1000)
            accuracy(spec, peers, work, max(1, args.accuracy_repeats))
        if "ceiling" not in skip:
            ceilings(peers, 0.5 if args.smoke else 2.0 if args.quick else 5.0, work, rungs=3 if args.smoke else None)
    if "streams" not in skip:
        streams(args.streams or (50 if args.smoke else 1000))
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
