"""An authored MLPerf Training tree of one submitter's system at several sizes, for tests of the scaling axis.

NOT PUBLISHED RESULTS. MLCommons' rounds rarely publish one submitter's benchmark at several sizes, and the trimmed
round beside the checkout (../shared/data/mlperf-rounds/training_v4.0) keeps every submitter at one size. This
module writes, under a folder the caller gives (a test's tmp_path), a derivative of one real result of that round:
its system description and its result_<n>.txt logs, rewritten as the same system on 1, 2, 4... nodes whose times to
train are numbers the caller chooses. Every figure a test reads from the tree is ours, not the submitter's; the
system descriptions say so in their hw_notes, and nothing here may be cited as an MLPerf result.

What is changed, and why it stays consistent with what benchreg's importer reads
(registry/importers/mlperf/training.py, training_logs.py, rounds/training/v4.0.json):

- systems/<id>.json: number_of_nodes and system_name (the published name with `_n<nodes>`, as NVIDIA names its
  multi-node systems); accelerators_per_node is kept, so the size in accelerators is nodes × that.
- result_<n>.txt: every :::MLLOG record from run_start on is moved along the run's clock by one factor per run,
  t' = run_start + (t − run_start) × k, so run_stop − run_start (what the importer and MLCommons' summarizer time)
  becomes the duration chosen for it, and evaluations, epochs and the run's end keep their order. Records before
  run_start (initialization) are untouched, so the round's initialization limit is met as it was. The logged
  throughput (tracked_stats) is divided by k, as a run k times faster processes the same samples. The logs'
  submission_platform names the node count.
- Quality is unchanged: every run reaches the accuracy it reached, at the same samples (strong scaling at the same
  global_batch_size, which the round's rules leave to the submitter and the importer stores as the workload's batch).
- The durations: each run's published duration scaled by one factor per size, rounded to whole milliseconds (as
  MLLOG's time_ms is), with the rounding's remainder put on the median run, so MLPerf's olympic mean of the sizes'
  runs (the fastest and slowest dropped) is exactly the time to train chosen. The source result has no
  scaling.json, so the published time is that mean (factor 1).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

MLLOG = ":::MLLOG "
NOTE = (
    "AUTHORED TEST DERIVATIVE (benchreg devtools/mlperf_sizes.py), not a published MLPerf result: "
    "{system} at several node counts, with times to train chosen by a test"
)


def sized_training_round(
    source: Path,
    submitter: str,
    system: str,
    benchmark: str,
    minutes: Mapping[int, Fraction | float],
    destination: Path,
) -> Path:
    """Write `destination`/training_results_v<round>/<submitter>/ with `system`'s `benchmark` result at each number
    of nodes of `minutes` ({nodes: time to train in minutes}), and return the round's folder (what
    `benchreg import mlperf` reads). `source` is the round's folder (its name gives the round, as the importer reads
    it). A time must be a whole number of milliseconds (a float is read as its decimal text: 11.25 is 675000 ms)."""
    root = destination / f"training_results_{source.name.rsplit('_', 1)[-1]}" / submitter
    published = json.loads((source / submitter / "systems" / f"{system}.json").read_text())
    results = source / submitter / "results" / system / benchmark
    runs = sorted(results.glob("result_*.txt"))
    if not runs or (results / "scaling.json").exists():
        raise ValueError(f"{submitter}/{system}/{benchmark}: needs result_<n>.txt files and no scaling.json")
    logs = [[_record(line) for line in path.read_text().splitlines()] for path in runs]
    durations = [_duration(records) for records in logs]
    for nodes, time in sorted(minutes.items()):
        sized = _write_system(root / "systems", system, published, nodes)
        folder = root / "results" / sized / benchmark
        folder.mkdir(parents=True)
        chosen = _durations(durations, Fraction(str(time) if isinstance(time, float) else time) * 60_000)
        for path, records, old, new in zip(runs, logs, durations, chosen, strict=True):
            (folder / path.name).write_text(_rewritten(records, old, new, nodes))
    return root.parent


def _write_system(folder: Path, system: str, published: dict[str, Any], nodes: int) -> str:
    """The published description at `nodes` nodes, named `<system>_n<nodes>` unless it is the published size;
    returns the system id written."""
    same = nodes == int(published["number_of_nodes"])
    sized = system if same else f"{system}_n{nodes}"
    description = published | {
        "number_of_nodes": str(nodes),
        "system_name": published["system_name"] + ("" if same else f"_n{nodes}"),
        "hw_notes": NOTE.format(system=published["system_name"]),
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sized}.json").write_text(json.dumps(description, indent=4) + "\n")
    return sized


def copy_of_one_size(source: Path, submitter: str, system: str, destination: Path) -> Path:
    """`system` alone, copied unchanged from the round `source` into `destination`/<source's name>/ (a tree of one
    size); returns the round's folder."""
    root = destination / source.name
    shutil.copytree(source / submitter / "results" / system, root / submitter / "results" / system)
    (root / submitter / "systems").mkdir(parents=True)
    shutil.copy(source / submitter / "systems" / f"{system}.json", root / submitter / "systems")
    return root


