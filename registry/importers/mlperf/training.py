"""Import a published MLPerf Training round: one time-to-quality run per system × benchmark.

Plain Python (no Django), the same contract as `parse_tree` (an ImportPlan of ImportItems whose
documents pass protocol.check). Layout (training_results_v3.1 onwards):
`<submitter>/systems/<system>.json` and `<submitter>/results/<system>/<benchmark>/result_<n>.txt`, each result
file the :::MLLOG lines of one training run, and where MLCommons set one, `scaling.json` beside them.

Scoring is MLPerf's (mlcommons/logging result_summarizer), with the round's rules read from
rounds/training/v<round>.json (training_rules): a run's time to train is run_stop − run_start; a run whose
log never meets the division's quality target (the compliance checker's check) counts as infinitely slow;
the round's number of runs is dropped at each end and the rest averaged (the "olympic" mean); the mean is
multiplied by the folder's scaling.json factor (MLPerf's reference-convergence normalisation, set at review),
1 where there is none, exactly as the summarizer does. That product is the published time to train; the
document keeps the factor and the unscaled mean beside it. A result whose average would include a failed run,
with fewer runs than its benchmark needs, or of a round, benchmark or division the rules do not cover, is
refused with the reason named.
"""

from __future__ import annotations

import re
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from .ledger import Ledger
from .logs import read_json_object, read_mllog
from .plan import Build, FileReport, ImportItem, ImportPlan, SourceError
from .rules import PROTOCOL as MLPERF_PROTOCOL
from .rules import UNSPECIFIED
from .systems import publication_facets, software_section, system_section
from .training_logs import Judged, judge, read_scaling, run_time, stop_checkpoint
from .training_power import PowerRule, node_energy, power_rule, switch_energy
from .training_rules import BenchmarkRules, QualityRule, RoundRules, Scaling, round_rules
from .tree import all_files, inside, passed_over

RESULT_FILE = re.compile(r"^result_.*\.txt$")
# The newest minor: it has time_to_quality.scaling_factor / unscaled_seconds and runs[].quality.
PROTOCOL = MLPERF_PROTOCOL


class Run(NamedTuple):
    """One result_<n>.txt as read: its time (None without run_start and run_stop), run_stop's status, the
    first value of each key, and its records (the quality rule reads them once the round is known)."""

    path: Path
    seconds: float | None
    status: str | None
    first: dict[str, Any]
    records: list[dict[str, Any]]


class _Result(NamedTuple):
    """One system × benchmark as read: what its document is built from."""

    system: dict[str, Any]
    system_id: str
    benchmark: str
    round: RoundRules
    runs: list[Run]
    scaling: float | None  # the factor of scaling.json; None when the folder has none
    power: list[float | None] | None = None  # each run's energy (J) from power/; None when the folder has none

    @property
    def first(self) -> dict[str, Any]:
        """The first value of each key in the first run's log."""
        return self.runs[0].first


class _Score(NamedTuple):
    """A result scored: the rules used, each run's verdict, which runs were averaged, and the mean."""

    rules: BenchmarkRules
    judged: list[Judged]
    used: list[bool]
    mean: float


def is_training_tree(root: Path) -> bool:
    """True when the tree holds results/<system>/<benchmark>/result_<n>.txt files (MLPerf Training)."""
    return any(RESULT_FILE.match(p.name) for p in Path(root).glob("**/results/*/*/result_*.txt"))


