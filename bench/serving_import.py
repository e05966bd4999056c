"""`benchreg import serving` of one sweep, as a user runs it: the command's wall time on a fresh SQLite registry,
against the command's start-up alone and against reading and json-parsing the same files in a process of their own
(the files' floor), all in one run. A busy host slows every line; the ratios say what the import adds.

    python -m bench.serving_import [SWEEP_DIR] [--deployment FILE] [--repeats 3]
    python -m bench.serving_import --smoke      # tests/fixtures/serving/aiperf-0.13.0, one repeat (CI)

SWEEP_DIR defaults to ../shared/data/serving/kimik2.5-fp4-b200-vllm-agentic-lmcache (six aiperf levels, 5 MB of
JSON with the per-request records); the two shared sweeps and the fixture have their deployment built in, another
folder needs --deployment. Each repeat imports into a copy of one migrated SQLite file (fresh: every level
stored); a first import, timed apart, reads the files before the others do. Prints figures; no
pass/fail. Goal (issue 41): a sweep of 8 levels under 2 s on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "serving"
SMOKE = ROOT / "tests" / "fixtures" / "serving" / "aiperf-0.13.0"
_AGENTIC = {"kind": "agentic-multi-turn", "turns": "multi", "input_tokens": None, "output_tokens": None}
DEPLOYMENTS: dict[str, dict[str, Any]] = {
    "kimik2.5-fp4-b200-vllm-agentic-lmcache": {
        "system": {"accelerators": {"vendor": "NVIDIA", "model": "B200", "count": 8}},
        "engine": {"version": "0.22.0"},
        "precision": {"weights": "nvfp4", "activations": "unspecified", "kv_cache": "fp8",
                      "quantization": {"method": "NVFP4 checkpoint"}},
        "workload": {"name": "inferencex-agentx-mvp", "version": "060226", "request_shape": _AGENTIC},
    },
    "glm5.1-fp4-mi355x-sglang-agentic-hicache": {
        "system": {"accelerators": {"vendor": "AMD", "model": "Instinct MI355X", "count": 2}},
        "engine": {"version": "0.5.12.post1"},
        "precision": {"weights": "mxfp4", "activations": "unspecified", "kv_cache": "unspecified",
                      "quantization": {"method": "MXFP4 checkpoint"}},
        "workload": {"name": "inferencex-agentx-mvp", "version": "060226_256k", "request_shape": _AGENTIC},
    },
    "aiperf-0.13.0": {
        "system": {"accelerators": {"vendor": "NVIDIA", "model": "H100", "count": 1}},
        "engine": {"name": "benchreg-simulated", "version": "1"},
        "precision": {"weights": "bf16", "activations": "bf16", "kv_cache": "bf16"},
        "parallelism": {"tensor": 1},
        "workload": {"name": "simulated-64-32"},
    },
}  # fmt: skip
# What the importer reads of a folder: the tools' summaries, aiperf's per-request records, the harness's records.
READ = ("**/profile_export_aiperf.json", "**/profile_export.jsonl", "**/benchmarks.json", "**/agg_bmk.json",
        "bmk_*/*.json")  # fmt: skip
_READ_FILES = """
import json, sys
for name in sys.argv[1:]:
    raw = open(name, "rb").read()
    if name.endswith(".jsonl"):
        [json.loads(line) for line in raw.splitlines() if line.strip()]
    else:
        json.loads(raw)
"""


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}  # SQLite in `data_dir`
    return {**env, "BENCHREG_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}


def _timed(cmd: list[str], env: dict[str, str], cpu: list[float] | None = None) -> float:
    """Wall seconds of one command; its CPU seconds (user + system, a busy host's waiting left out) to `cpu`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:6])}... failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    if cpu is not None:
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return elapsed


def _levels(data_dir: Path) -> int:
    """The runs the import stored (one per level), read from its SQLite file."""
    database = next(data_dir.glob("*.sqlite3"))
    with sqlite3.connect(database) as db:
        return int(db.execute("select count(*) from registry_submission").fetchone()[0])


def _median(samples: list[float]) -> str:
    return f"{statistics.median(samples):.2f} s (of {len(samples)}: {', '.join(f'{s:.2f}' for s in samples)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", nargs="?", type=Path, default=SHARED / "kimik2.5-fp4-b200-vllm-agentic-lmcache")
    parser.add_argument("--deployment", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="the aiperf fixture, one repeat")
    args = parser.parse_args()
    sweep, repeats = (SMOKE, 1) if args.smoke else (args.sweep.resolve(), args.repeats)
    files = sorted({p for pattern in READ for p in sweep.glob(pattern)})
    size = sum(p.stat().st_size for p in files)
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-serving-import-") as tmp:
        work = Path(tmp)
        deployment = args.deployment or work / "deployment.json"
        if not args.deployment:
            deployment.write_text(json.dumps(DEPLOYMENTS[sweep.name]))
        template = work / "template"
        template.mkdir()
        _timed([python, "-m", "registry.cli", "migrate", "-v", "0"], _env(template))
        command = [python, "-m", "registry.cli", "import", "serving", str(sweep), "--deployment", str(deployment)]
        shutil.copytree(template, work / "cold")
        cold = _timed(command, _env(work / "cold"))
        levels = _levels(work / "cold")
        imports, starts, reads = [], [], []
        cpu: dict[str, list[float]] = {"import": [], "start": [], "read": []}
        for n in range(repeats):
            fresh = work / f"run{n}"
            shutil.copytree(template, fresh)
            imports.append(_timed(command, _env(fresh), cpu["import"]))
            starts.append(_timed([*command[:5], "--help"], _env(fresh), cpu["start"]))
            reads.append(_timed([python, "-c", _READ_FILES, *map(str, files)], _env(fresh), cpu["read"]))
    print(f"sweep: {sweep.name}: {levels} levels, {len(files)} files read, {size / 1e6:.2f} MB; load average "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"first import (timed apart)                  {cold:.2f} s")
    print(f"benchreg import serving (fresh SQLite)      {_median(imports)}")
    print(f"  start-up alone (the command's --help)     {_median(starts)}")
    print(f"read + json.loads of the same files         {_median(reads)}  (a process of its own)")
    ratio = statistics.median(imports) / statistics.median(reads)
    added = statistics.median(imports) - statistics.median(starts)
    print(f"import / read ratio {ratio:.1f}x; import beyond start-up {added:.2f} s")
    cpu_of = {name: statistics.median(samples) for name, samples in cpu.items()}
    print(
        f"CPU time (user + system, median): import {cpu_of['import']:.2f} s, start-up {cpu_of['start']:.2f} s, "
        f"read {cpu_of['read']:.2f} s; import beyond start-up {cpu_of['import'] - cpu_of['start']:.2f} s CPU, "
        f"{(cpu_of['import'] - cpu_of['start']) / cpu_of['read']:.1f}x the read"
    )


if __name__ == "__main__":
    main()
