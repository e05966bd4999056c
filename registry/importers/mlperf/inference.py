"""Import a published MLPerf Inference submission tree as benchreg protocol documents.

Plain Python (no Django): `parse_tree` reads the tree and returns an `ImportPlan`; the caller submits each
`ImportItem.document` through the normal validation and storage path. The contract:

* one item per results/<system>/<benchmark>/<scenario>/ directory; its document passes `protocol.check`,
  or is None with the reasons in `errors` and a per-file report in `files`;
* every number in a document is a number of the source files (latencies converted ns -> ms by /1e6, memory
  sizes by a closed unit table), or a count stated in docs/mlperf-import.md; nothing is guessed: a value
  that cannot be parsed is kept verbatim in provenance.origin.unparsed and listed in `warnings`;
* documents hold no wall-clock time of the import and paths relative to the submission root, so parsing
  the same tree twice gives the same digests (the registry then stores nothing new).

The :::MLLOG lines of mlperf_log_detail.txt are authoritative (MLPerf's submission checker reads them);
mlperf_log_summary.txt is required and cross-checked against them to its printed precision.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from . import audit, endpoints, endpoints_files, inferred, power
from .documents import build_document, round_of
from .ledger import Ledger
from .logs import cross_check, read_accuracy, read_detail, read_json_object, read_summary, read_user_conf
from .plan import Build, FileReport, ImportItem, ImportPlan, SourceError
from .rules import LOADGEN_SCENARIO, SCENARIO_FOLDERS, RoundRules, RuleMissing, round_rules
from .tree import all_files, passed_over, real_dir, subfolders


def parse_tree(root: Path, *, round_name: str | None = None) -> ImportPlan:
    """Read an MLPerf Inference submission tree (or a folder holding several) into an ImportPlan.

    `round_name` ('v5.1' or '5.1') is the round; without it, a folder named like '..._v5.1' on the path, else
    LoadGen's major.minor version (flagged: LoadGen versions lag rounds).
    Raises FileNotFoundError when `root` is not a directory; everything else is reported in the plan.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    # The round: the argument, else a folder named like the results repository ('..._v5.1'), else LoadGen's
    # version, which lags the round (most v5.1 submissions ran LoadGen 5.0), so each run using it is flagged.
    hint = next((m[1] for part in reversed(root.resolve().parts) if (m := re.search(r"v(\d+\.\d+)$", part))), None)
    chosen = f"v{hint}" if round_name is None and hint else round_name
    submissions = _submission_roots(root)
    items = [item for submission in submissions for item in _submission_items(root, submission, chosen)]
    skipped = _unclaimed(root, items)
    round_value, round_source = _plan_round(items, chosen, from_folder=round_name is None and bool(hint))
    errors = [] if submissions else ["no results/ directory found: not an MLPerf Inference submission tree"]
    return ImportPlan(
        items=items,
        skipped=skipped,
        round=round_value,
        round_source=round_source,
        errors=errors + _round_errors(round_value),
        warnings=_round_warnings(hint, round_value, round_source),
    )


def _round_errors(round_value: str | None) -> list[str]:
    """An import whose round has no rules is refused (each item says so too), listing the rounds known."""
    try:
        if round_value:
            round_rules(round_value)
    except RuleMissing as exc:
        return [str(exc)]
    return []


def _submission_items(root: Path, submission: Path, round_name: str | None) -> list[ImportItem]:
    folders = _result_folders(submission)
    done: dict[Path, ImportItem] = {}
    # Measured folders first: a result MLPerf infers links to the document of the folder it is inferred from.
    for folder, scenario in sorted(
        folders, key=lambda f: inferred.READ_ORDER.get(f[1] or "", len(inferred.READ_ORDER))
    ):
        done[folder] = (
            _skipped_folder(root, folder)
            if scenario is None
            else _import_item(submission, root, folder, scenario, round_name, done)
        )
    return [done[folder] for folder, _scenario in folders]


def _unclaimed(root: Path, items: list[ImportItem]) -> list[FileReport]:
    """Every file of the tree that no item read or reported, and what was passed over (links, special files)."""
    claimed = {root / f.path for item in items for f in item.files}
    skipped = [_skipped_report(root, path) for path in all_files(root) if path not in claimed]
    return skipped + passed_over(root)