def parse_tree(root: Path, *, round_name: str | None = None) -> ImportPlan:
    """Read an MLPerf Training round (or one submitter, system or benchmark of it) into an ImportPlan.

    The round is not in the logs (MLLOG lines name no round, and no logging version stands in for one): it comes
    from the tree's folder name ('training_results_v4.0') or `round_name`; an argument that contradicts the folder
    name, or neither, refuses every item with that reason."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    named = _round_of_folder(root)
    argument = _as_round(round_name) if round_name else None
    conflict = (
        f"--round {argument} contradicts the tree's folder name ({named[1]}, round {named[0]}): "
        "rename the folder or leave --round out"
        if argument and named and argument != named[0]
        else None
    )
    round_value = None if conflict else argument or (named[0] if named else None)
    folders = _result_folders(root)
    items = [_import_item(folder.parents[2], root, folder, round_value, conflict) for folder in folders]
    errors = [] if folders else ["no results/<system>/<benchmark>/result_<n>.txt found: not an MLPerf Training tree"]
    return ImportPlan(
        items=items,
        skipped=_unclaimed(root, items),
        round=round_value,
        round_source=_round_source(argument, named, conflict),
        errors=errors + ([conflict] if conflict else []),
    )


def _round_source(argument: str | None, named: tuple[str, str] | None, conflict: str | None) -> str:
    if conflict:
        return "refused: --round contradicts the folder name"
    if named:
        return f"folder name {named[1]}" + (" (and --round)" if argument else "")
    return "argument" if argument else "undetermined: no folder named like training_results_v<round>, no --round"


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


def _as_round(name: str) -> str:
    return name if name.startswith("v") else f"v{name}"


# A results repository's name ('training_results_v4.1', 'training_v4.0'), before any other '..._v4.1' folder
REPOSITORY_NAME = re.compile(r"^training(?:_results)?_v(\d+\.\d+)$", re.IGNORECASE)
ROUND_NAME = re.compile(r"v(\d+\.\d+)$")


def _round_of_folder(root: Path) -> tuple[str, str] | None:
    """(round, folder) from the name of the tree's folder or one above it: a folder named like MLCommons' results
    repository first ('training_results_v4.1'), else the nearest folder whose name ends in v<major>.<minor>.
    Folders at or below a results/ folder (systems, benchmarks) are never read: a system named '..._v2.0' is not
    a round."""
    parts = root.resolve().parts
    # the submission's results/ folder: the last 'results' whose parent has systems/ beside it
    cut = next(
        (i for i in range(len(parts) - 1, 0, -1) if parts[i] == "results" and Path(*parts[:i], "systems").is_dir()),
        len(parts),
    )
    above = parts[:cut]
    for pattern in (REPOSITORY_NAME, ROUND_NAME):
        for part in reversed(above):
            if match := pattern.search(part):
                return f"v{match[1]}", part
    return None


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


def _import_item(
    submission: Path, tree: Path, folder: Path, round_value: str | None, conflict: str | None = None
) -> ImportItem:
    system_id, benchmark = folder.parts[-2:]
    ledger = Ledger(submission, tree)
    system = ledger.load(
        submission / "systems" / f"{system_id}.json", read_json_object, what="system description", required=True
    )
    runs = _load_runs(ledger, folder)
    if conflict:
        ledger.errors.append(conflict)
    round_rules_ = _rules_of(round_value, ledger) if not conflict else None
    scaling = _scaling(ledger, folder, round_rules_.scaling) if round_rules_ else None
    power = _power(ledger, folder, runs, round_rules_.round) if round_rules_ else None
    document, build = None, Build()
    if round_rules_ and not ledger.errors:
        try:
            result = _Result(system, system_id, benchmark, round_rules_, runs, scaling, power)
            document = _document(result, ledger, build)
        except SourceError as exc:
            ledger.errors.append(str(exc))
    return _finished_item(f"{system_id}/{benchmark}", tree, folder, ledger, ledger.checked(document), build)


def _rules_of(round_value: str | None, ledger: Ledger) -> RoundRules | None:
    """The round's rules, or None with the reason recorded (no round known, or no rules file for it)."""
    if round_value is None:
        ledger.errors.append("the round is not in the logs and not in the folder name: pass --round")
        return None
    try:
        return round_rules(round_value)
    except SourceError as exc:
        ledger.errors.append(str(exc))
        return None


def _scaling(ledger: Ledger, folder: Path, rule: Scaling) -> float | None:
    """The folder's scaling factor, None when it has no scaling.json; a malformed one is recorded as an
    error (the summarizer would fail on it too), which refuses the result."""
    path = folder / rule.file
    if not path.exists() and not path.is_symlink():
        return None
    factor = ledger.load(path, lambda text: read_scaling(text, rule), what="MLPerf scaling factor", required=True)
    return factor if isinstance(factor, float) else None


