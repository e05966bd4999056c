"""Running one load level with benchreg, aiperf or guidellm against a URL, and what each client process cost.

Used by bench/serving_load.py (whose docstring has the command). Every tool gets the same level: the same rate and
arrival pattern, request count, 64-word prompts asking for exactly 32 output tokens over streaming
/v1/completions of model `simulated`; aiperf and guidellm count tokens with the committed word-level tokenizer
(tests/fixtures/serving/tokenizer), so no download is needed. Their figures are read from the files they wrote
(devtools/serving_peers.py says which field is which).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.proc import stat_fields
from devtools.serving_peers import Figures, aiperf_figures, guidellm_figures, rates
from runners.serving.levels import Level, Objectives
from runners.serving.loadgen import Prompt, Target, arrivals, open_loop
from runners.serving.shapes import RequestShape, TokenLaw

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "tests" / "fixtures" / "serving" / "tokenizer"
IN_TOKENS, OUT_TOKENS = 64, 32


@dataclass(frozen=True)
class Spec:
    """One open-loop level: rate (req/s), request count, arrival pattern ("poisson" or "constant"), seed."""

    rate: float
    count: int
    pattern: str = "poisson"
    seed: int = 1

    def prompts(self) -> list[Prompt]:
        return RequestShape(TokenLaw(IN_TOKENS), TokenLaw(OUT_TOKENS)).prompts(self.count, self.seed)

    def offsets(self) -> np.ndarray:
        if self.pattern == "constant":
            return np.arange(self.count) / self.rate
        return arrivals(self.rate, self.count, self.seed)


@dataclass(frozen=True)
class Usage:
    """What one client run cost: wall and CPU seconds (all its processes), its largest process and thread count."""

    wall_s: float
    cpu_s: float
    processes: int
    threads: int

    def line(self) -> str:
        return (f"{self.processes} process(es), up to {self.threads} threads, CPU {self.cpu_s:.1f} s over "
                f"{self.wall_s:.1f} s wall = {self.cpu_s / self.wall_s:.2f} cores")  # fmt: skip


def _tree(root: int) -> tuple[int, int]:
    """(processes, threads) of `root` and all its descendants, from /proc."""
    parent, threads = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = stat_fields(entry.name)
            except OSError:  # the process ended meanwhile
                continue
            parent[int(entry.name)], threads[int(entry.name)] = int(fields[1]), int(fields[17])
    tree, frontier = {root}, [root]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier and p not in tree]
        tree.update(kids)
        frontier = kids
    return len([p for p in tree if p in parent]), sum(threads.get(p, 0) for p in tree)


class Watch:
    """Polls the process tree of `pid` twice a second, keeping the largest process and thread counts."""

    def __init__(self, pid: int) -> None:
        self.pid, self.processes, self.threads = pid, 1, 1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            processes, threads = _tree(self.pid)
            self.processes, self.threads = max(self.processes, processes), max(self.threads, threads)

    def stop(self) -> tuple[int, int]:
        self._stop.set()
        self._thread.join()
        return self.processes, self.threads


def run_tool(cmd: list[str], timeout_s: float, cwd: Path) -> Usage:
    """Run a peer's command to its end; its CPU time is that of every descendant it waited for."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watch = Watch(proc.pid)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        raise RuntimeError(f"{Path(cmd[0]).name} ran past {timeout_s:.0f} s: {output[-300:]}") from None
    finally:
        processes, threads = watch.stop()
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(cmd[0]).name} exited {proc.returncode}: {output[-600:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Usage(wall, cpu, processes, threads)


def benchreg(url: str, spec: Spec) -> tuple[Figures, Level, Usage]:
    """benchreg's own load generator (runners/serving/loadgen.py) in this process."""
    target = Target(url, "simulated", "completions", timeout_s=120)
    before, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    run = asyncio.run(open_loop(target, spec.prompts(), spec.offsets(), spec.count))
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - t0
    level = Level("request-rate", spec.rate, run, Objectives())
    counts = level.counts()
    sent = [r.sent for r in run.records if r.sent == r.sent]  # not NaN: it left the client
    issued, achieved = rates(sent, [r.end for r in level.completed])
    q = {name: _quantiles(level.series(name)) for name in ("ttft_ms", "itl_ms", "tpot_ms")}
    figures = Figures("benchreg", q["ttft_ms"], q["itl_ms"], q["tpot_ms"], level.tokens_per_second(),
                      counts["sent"], counts["completed"], issued, achieved)  # fmt: skip
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return figures, level, Usage(wall, cpu, 1, len(os.listdir("/proc/self/task")))


def _quantiles(values: np.ndarray) -> tuple[float, float]:
    """(p50, p99) with numpy's linear interpolation, as aiperf computes its own."""
    return float(np.quantile(values, 0.5)), float(np.quantile(values, 0.99))


def aiperf(bin_dir: Path, url: str, spec: Spec, work: Path) -> tuple[Figures, Usage]:
    """aiperf profile: synthetic prompts of exactly IN_TOKENS words, OUT_TOKENS output tokens, local tokenizer."""
    out = Path(tempfile.mkdtemp(prefix="aiperf-", dir=work))
    cmd = [str(bin_dir / "aiperf"), "profile", "--model", "simulated", "--url", url, "--endpoint-type",
           "completions", "--streaming", "--tokenizer", str(TOKENIZER), "--request-rate", f"{spec.rate:g}",
           "--arrival-pattern", spec.pattern, "--request-count", str(spec.count), "--isl", str(IN_TOKENS),
           "--synthetic-input-tokens-stddev", "0", "--osl", str(OUT_TOKENS), "--output-tokens-stddev", "0",
           "--extra-inputs", "ignore_eos:true", "--random-seed", str(spec.seed), "--artifact-dir", str(out),
           "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"]  # fmt: skip
    usage = run_tool(cmd, _timeout(spec), out)
    return aiperf_figures(out), usage


def guidellm(bin_dir: Path, url: str, spec: Spec, work: Path) -> tuple[Figures, Usage]:
    """guidellm run, fed the prompts benchreg sends as a JSONL file.

    Its synthetic_text data builds prompts from Faker words and decodes them with skip_special_tokens, so with
    the word-level tokenizer (Faker's words are [UNK]) a "64-token" prompt shrinks to the few known words and
    an empty one fails; the file gives it exactly IN_TOKENS words, as the other two send.
    """
    out = Path(tempfile.mkdtemp(prefix="guidellm-", dir=work))
    with (out / "prompts.jsonl").open("w") as f:
        for p in spec.prompts():
            f.write(json.dumps({"prompt": p.text, "prompt_tokens_count": p.input_tokens,
                                "output_tokens_count": p.max_tokens}) + "\n")  # fmt: skip
    cmd = [str(bin_dir / "guidellm"), "run",
           "--backend", f"kind=openai_http,target={url},model=simulated,request_format=/v1/completions",
           "--profile", f"kind={spec.pattern},rate={spec.rate:g}",
           "--constraint", f"kind=max_requests,count={spec.count}",
           "--tokenizer", f"kind=huggingface_auto,model={TOKENIZER}",
           "--data", f"kind=json_file,path={out / 'prompts.jsonl'}", "--seed", f"kind=static,value={spec.seed}",
           "--output", f"kind=json,path={out / 'benchmarks.json'}", "--disable-console"]  # fmt: skip
    usage = run_tool(cmd, _timeout(spec), out)
    return guidellm_figures(out / "benchmarks.json"), usage


def _timeout(spec: Spec) -> float:
    return 180 + 3 * spec.count / spec.rate


PEERS: dict[str, Callable[[Path, str, Spec, Path], tuple[Figures, Usage]]] = {"aiperf": aiperf, "guidellm": guidellm}