def _round_warnings(hint: str | None, round_value: str | None, round_source: str) -> list[str]:
    if hint and round_value and f"v{hint}" != round_value:
        return [f"the folder name suggests round v{hint}, but the round used is {round_value} ({round_source})"]
    return []


def _submission_roots(root: Path) -> list[Path]:
    """Folders holding results/ (a submitter's folder such as closed/AMD), outermost first."""
    if real_dir(root / "results"):
        return [root]
    found = sorted(p.parent for p in root.rglob("results") if real_dir(p))
    return [p for p in found if not any(q != p and q in p.parents for q in found)]


def _result_folders(submission: Path) -> list[tuple[Path, str | None]]:
    """Every results/<system>/<benchmark>/<folder>, with its scenario (None: not a scenario folder)."""
    results = submission / "results"
    return [
        (folder, SCENARIO_FOLDERS.get(folder.name.lower()))
        for system in subfolders(results)
        for benchmark in subfolders(system)
        for folder in subfolders(benchmark)
    ]


def _skipped_folder(tree: Path, folder: Path) -> ImportItem:
    files = [
        FileReport(p.relative_to(tree).as_posix(), None, "skipped", "not in a scenario folder")
        for p in all_files(folder)
    ]
    why = (
        f"'{folder.name}' is not an MLPerf scenario folder (SingleStream, MultiStream, Server, Offline, "
        "Interactive, in any case)"
    )
    return ImportItem(key="/".join(folder.parts[-3:]), document=None, files=files, errors=[], skipped=why)


def _skipped_report(root: Path, path: Path) -> FileReport:
    rel = path.relative_to(root).as_posix()
    parts = path.relative_to(root).parts
    if "systems" in parts and path.suffix == ".json":
        reason = "system description with no results in this tree"
    elif "results" in parts:
        reason = "inside results/ but not in a system/benchmark/scenario folder"
    elif "measurements" in parts or "compliance" in parts:
        reason = "beside a result the importer does not read this file"
    else:
        reason = "not part of an MLPerf result (systems/, results/, measurements/ and compliance/ are read)"
    return FileReport(rel, None, "skipped", reason)  # not read, so not hashed (accuracy logs run to 100s of MB)


def _beside(submission: Path, part: str, scenario_dir: Path) -> Path:
    """measurements/ or compliance/<system>/<benchmark>/<scenario>/: where published rounds keep files."""
    system_id, benchmark, folder = scenario_dir.parts[-3:]
    return submission / part / system_id / benchmark / folder


def _measurements_file(submission: Path, scenario_dir: Path, scenario: str) -> Path:
    """measurements.json in the result folder (v6 layout), else measurements/<...>/<system>_<scenario>.json
    (v3.1-v5.1 layout; MLPerf's checker matches the name in any case), else the one JSON file there."""
    inside = scenario_dir / "measurements.json"
    if inside.is_file():
        return inside
    beside = _beside(submission, "measurements", scenario_dir)
    candidates = sorted(beside.glob("*.json")) if beside.is_dir() else []
    wanted = f"{scenario_dir.parts[-3]}_{scenario}.json".lower()
    named = [p for p in candidates if p.name.lower() == wanted]
    if named:
        return named[0]
    # then, as the checker does, a JSON file whose name starts with the system's name
    prefixed = [p for p in candidates if p.name.lower().startswith(scenario_dir.parts[-3].lower())]
    if prefixed:
        return prefixed[0]
    suffixed = [p for p in candidates if p.name.lower().endswith(f"_{scenario.lower()}.json")]
    if len(suffixed) == 1:
        return suffixed[0]
    return candidates[0] if len(candidates) == 1 else inside


def _first_file(*paths: Path) -> Path:
    return next((p for p in paths if p.is_file()), paths[0])