def _power(ledger: Ledger, folder: Path, runs: list[Run], round_value: str) -> list[float | None] | None:
    """Each run's energy in joules from power/<result>/ (MLPerf Training Power), None without a power/ folder
    (the summarizer's _has_power). A run without a time has none (the summarizer drops it before its power);
    a run with a time but no node_*.txt, or a file the round's rule cannot total, is an error that refuses the
    result (the summarizer fails on it too). A round without a power rule keeps its time, and says so."""
    if not (folder / "power").is_dir():
        return None
    try:
        rule = power_rule(round_value)
    except SourceError as exc:
        ledger.errors.append(str(exc))
        return None
    if rule is None:
        ledger.warnings.append(
            f"power/: MLPerf Training {round_value} has no power rule (rounds/training/power.json): "
            "its readings are not imported as energy"
        )
        return None
    return [_run_energy(ledger, folder, run, rule) for run in runs]


def _run_energy(ledger: Ledger, folder: Path, run: Run, rule: PowerRule) -> float | None:
    if run.seconds is None:
        return None
    milliseconds = run.seconds * 1000
    where = rule.run_folder(folder, run.path)
    nodes = sorted(where.glob(rule.node_files)) if where.is_dir() else []
    if not nodes:
        ledger.errors.append(
            f"{where.relative_to(ledger.tree).as_posix()}: no {rule.node_files} power readings for {run.path.name} "
            "(MLCommons' summarizer requires them for every run of a result with power/)"
        )
        return None
    total = 0.0
    for path, energy in [(p, node_energy) for p in nodes] + [
        (p, switch_energy) for p in sorted(where.glob(rule.switch_files))
    ]:
        joules = ledger.load(
            path,
            lambda text, energy=energy: energy(read_mllog(text), milliseconds, rule),
            what="MLPerf power readings",
            required=True,
        )
        if joules is None:
            return None
        total += joules
    return total


def _load_runs(ledger: Ledger, folder: Path) -> list[Run]:
    runs = []
    for path in sorted(folder.iterdir(), key=_natural):
        if path.is_file() and RESULT_FILE.match(path.name):
            records = ledger.load(path, read_mllog, what="training run log", required=True, lenient=True)
            if records is not None:
                runs.append(Run(path, *run_time(records), records))
    return runs