def _record(line: str) -> dict[str, Any] | str:
    """An MLLOG line's record, or the line itself when it is not one (kept as written)."""
    return json.loads(line.split(MLLOG, 1)[1]) if MLLOG in line else line


def _duration(records: list[dict[str, Any] | str]) -> int:
    """run_stop − run_start in ms (the first of each, as the summarizer reads them)."""
    start = next(r["time_ms"] for r in records if isinstance(r, dict) and r["key"] == "run_start")
    stop = next(r["time_ms"] for r in records if isinstance(r, dict) and r["key"] == "run_stop")
    return int(stop - start)


def _durations(published: list[int], mean_ms: Fraction) -> list[int]:
    """Each run's new duration in whole ms: the published ones scaled so their olympic mean (one dropped at each
    end) is `mean_ms`, the rounding's remainder on the median run."""
    if mean_ms.denominator != 1:
        raise ValueError(f"a time to train of {float(mean_ms)} ms is not a whole number of milliseconds")
    order = sorted(range(len(published)), key=lambda i: published[i])
    kept = order[1:-1]
    factor = mean_ms * len(kept) / sum(published[i] for i in kept)
    new = [round(d * factor) for d in published]
    new[order[len(order) // 2]] += int(mean_ms * len(kept)) - sum(new[i] for i in kept)
    if [new[i] for i in order] != sorted(new):
        raise ValueError("the rounding changed which runs are the fastest and slowest")
    return new


def _rewritten(records: list[dict[str, Any] | str], old: int, new: int, nodes: int) -> str:
    """One run's log with its clock from run_start on stretched by new ÷ old (see the module's docstring)."""
    start: int | None = None
    lines = []
    for record in records:
        if isinstance(record, str):
            lines.append(record)
            continue
        if record["key"] == "run_start" and start is None:
            start = int(record["time_ms"])
        lines.append(MLLOG + json.dumps(_moved(record, start, Fraction(new, old), nodes)))
    return "\n".join(lines) + "\n"


def _moved(record: dict[str, Any], start: int | None, k: Fraction, nodes: int) -> dict[str, Any]:
    """One record of the run: its time (from run_start on) and logged throughput stretched, its platform sized."""
    out = dict(record)
    if start is not None:
        out["time_ms"] = start + round((record["time_ms"] - start) * k)
        if record["key"] == "tracked_stats" and isinstance(record.get("value"), dict):
            out["value"] = {
                name: float(value / k) if name == "throughput" and isinstance(value, int | float) else value
                for name, value in record["value"].items()
            }
    if record["key"] == "submission_platform" and isinstance(record.get("value"), str):
        out["value"] = f"{nodes}x" + record["value"].split("x", 1)[-1]
    return out