def _import_item(
    submission: Path,
    tree: Path,
    scenario_dir: Path,
    scenario: str,
    round_name: str | None,
    done: dict[Path, ImportItem],
) -> ImportItem:
    if endpoints.is_endpoints_folder(scenario_dir):
        return _endpoints_item(submission, tree, scenario_dir, scenario, round_name)
    key = "/".join(scenario_dir.parts[-3:])
    ledger = Ledger(submission, tree)
    sources = {
        **_required_sources(ledger, submission, scenario_dir, scenario),
        **_optional_sources(ledger, submission, scenario_dir),
        "power": power.load(ledger, scenario_dir),
    }
    document, build = None, Build()
    rule = None if ledger.errors else inferred.rule_for(scenario, sources["detail"]["effective_scenario"])
    if rule is not None:
        return _inferred_item(key, tree, scenario_dir, ledger, sources, rule, round_name, done)
    if not ledger.errors:
        document = _document(ledger, sources, scenario_dir, scenario, round_name, build)
    if document is not None:
        power.attach(document, sources["power"], sources["detail"], build)
        build.warnings.extend(_layout_mismatches(submission, document))
    return _finished_item(key, tree, scenario_dir, ledger, ledger.checked(document), build)


def _endpoints_item(
    submission: Path, tree: Path, scenario_dir: Path, scenario: str, round_name: str | None
) -> ImportItem:
    """A result measured by MLCommons' endpoints client (endpoints.py): no LoadGen log; the endpoint's result
    summary, run configuration and accuracy scores instead, with the system description and measurements.json."""
    ledger = Ledger(submission, tree)
    sources = _endpoints_sources(ledger, submission, scenario_dir, scenario)
    build, document = Build(), None
    if not ledger.errors:
        document = _endpoints_document(ledger, sources, scenario_dir, scenario, round_name, build)
    if document is not None:
        build.warnings.extend(_layout_mismatches(submission, document))
    return _finished_item(
        "/".join(scenario_dir.parts[-3:]), tree, scenario_dir, ledger, ledger.checked(document), build
    )


def _endpoints_sources(ledger: Ledger, submission: Path, scenario_dir: Path, scenario: str) -> dict[str, Any]:
    """The endpoint's files, the system description and measurements.json, each read once through the ledger."""
    system_id = scenario_dir.parts[-3]
    measurements = _measurements_file(submission, scenario_dir, scenario)
    return {
        "system": ledger.load(
            submission / "systems" / f"{system_id}.json", read_json_object, what="system description", required=True
        ),
        "summary": ledger.load(
            scenario_dir / endpoints.SUMMARY,
            endpoints_files.read_summary,
            what="endpoints result summary",
            required=True,
        ),
        "config": ledger.load(
            endpoints.config_file(scenario_dir),
            endpoints_files.read_config,
            what="endpoints run configuration",
            required=True,
        ),
        "accuracy": ledger.load(
            scenario_dir / endpoints.ACCURACY,
            endpoints_files.read_accuracy,
            what="endpoints accuracy results",
            required=False,
        ),
        "measurements": ledger.load(
            measurements, read_json_object, what="measurements (implementation description)", required=True
        ),
        "model_mapping": _model_mapping(ledger, submission),
    }


def _endpoints_document(
    ledger: Ledger, sources: dict[str, Any], scenario_dir: Path, scenario: str, round_name: str | None, build: Build
) -> dict[str, Any] | None:
    """The endpoints result's document, or None with the blame on the file that cannot be mapped."""
    system_id, benchmark, _folder = scenario_dir.parts[-3:]
    where = {"system_id": system_id, "benchmark": benchmark, "scenario": scenario}
    try:
        return endpoints.build_document(sources, where, round_name, ledger.digests(), build)
    except SourceError as exc:
        if exc.where == "rules":  # the round's rules do not cover this result: no file is to blame
            ledger.errors.append(str(exc))
            return None
        blamed = {
            "config": endpoints.config_file(scenario_dir),
            "accuracy": scenario_dir / endpoints.ACCURACY,
            "system": ledger.submission / "systems" / f"{system_id}.json",
        }.get(exc.where, scenario_dir / endpoints.SUMMARY)
        ledger.fail(blamed, str(exc))
        return None


def _finished_item(
    key: str, tree: Path, scenario_dir: Path, ledger: Ledger, document: dict[str, Any] | None, build: Build
) -> ImportItem:
    files = list(ledger.reports.values()) + _unread(tree, scenario_dir, ledger.reports)
    return ImportItem(
        key=key,
        document=document,
        files=sorted(files, key=lambda f: f.path),
        errors=ledger.errors,
        warnings=ledger.warnings + build.warnings,
    )