def _finished_item(
    key: str, tree: Path, folder: Path, ledger: Ledger, document: dict[str, Any] | None, build: Build
) -> ImportItem:
    unread = [
        FileReport(p.relative_to(tree).as_posix(), None, "skipped", "not a result_<n>.txt or scaling.json")
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
    score = _score(result, build)
    batch = _global_batch_size(result.runs)
    submitter = _submitter(result.first, result.system, build)
    origin = _origin(result, score, submitter, ledger, build)
    round_name = result.round.round
    workload = {"name": result.benchmark, "version": f"mlperf-training-{round_name}", "shape": {"batch_size": batch}}
    return {
        "protocol": PROTOCOL,
        "phase": "training",
        "workload": workload,
        "scenario": _scenario(score.rules.quality, _division(result)),
        # MLPerf Training logs state no number formats: not guessed.
        "precision": {"weights": UNSPECIFIED, "activations": UNSPECIFIED},
        "system": system_section(result.system, build),
        "software": software_section(result.system, {}, {}, build),
        "conditions": _conditions(len(result.runs)),
        "metrics": _metrics(result, score),
        "provenance": _provenance(round_name, submitter, _first_run_start(result.runs), origin),
    }


def _scenario(rule: QualityRule, division: str) -> dict[str, Any]:
    """Time to quality, with the quality target the division's rule sets: the scenario is a controlled field of
    the comparability contract, so a closed result (resnet to 0.759) and an open one (any accuracy below 1.0) of
    one benchmark are never compared as if they trained to the same quality. The metric names the division and
    the checker's own condition; an open rule with no target bound (`v < 1.0`) states none (null)."""
    target = rule.target()
    quality_target = (
        None
        if target is None
        else {"metric": f"{rule.headline} ({division} division: {rule.check})"[:500], "value": target}
    )
    return {"kind": "time-to-quality", "quality_target": quality_target}


def _division(result: _Result) -> str:
    """The division the quality rule is taken for (the log's submission_division, else the description's)."""
    division = str(result.first.get("submission_division") or result.system.get("division") or "").strip().lower()
    if not division:
        raise SourceError("neither submission_division nor the system description names the division")
    return division


def _score(result: _Result, build: Build) -> _Score:
    """Each run judged by the round's quality rule, then MLPerf's olympic mean of the converged runs' times."""
    rules = result.round.benchmark(result.benchmark, _division(result))
    runs = result.runs
    if len(runs) < rules.runs_required:
        raise SourceError(
            f"{len(runs)} run(s); MLPerf Training {result.round.round} needs {rules.runs_required} for "
            f"{rules.benchmark} (mlperf_logging/benchmark_meta.py): not a complete result"
        )
    judged = [judge(run.seconds, run.records, rules.quality, rules.init_limit_ms) for run in runs]
    build.warnings.extend(_status_disagreements(runs, judged))
    build.warnings.extend(_checkpoint_disagreements(runs, judged, rules))
    mean, used = olympic_mean([j.seconds for j in judged], rules.dropped_each_end)
    if mean is None:
        failed = [f"{run.path.name}: {j.why}" for run, j in zip(runs, judged, strict=True) if not j.converged]
        raise SourceError(
            f"no MLPerf score: {len(runs)} run(s), {len(failed)} not converged ({'; '.join(failed[:3])}); "
            f"dropping {rules.dropped_each_end} at each end must leave runs that all converged"
        )
    return _Score(rules, judged, used, mean)


def _status_disagreements(runs: list[Run], judged: list[Judged]) -> list[str]:
    """Runs whose run_stop status says otherwise than MLPerf's checks (the checks are what it scores)."""
    return [
        f"{run.path.name}: run_stop status is {run.status!r} but "
        + (f"the run does not count as converged: {verdict.why}" if verdict.why else "the log meets the target")
        + "; scored as MLPerf's checks say"
        for run, verdict in zip(runs, judged, strict=True)
        if (run.status == "success") != verdict.converged
    ]


def _checkpoint_disagreements(runs: list[Run], judged: list[Judged], rules: BenchmarkRules) -> list[str]:
    """Runs whose run_stop names another checkpoint than the lowest that met the target (the one MLCommons' RCP
    checker counts, and the importer keeps): said, never silently swapped."""
    found = []
    for run, verdict in zip(runs, judged, strict=True):
        named = stop_checkpoint(run.records, rules.quality)
        if verdict.converged and named is not None and verdict.checkpoint is not None and named != verdict.checkpoint:
            found.append(
                f"{run.path.name}: run_stop names {rules.quality.group_by} {named:g} but the lowest that met the "
                f"target is {verdict.checkpoint:g}; its quality is kept, as MLCommons' RCP checker counts it"
            )
    return found


def _global_batch_size(runs: list[Run]) -> int:
    batch = next(
        (r.first.get("global_batch_size") for r in runs if isinstance(r.first.get("global_batch_size"), int)), None
    )
    if not isinstance(batch, int) or batch < 1:
        raise SourceError("no global_batch_size record in any run")
    return batch


def _submitter(first: dict[str, Any], system: dict[str, Any], build: Build) -> str:
    """The system description's submitter, as MLCommons' result summarizer puts it in the table; the log's
    submission_org only when the description names none. Logs are written by whoever wrote the training code
    (SMC's dlrm_dcnv2 logs say 'NVIDIA', Ailiverse's resnet 'MosaicML', others the template's 'SUBMISSION_ORG'),
    so a disagreement is said, not followed."""
    described = str(system.get("submitter") or "").strip()
    logged = str(first.get("submission_org") or "").strip()
    if described and logged and logged != described:
        build.warnings.append(
            f"the log's submission_org is {logged!r}; the submitter is the system description's {described!r}, "
            "as MLCommons' table has it"
        )
    if not (described or logged):
        raise SourceError("neither the system description nor submission_org names a submitter")
    return described or logged


def _origin(result: _Result, score: _Score, submitter: str, ledger: Ledger, build: Build) -> dict[str, Any]:
    quality = score.rules.quality
    origin: dict[str, Any] = {
        "kind": "mlperf-training",
        "round": result.round.round,
        "submitter": submitter,
        **_publication_facets(result.first, result.system, build),
        "system_id": result.system_id,
        "benchmark": result.benchmark,
        "files": ledger.digests(),
        "runs": [
            {
                "file": run.path.name,
                "seconds": run.seconds,
                "status": run.status,
                "used": used,
                "quality": verdict.reached.get(quality.headline) if verdict.reached else None,
            }
            for run, verdict, used in zip(result.runs, score.judged, score.used, strict=True)
        ],
        "targets": {name: {"min": b.low, "max": b.high} for name, b in quality.metrics.items()},
        "rules_source": result.round.source(score.rules)[:500],
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


def _metrics(result: _Result, score: _Score) -> dict[str, Any]:
    factor = result.round.scaling.when_missing if result.scaling is None else result.scaling
    return {
        "primary": "time_to_quality",
        "time_to_quality": {
            "seconds": score.mean * factor,
            "epochs": None,
            "runs": sum(score.used),
            "scaling_factor": factor,
            "unscaled_seconds": score.mean,
            "method": _method(result, score, factor),
        },
        "quality": _quality(score),
        **({"energy": _energy(result, score, factor)} if result.power is not None else {}),
    }


def _energy(result: _Result, score: _Score, factor: float) -> dict[str, Any]:
    """The result's energy as MLCommons' summarizer totals it: the mean of the averaged runs' energies (the runs
    the time's olympic mean kept), times the scaling factor. The average power is that energy over the published
    time to train, the window it covers."""
    power = result.power or []
    kept = [joules for joules, used in zip(power, score.used, strict=True) if used]
    if any(joules is None for joules in kept):
        raise SourceError("an averaged run has no energy from power/: no MLPerf energy for the result")
    joules = sum(j for j in kept if j is not None) / len(kept) * factor
    seconds = score.mean * factor
    rule = power_rule(result.round.round)
    return {
        "source": "external-meter",
        "joules": joules,
        "average_power_w": joules / seconds,
        "window_s": seconds,
        "scope": "the system's nodes (power/<run>/node_*.txt) and interconnect (sw_*.txt), as the submitter's "
        "meters read them",
        "method": (
            f"MLPerf Training Power as MLCommons' result summarizer totals it ({rule.source if rule else '?'}, "
            f"'{rule.integration if rule else '?'}' window): per run the power_reading values integrated over the "
            f"measurement window, stretched to the run's time to train; mean over the {len(kept)} runs the time's "
            f"olympic mean kept, times scaling factor {factor:g}"
        )[:500],
    }


def _method(result: _Result, score: _Score, factor: float) -> str:
    drop = score.rules.dropped_each_end
    scaled = (
        f"times scaling_factor {factor:g} of scaling.json (MLCommons' reference-convergence normalisation)"
        if result.scaling is not None
        else f"no scaling.json, so factor {factor:g}, as MLCommons' result summarizer does"
    )
    return (
        f"MLPerf Training score as published: olympic mean of run_start..run_stop over {len(result.runs)} runs, "
        f"{drop} fastest and {drop} slowest dropped (a run that never met the quality target counts as slowest), "
        f"{scaled}; quality is the median over the averaged runs of the first evaluation that met the target"
    )


def _quality(score: _Score) -> dict[str, Any]:
    """The quality the averaged runs reached: per metric the median of each run's first evaluation that met
    the target (MLPerf publishes no quality figure; the median is robust to one run that overshot)."""
    rule = score.rules.quality
    reached = [j.reached for j, used in zip(score.judged, score.used, strict=True) if used and j.reached]
    medians = {
        name: statistics.median(r[name] for r in reached) for name in rule.metrics if all(name in r for r in reached)
    }
    quality: dict[str, Any] = {
        "metric": rule.headline,
        "value": medians.get(rule.headline),
        "passed": bool(reached) and all(rule.met(r) for r in reached),
    }
    if len(rule.metrics) > 1:
        quality["values"] = medians
    return quality


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
    stamps = [r.first["run_start.time_ms"] for r in runs if isinstance(r.first.get("run_start.time_ms"), int)]
    if not stamps:
        return None
    return datetime.fromtimestamp(min(stamps) / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
