"""Import a published MLPerf Training round: one time-to-quality run per system × benchmark.

Plain Python (no Django), the same contract as `parse_tree` (an ImportPlan of ImportItems whose
documents pass protocol.check). Layout (training_results_v3.1 onwards):
`<submitter>/systems/<system>.json` and `<submitter>/results/<system>/<benchmark>/result_<n>.txt`, each result
file the :::MLLOG lines of one training run.

Scoring is MLPerf's (mlcommons/logging result_summarizer): a run's time to train is run_stop − run_start
(ms); a run that did not end with status "success" counts as infinitely slow; the fastest and the slowest
runs are dropped and the rest averaged (the "olympic" mean). A result whose average would include a failed
run is refused. MLPerf's reference-convergence (RCP) normalisation is not applied: its tables are not in
the result files, so the mean is of the times as logged, and the document says so.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

from protocol import rules

from .ledger import Ledger
from .logs import read_json_object, read_mllog
from .plan import Build, FileReport, ImportItem, ImportPlan, SourceError
from .rules import DROPPED, UNSPECIFIED
from .systems import publication_facets, software_section, system_section
from .tree import all_files, inside, passed_over

RESULT_FILE = re.compile(r"^result_.*\.txt$")
Run = tuple[Path, float | None, str | None, dict[str, Any]]  # a result file, its seconds, status and first values


class _Result(NamedTuple):
    """One system × benchmark as read: what its document is built from."""

    system: dict[str, Any]
    system_id: str
    benchmark: str
    round: str
    runs: list[Run]

    @property
    def first(self) -> dict[str, Any]:
        """The first value of each key in the first run's log."""
        return self.runs[0][3]


def is_training_tree(root: Path) -> bool:
    """True when the tree holds results/<system>/<benchmark>/result_<n>.txt files (MLPerf Training)."""
    return any(RESULT_FILE.match(p.name) for p in Path(root).glob("**/results/*/*/result_*.txt"))