def _required_sources(ledger: Ledger, submission: Path, scenario_dir: Path, scenario: str) -> dict[str, Any]:
    system_id = scenario_dir.parts[-3]
    perf = scenario_dir / "performance" / "run_1"
    measurements = _measurements_file(submission, scenario_dir, scenario)
    beside = _beside(submission, "measurements", scenario_dir)
    return {
        "system": ledger.load(
            submission / "systems" / f"{system_id}.json", read_json_object, what="system description", required=True
        ),
        "summary": ledger.load(perf / "mlperf_log_summary.txt", read_summary, what="LoadGen summary", required=True),
        "detail": ledger.load(perf / "mlperf_log_detail.txt", read_detail, what="LoadGen detail log", required=True),
        "measurements": ledger.load(
            measurements,
            read_json_object,
            what="measurements (implementation "
            f"description; also looked for in {beside.relative_to(ledger.tree).as_posix()}/)",
            required=True,
        ),
    }


def _optional_sources(ledger: Ledger, submission: Path, scenario_dir: Path) -> dict[str, Any]:
    compliance = _beside(submission, "compliance", scenario_dir)
    user_conf = ledger.load(
        _first_file(scenario_dir / "user.conf", _beside(submission, "measurements", scenario_dir) / "user.conf"),
        read_user_conf,
        what="LoadGen user.conf",
        required=False,
    )
    for number, text in (user_conf or {}).get("unread", []):
        ledger.warnings.append(f"user.conf line {number} is not 'key = value' ({text!r}): not read")
    return {
        "model_mapping": _model_mapping(ledger, submission),
        "accuracy": ledger.load(
            scenario_dir / "accuracy" / "accuracy.txt", read_accuracy, what="accuracy result", required=False
        ),
        "audit": audit.load(ledger, scenario_dir, compliance),
        "user_conf": user_conf,
    }


def _model_mapping(ledger: Ledger, submission: Path) -> dict[str, str] | None:
    """model_mapping.json at the submitter's root: the open division's benchmark names -> MLPerf models, read
    as MLPerf's checker reads it (a JSON object of strings)."""
    mapping = ledger.load(
        submission / "model_mapping.json",
        read_json_object,
        what="open-division model mapping",
        required=False,
        quiet=True,
    )
    if mapping is None:
        return None
    bad = sorted(k for k, v in mapping.items() if not isinstance(v, str))
    if bad:
        ledger.fail(submission / "model_mapping.json", f"maps {', '.join(bad)[:200]} to something not a model name")
        return None
    return {str(k): str(v) for k, v in mapping.items()}


def _document(
    ledger: Ledger, sources: dict[str, Any], scenario_dir: Path, scenario: str, round_name: str | None, build: Build
) -> dict[str, Any] | None:
    """The result's document, or None with the blame on the file that read cleanly but cannot be mapped."""
    system_id, benchmark, _folder = scenario_dir.parts[-3:]
    perf = scenario_dir / "performance" / "run_1"
    try:
        cross_check(sources["summary"], sources["detail"], LOADGEN_SCENARIO.get(scenario, scenario))
        return build_document(sources, system_id, benchmark, scenario, round_name, ledger.digests(), build)
    except SourceError as exc:
        if exc.where == "rules":  # the round's rules do not cover this result: no file is to blame
            ledger.errors.append(str(exc))
            return None
        blamed = {
            "summary": perf / "mlperf_log_summary.txt",
            "system": ledger.submission / "systems" / f"{system_id}.json",
        }.get(exc.where, perf / "mlperf_log_detail.txt")
        ledger.fail(blamed, str(exc))
        return None


def _inferred_item(
    key: str,
    tree: Path,
    scenario_dir: Path,
    ledger: Ledger,
    sources: dict[str, Any],
    rule: inferred.Rule,
    round_name: str | None,
    done: dict[Path, ImportItem],
) -> ImportItem:
    """A result MLPerf infers from another scenario's run (inferred.py): a document labelled derived and linked to
    the measured folder's document; skipped, saying why, when that folder is absent or was refused."""
    measured_dir = next(
        (p for p in subfolders(scenario_dir.parent) if p.name.lower() == rule.from_scenario.lower()), None
    )
    measured = done.get(measured_dir) if measured_dir else None
    if measured is not None and measured.document is None:
        return _unlinked_item(key, tree, scenario_dir, ledger, rule, "was refused")
    detail = scenario_dir / "performance" / "run_1" / "mlperf_log_detail.txt"
    if measured is None:
        # MLPerf infers from this folder's own copy of the measured log, so the published figure can be read here;
        # the run it derives from is named by its folder, not linked (trimmed copies of a round often lack it).
        ledger.warnings.append(
            f"the measured {rule.from_scenario} folder is not in this tree: the inferred result is read from this "
            "folder's copy of its log and names that folder without a link to its run"
        )
    problem = inferred.edge_problem(sources["system"], rule, _rules_of(round_name, sources["detail"])) or (
        _not_same_log(ledger, detail, measured) if measured is not None else None
    )
    build, document = Build(), None
    if problem:
        ledger.fail(detail, problem)
    else:
        document = _document(ledger, sources, scenario_dir, rule.from_scenario, round_name, build)
    if document is not None:
        power.attach(document, sources["power"], sources["detail"], build)
        where = (measured_dir or scenario_dir.parent / rule.from_scenario).relative_to(tree).as_posix()
        try:
            document = inferred.derive(
                document,
                sources["detail"],
                rule,
                from_location=where,
                from_document=measured.document if measured is not None else None,
            )
        except SourceError as exc:
            ledger.fail(detail, str(exc))
            document = None
    return _finished_item(key, tree, scenario_dir, ledger, ledger.checked(document), build)


def _rules_of(round_name: str | None, detail: dict[str, Any]) -> RoundRules | None:
    """The round's rules where they are known (the document build names a missing round or rule itself)."""
    try:
        return round_rules(round_of(round_name, detail))
    except SourceError:
        return None


def _not_same_log(ledger: Ledger, detail: Path, measured: ImportItem) -> str | None:
    """MLPerf infers from the log in the inferred folder, a copy of the measured folder's: a different log would be
    linked to a run it is not (none of Inference v5.1's 537 inferred folders has one)."""
    here = ledger.reports[detail].sha256
    theirs = {f.sha256 for f in measured.files if f.path.endswith("performance/run_1/mlperf_log_detail.txt")}
    if here in theirs:
        return None
    return (
        f"this log is not the {measured.key} folder's: MLPerf infers this result from this folder's log, which no "
        "measured run of the tree holds, so it cannot be linked to the run it derives from"
    )


def _unlinked_item(
    key: str, tree: Path, scenario_dir: Path, ledger: Ledger, rule: inferred.Rule, state: str
) -> ImportItem:
    why = (
        f"LoadGen ran {rule.from_scenario} here: MLPerf infers the {rule.scenario} result from that run, and this "
        f"system's measured {rule.from_scenario} folder {state}, so the inferred result has no run to link to"
    )
    files = [FileReport(f.path, f.sha256, "skipped", why) for f in ledger.reports.values()]
    files += _unread(tree, scenario_dir, ledger.reports)
    return ImportItem(
        key=key,
        document=None,
        files=sorted(files, key=lambda f: f.path),
        errors=[],
        warnings=ledger.warnings,
        skipped=why,
    )


def _layout_mismatches(submission: Path, document: dict[str, Any]) -> list[str]:
    """The closed/<submitter>/ layout, where present, must agree with the system description."""
    if submission.parent.name not in ("closed", "open", "network"):
        return []
    origin = document["provenance"]["origin"]
    return [
        f"the path says {name} {expected!r}, the system description {origin[name]!r}: the description is used"
        for name, expected in (("division", submission.parent.name), ("submitter", submission.name))
        if origin[name] != expected
    ]


def _unread(tree: Path, scenario_dir: Path, reports: dict[Path, FileReport]) -> list[FileReport]:
    return [
        FileReport(p.relative_to(tree).as_posix(), None, "skipped", "not read by the importer")
        for p in all_files(scenario_dir)
        if p not in reports
    ]


def _plan_round(items: list[ImportItem], round_name: str | None, *, from_folder: bool) -> tuple[str | None, str]:
    if round_name:
        return round_of(round_name, {}), "folder name" if from_folder else "argument"
    found = {item.document["provenance"]["origin"]["round"] for item in items if item.document}
    if len(found) == 1:
        return found.pop(), "loadgen_version major.minor in mlperf_log_detail.txt (may lag the round)"
    return None, "mixed rounds: see each item" if found else "undetermined (no item imported)"