def parse_tree(root: Path, *, round_name: str | None = None) -> ImportPlan:
    """Read an MLPerf Training round (or one submitter, system or benchmark of it) into an ImportPlan.

    The round is not in the logs: it comes from `round_name` or else from a folder named like
    'training_results_v4.0'; without either every item is refused with that reason."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    round_value = _round(root, round_name)
    folders = _result_folders(root)
    items = [_import_item(folder.parents[2], root, folder, round_value) for folder in folders]
    errors = [] if folders else ["no results/<system>/<benchmark>/result_<n>.txt found: not an MLPerf Training tree"]
    return ImportPlan(
        items=items,
        skipped=_unclaimed(root, items),
        round=round_value,
        round_source="argument" if round_name else "folder name",
        errors=errors,
    )


def _result_folders(root: Path) -> list[Path]:
    # results/<system>/<benchmark>/ as real folders: a link there (results/x -> .) would read a folder twice
    return sorted(
        {
            p.parent
            for p in root.glob("**/results/*/*/result_*.txt")
            if not (p.parent.is_symlink() or p.parent.parent.is_symlink()) and inside(p, root)
        }
    )


def _unclaimed(root: Path, items: list[ImportItem]) -> list[FileReport]:
    claimed = {root / f.path for item in items for f in item.files}
    return [
        FileReport(
            p.relative_to(root).as_posix(),
            None,
            "skipped",
            "not a training result (systems/<system>.json and results/<system>/<benchmark>/result_<n>.txt are read)",
        )
        for p in all_files(root)
        if p not in claimed
    ] + passed_over(root)


def _round(root: Path, round_name: str | None) -> str | None:
    if round_name:
        return round_name if round_name.startswith("v") else f"v{round_name}"
    for part in reversed(root.resolve().parts):
        match = re.search(r"v(\d+\.\d+)$", part)
        if match:
            return f"v{match[1]}"
    return None


def run_time(records: list[dict[str, Any]]) -> tuple[float | None, str | None, dict[str, Any]]:
    """(seconds from run_start to run_stop or None, run_stop's status, the first value of each key)."""
    first: dict[str, Any] = {}
    start = stop = None
    status = None
    for record in records:
        first.setdefault(record["key"], record.get("value"))
        if record["key"] == "run_start" and start is None:
            start = record.get("time_ms")
        elif record["key"] == "run_stop":
            stop = record.get("time_ms")
            status = (record.get("metadata") or {}).get("status")
    if isinstance(start, int):
        first["run_start.time_ms"] = start
    if not isinstance(start, int | Decimal) or not isinstance(stop, int | Decimal) or stop < start:
        return None, status, first
    return float((Decimal(stop) - Decimal(start)) / 1000), status, first


def olympic_mean(seconds: list[float | None], drop: int = 1) -> tuple[float | None, list[bool]]:
    """MLPerf's score: sort the runs (a failed run, None, is slower than any), drop `drop` at each end and
    average the rest. Returns (mean or None when a failed run would be averaged or too few runs remain,
    which runs were averaged)."""
    order = sorted(range(len(seconds)), key=lambda i: (seconds[i] is None, seconds[i] or 0.0))
    used = [False] * len(seconds)
    kept = order[drop : len(order) - drop]
    if not kept:
        return None, used
    for i in kept:
        used[i] = True
    values = [seconds[i] for i in kept]
    if any(v is None for v in values):
        return None, used
    return sum(v for v in values if v is not None) / len(values), used


def _import_item(submission: Path, tree: Path, folder: Path, round_value: str | None) -> ImportItem:
    system_id, benchmark = folder.parts[-2:]
    ledger = Ledger(submission, tree)
    system = ledger.load(
        submission / "systems" / f"{system_id}.json", read_json_object, what="system description", required=True
    )
    runs = _load_runs(ledger, folder)
    if round_value is None:
        ledger.errors.append("the round is not in the logs and not in the folder name: pass --round")
    document, build = None, Build()
    if not ledger.errors:
        try:
            document = _document(_Result(system, system_id, benchmark, round_value or "", runs), ledger, build)
        except SourceError as exc:
            ledger.errors.append(str(exc))
    return _finished_item(f"{system_id}/{benchmark}", tree, folder, ledger, ledger.checked(document), build)


def _load_runs(ledger: Ledger, folder: Path) -> list[Run]:
    runs = []
    for path in sorted(folder.iterdir(), key=_natural):
        if path.is_file() and RESULT_FILE.match(path.name):
            records = ledger.load(path, read_mllog, what="training run log", required=True, lenient=True)
            if records is not None:
                runs.append((path, *run_time(records)))
    return runs


def _finished_item(
    key: str, tree: Path, folder: Path, ledger: Ledger, document: dict[str, Any] | None, build: Build
) -> ImportItem:
    unread = [
        FileReport(p.relative_to(tree).as_posix(), None, "skipped", "not a result_<n>.txt")
        for p in all_files(folder)
        if p not in ledger.reports
    ]
    return ImportItem(
        key=key,
        document=document,
        files=sorted([*ledger.reports.values(), *unread], key=lambda f: f.path),
        errors=ledger.errors,
        warnings=ledger.warnings + build.warnings,
    )


def _natural(path: Path) -> list[tuple[int, int, str]]:
    """result_2.txt before result_10.txt."""
    return [(0, int(s), "") if s.isdigit() else (1, 0, s) for s in re.split(r"(\d+)", path.name)]


def _document(result: _Result, ledger: Ledger, build: Build) -> dict[str, Any]:
    drop = DROPPED.get(result.benchmark, 1)
    score, used = _score(result.runs, drop)
    batch = _global_batch_size(result.runs)
    submitter = _submitter(result.first, result.system)
    origin = _origin(result, used, submitter, ledger, build)
    workload = {"name": result.benchmark, "version": f"mlperf-training-{result.round}", "shape": {"batch_size": batch}}
    return {
        "protocol": f"{rules.PROTOCOL_NAME}/{rules.PROTOCOL_VERSION}",
        "phase": "training",
        "workload": workload,
        "scenario": {"kind": "time-to-quality"},
        # MLPerf Training logs state no number formats: not guessed.
        "precision": {"weights": UNSPECIFIED, "activations": UNSPECIFIED},
        "system": system_section(result.system, build),
        "software": software_section(result.system, {}, {}, build),
        "conditions": _conditions(len(result.runs)),
        "metrics": _metrics(result.first, score, used, len(result.runs), drop),
        "provenance": _provenance(result.round, submitter, _first_run_start(result.runs), origin),
    }


def _score(runs: list[Run], drop: int) -> tuple[float, list[bool]]:
    seconds = [s if status == "success" else None for _p, s, status, _f in runs]
    score, used = olympic_mean(seconds, drop)
    if score is None:
        raise SourceError(
            f"no MLPerf score: {len(runs)} run(s), {seconds.count(None)} without a successful "
            f"run_stop; dropping {drop} at each end must leave runs that all succeeded"
        )
    return score, used


def _global_batch_size(runs: list[Run]) -> int:
    batch = next((f.get("global_batch_size") for *_x, f in runs if isinstance(f.get("global_batch_size"), int)), None)
    if not isinstance(batch, int) or batch < 1:
        raise SourceError("no global_batch_size record in any run")
    return batch


def _submitter(first: dict[str, Any], system: dict[str, Any]) -> str:
    submitter = str(first.get("submission_org") or system.get("submitter") or "").strip()
    if not submitter:
        raise SourceError("neither submission_org nor the system description names a submitter")
    return submitter


def _origin(result: _Result, used: list[bool], submitter: str, ledger: Ledger, build: Build) -> dict[str, Any]:
    origin: dict[str, Any] = {
        "kind": "mlperf-training",
        "round": result.round,
        "submitter": submitter,
        **_publication_facets(result.first, result.system, build),
        "system_id": result.system_id,
        "benchmark": result.benchmark,
        "files": ledger.digests(),
        "runs": [
            {"file": path.name, "seconds": s, "status": status, "used": u}
            for (path, s, status, _f), u in zip(result.runs, used, strict=True)
        ],
    }
    origin["category"] = None  # MLPerf Training has no datacenter/edge category
    if build.unparsed:
        origin["unparsed"] = dict(sorted(build.unparsed.items()))
    return origin


def _publication_facets(first: dict[str, Any], system: dict[str, Any], build: Build) -> dict[str, Any]:
    return publication_facets(
        {
            "division": first.get("submission_division") or system.get("division"),
            "status": system.get("status") or first.get("submission_status"),
        },
        build,
    )


def _conditions(repetitions: int) -> dict[str, Any]:
    return {
        "warmup": None,
        "window": {"seconds": None, "iterations": None, "repetitions": repetitions},
        "steady_state": {"method": "not-assessed", "reached": None},
    }


def _metrics(first: dict[str, Any], score: float, used: list[bool], runs: int, drop: int) -> dict[str, Any]:
    quality_key = next((k for k in ("eval_accuracy", "eval_error", "eval_loss") if k in first), None)
    return {
        "primary": "time_to_quality",
        "time_to_quality": {
            "seconds": score,
            "epochs": None,
            "runs": sum(used),
            "method": "MLPerf Training olympic mean of run_start..run_stop over "
            f"{runs} runs, {drop} fastest and {drop} slowest dropped; "
            "no RCP normalisation" + (f"; quality logged as {quality_key}" if quality_key else ""),
        },
    }


def _provenance(round_value: str, submitter: str, started_at: str | None, origin: dict[str, Any]) -> dict[str, Any]:
    return {
        "runner": {"name": "mlperf-training", "version": round_value},
        "submitter": submitter,
        "source": "import",
        "started_at": started_at,
        "finished_at": None,
        "origin": origin,
    }


def _first_run_start(runs: list[Run]) -> str | None:
    """The earliest run_start of the result, as UTC ISO 8601 (MLLOG time_ms is Unix epoch milliseconds)."""
    stamps = [f["run_start.time_ms"] for *_x, f in runs if isinstance(f.get("run_start.time_ms"), int)]
    if not stamps:
        return None
    return datetime.fromtimestamp(min(stamps) / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
