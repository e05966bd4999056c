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

import ast
import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import protocol
from protocol import rules

from . import units

# MLPerf scenario directory -> protocol scenario kind. LoadGen runs Interactive as Server with tighter SLOs.
SCENARIOS = {
    "SingleStream": "single-stream",
    "MultiStream": "multi-stream",
    "Server": "server",
    "Offline": "offline",
    "Interactive": "interactive",
}
# MLPerf's submission checker accepts scenario folders in any case ("offline", "singlestream").
SCENARIO_FOLDERS = {name.lower(): name for name in SCENARIOS}
LOADGEN_SCENARIO = {"Interactive": "Server"}
# Arrival process of each scenario as MLPerf's inference rules define it (not a measured value).
ARRIVAL = {
    "SingleStream": "closed-loop",
    "MultiStream": "closed-loop",
    "Server": "poisson",
    "Interactive": "poisson",
    "Offline": None,
}
PERCENTILES = {"50.00": "p50", "90.00": "p90", "95.00": "p95", "97.00": "p97", "99.00": "p99", "99.90": "p999"}

# Precision words in measurements.json -> protocol formats. Plain "fp8" stays "fp8": the files do not say
# which variant (e4m3 or e5m2, OCP or FNUZ encoding), and guessing one would change what is compared.
FORMATS = {
    "fp64": "fp64",
    "fp32": "fp32",
    "tf32": "tf32",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "fp8": "fp8",
    "fp8-e4m3": "fp8-e4m3",
    "fp8_e4m3": "fp8-e4m3",
    "e4m3": "fp8-e4m3",
    "fp8-e5m2": "fp8-e5m2",
    "fp8_e5m2": "fp8-e5m2",
    "e5m2": "fp8-e5m2",
    "int32": "int32",
    "int8": "int8",
    "int4": "int4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "mxfp8": "mxfp8",
}
QUANTIZED = frozenset({"fp8", "fp8-e4m3", "fp8-e5m2", "int8", "int4", "nvfp4", "mxfp4", "mxfp8"})
UNSPECIFIED = "unspecified"  # schema sentinel: the source does not state one format of the closed list


@dataclass(frozen=True)
class Accuracy:
    """How MLPerf judges a model's accuracy: metrics in the order its checker lists them (the first is the
    headline), each with its published reference and pass bounds.

    `checks` maps a value name of accuracy.txt to (reference, lower bound, upper bound); a bound is None
    where the checker has none. Bounds are the checker's own products (reference × 0.99, × 0.9, ...), so
    `passed` is exactly MLPerf's verdict on the printed values.
    """

    checks: dict[str, tuple[float | None, float | None, float | None]]
    reference_precision: str = "fp32"


# From MLPerf's submission checker (mlcommons/inference tools/submission/submission_checker/constants.py,
# MODEL_CONFIG["v5.1"]["accuracy-target"] and ["accuracy-upper-limit"]; v4.x used the same references for
# the benchmarks it had). Keys are accuracy.txt's value names. The -99 / -99.9 suffix sets the ratio of the
# reference a value must reach; the other bounds (tokens per sample ±10%, SDXL's CLIP/FID window) are fixed.
def _llm(ratio: float, refs: dict[str, float], **fixed: tuple[float | None, float | None]) -> Accuracy:
    checks: dict[str, tuple[float | None, float | None, float | None]] = {
        name: (ref, ref * ratio, None) for name, ref in refs.items()
    }
    for name, (low, high) in fixed.items():
        checks[name] = (None, low, high)
    return Accuracy(checks)


def accuracy_rule(model: str, ratio: float) -> Accuracy | None:
    """MLPerf's accuracy rule for a model at a target ratio (0.99 or 0.999), None when not known."""
    rules_by_model: dict[str, Accuracy] = {
        "resnet": _llm(ratio, {"accuracy": 76.46}),
        "retinanet": _llm(ratio, {"mAP": 37.55}),
        "bert": _llm(ratio, {"f1": 90.874}),
        "dlrm-v2": _llm(ratio, {"AUC": 80.31}),
        "3d-unet": _llm(ratio, {"DICE": 0.86170}),
        "rgat": _llm(ratio, {"accuracy": 72.86}),
        "whisper": _llm(ratio, {"accuracy": 97.9329}),
        "gptj": _llm(ratio, {"rouge1": 42.9865, "rouge2": 20.1235, "rougeL": 29.9881}, gen_len=(4016878 * 0.9, None)),
        "llama2-70b": _llm(
            ratio,
            {"rouge1": 44.4312, "rouge2": 22.0352, "rougeL": 28.6162},
            tokens_per_sample=(294.45 * 0.9, 294.45 * 1.1),
        ),
        "mixtral-8x7b": _llm(
            ratio,
            {"rouge1": 45.5989, "rouge2": 23.3526, "rougeL": 30.4608, "gsm8k": 73.66, "mbxp": 60.16},
            tokens_per_sample=(144.84 * 0.9, 145.9 * 1.1),
        ),
        "llama3.1-405b": _llm(
            ratio, {"rougeL": 21.6666, "exact_match": 90.1335}, tokens_per_sample=(684.68 * 0.9, 684.68 * 1.1)
        ),
        "llama3.1-8b": _llm(
            ratio,
            {"rouge1": 38.7792, "rouge2": 15.9075, "rougeL": 24.4957, "rougeLsum": 35.793},
            gen_len=(8167644 * 0.9, 8167644 * 1.1),
        ),
        "deepseek-r1": _llm(ratio, {"exact_match": 81.3582}, tokens_per_sample=(3886.2274 * 0.9, 3886.2274 * 1.1)),
        # SDXL has no ratio: both scores must fall in a fixed window around the reference.
        "stable-diffusion-xl": Accuracy(
            {"CLIP_SCORE": (None, 31.68631873, 31.81331801), "FID_SCORE": (None, 23.01085758, 23.95007626)}
        ),
    }
    return rules_by_model.get(model)


@dataclass(frozen=True)
class FileReport:
    """What became of one file: 'used' (read into a document), 'skipped' (not read) or 'error'."""

    path: str
    sha256: str | None
    status: str
    reason: str


@dataclass(frozen=True)
class ImportItem:
    """One system × benchmark × scenario. `document` passes protocol.check, or is None when `errors`."""

    key: str
    document: dict[str, Any] | None
    files: list[FileReport]
    errors: list[str]
    warnings: list[str] = field(default_factory=list)
    skipped: str | None = None  # a result folder deliberately not imported, and why

    @property
    def status(self) -> str:
        return "ready" if self.document else "skipped" if self.skipped else "refused"


@dataclass(frozen=True)
class ImportPlan:
    """Everything found under a tree: the items, the files no item used, and how the round was decided."""

    items: list[ImportItem]
    skipped: list[FileReport]
    round: str | None
    round_source: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _Ledger:
    """Reads the files of one item once each, hashing them and recording what became of each."""

    def __init__(self, submission: Path, tree: Path) -> None:
        self.submission, self.tree = submission, tree
        self.reports: dict[Path, FileReport] = {}
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def load(
        self, path: Path, reader: Any, *, what: str, required: bool, quiet: bool = False, lenient: bool = False
    ) -> Any:
        rel = _shown(path.relative_to(self.tree).as_posix())
        if not path.is_file():
            if required:
                self.reports[path] = FileReport(rel, None, "error", f"missing: {what} is required")
                self.errors.append(f"{rel}: missing ({what} is required)")
            elif not quiet:
                self.warnings.append(f"{rel}: absent ({what}); imported without it")
            return None
        if not inside(path, self.tree):
            self.reports[path] = FileReport(rel, None, "error", "a link that leads out of the tree: not read")
            self.errors.append(f"{rel}: a link that leads out of the tree ({what} is not read through it)")
            return None
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.reports[path] = FileReport(rel, None, "error", f"cannot be read: {exc.strerror or exc}")
            self.errors.append(f"{rel}: cannot be read ({exc.strerror or exc})")
            return None
        self.reports[path] = FileReport(rel, hashlib.sha256(data).hexdigest(), "used", f"read as {what}")
        try:
            if lenient:  # only some lines are records: bytes elsewhere (console noise) are not read
                text = data.decode("utf-8", errors="replace")
                if "\ufffd" in text:
                    self.warnings.append(f"{rel}: bytes that are not UTF-8 outside the records were not read")
                return reader(text)
            return reader(data.decode("utf-8"))
        except UnicodeDecodeError:
            self.fail(path, "not UTF-8 text")
        except SourceError as exc:
            self.fail(path, str(exc))
        return None

    def fail(self, path: Path, reason: str) -> None:
        old = self.reports[path]
        self.reports[path] = FileReport(old.path, old.sha256, "error", reason)
        self.errors.append(f"{old.path}: {reason}")

    def digests(self) -> dict[str, str]:
        """'sha256:<hex>' of every file used, keyed by its path relative to the submission root."""
        return {
            p.relative_to(self.submission).as_posix(): f"sha256:{r.sha256}"
            for p, r in sorted(self.reports.items())
            if r.status == "used" and r.sha256
        }


@dataclass
class _Build:
    """What one document collects besides its typed fields: text kept verbatim, and flags raised."""

    unparsed: dict[str, str] = field(default_factory=dict)
    system_notes: dict[str, str] = field(default_factory=dict)
    software_notes: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    targets: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def flag(self, key: str, raw: str, why: str) -> None:
        self.unparsed[key] = raw[:2000]
        self.warnings.append(f"{key} = {raw[:80]!r} kept as text: {why}")


def parse_tree(root: Path, *, round_name: str | None = None) -> ImportPlan:
    """Read an MLPerf Inference submission tree (or a folder holding several) into an ImportPlan.

    `round_name` ('v5.1' or '5.1') is the round; without it, a folder named like '..._v5.1' on the path, else
    LoadGen's major.minor version (flagged: LoadGen versions lag rounds).
    Raises FileNotFoundError when `root` is not a directory; everything else is reported in the plan.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    items: list[ImportItem] = []
    plan_errors: list[str] = []
    # The round: the argument, else a folder named like the results repository ('..._v5.1'), else LoadGen's
    # version, which lags the round (most v5.1 submissions ran LoadGen 5.0), so each run using it is flagged.
    hint = next((m[1] for part in reversed(root.resolve().parts) if (m := re.search(r"v(\d+\.\d+)$", part))), None)
    given = round_name
    if round_name is None and hint:
        round_name = f"v{hint}"
    submissions = _submission_roots(root)
    if not submissions:
        plan_errors.append("no results/ directory found: not an MLPerf Inference submission tree")
    for submission in submissions:
        for folder, scenario in _result_folders(submission):
            if scenario is None:
                items.append(_skipped_folder(root, folder))
            else:
                items.append(_import_item(submission, root, folder, scenario, round_name))
    claimed = {root / f.path for item in items for f in item.files}
    skipped = [_skipped_report(root, path) for path in all_files(root) if path not in claimed]
    skipped += passed_over(root)
    round_value, round_source = _plan_round(items, round_name)
    if given is None and hint:
        round_source = "folder name"
    warnings = []
    if hint and round_value and f"v{hint}" != round_value:
        warnings.append(f"the folder name suggests round v{hint}, but the round used is {round_value} ({round_source})")
    return ImportPlan(
        items=items,
        skipped=skipped,
        round=round_value,
        round_source=round_source,
        errors=plan_errors,
        warnings=warnings,
    )


def _submission_roots(root: Path) -> list[Path]:
    """Folders holding results/ (a submitter's folder such as closed/AMD), outermost first."""
    if _real_dir(root / "results"):
        return [root]
    found = sorted(p.parent for p in root.rglob("results") if _real_dir(p))
    return [p for p in found if not any(q != p and q in p.parents for q in found)]


def _result_folders(submission: Path) -> list[tuple[Path, str | None]]:
    """Every results/<system>/<benchmark>/<folder>, with its scenario (None: not a scenario folder)."""
    results = submission / "results"
    return [
        (folder, SCENARIO_FOLDERS.get(folder.name.lower()))
        for system in _subfolders(results)
        for benchmark in _subfolders(system)
        for folder in _subfolders(benchmark)
    ]


def _real_dir(path: Path) -> bool:
    """A folder, not a link to one, with a UTF-8 name: what the importer walks into."""
    return path.is_dir() and not path.is_symlink() and _utf8(path.name)


def _subfolders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if _real_dir(p))


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.fsdecode keeps bytes that are not UTF-8 as lone surrogates
        return False
    return True


def _shown(rel: str) -> str:
    """A path as reports print it: bytes that are not UTF-8 escaped (\\xe9), never a lone surrogate."""
    return rel if _utf8(rel) else os.fsencode(rel).decode("utf-8", "backslashreplace")


def inside(path: Path, tree: Path) -> bool:
    """True when `path`, every link on it resolved, stays inside `tree` (False for a dangling or looping link)."""
    try:
        return path.resolve(strict=True).is_relative_to(tree.resolve())
    except (OSError, RuntimeError):
        return False


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


def all_files(root: Path) -> list[Path]:
    """Every file under `root`, sorted: one walk of the tree. Links to folders are not followed (a link to '.'
    would loop, one to '/' would leave the tree); a link to a file counts when it stays inside `root`. Names that
    are not UTF-8 are left out: `passed_over` lists what was left out, and why."""
    return sorted(p for p in _walk(root) if _utf8(str(p)) and p.is_file() and inside(p, root))


def _walk(root: Path) -> list[Path]:
    return [Path(folder) / name for folder, _dirs, names in os.walk(root) for name in names]


def passed_over(root: Path) -> list[FileReport]:
    """What `all_files` and the folder walk leave out: links to folders or out of the tree, and names that are
    not UTF-8 (printed with their bytes escaped)."""
    out = []
    for folder, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(folder) / name
            rel = _shown(path.relative_to(root).as_posix())
            if not _utf8(name):
                out.append(FileReport(rel, None, "skipped", "the name is not UTF-8: not read"))
            elif path.is_symlink() and (path.is_dir() or not inside(path, root)):
                out.append(FileReport(rel, None, "skipped", "a link to a folder or out of the tree: not followed"))
    return sorted(out, key=lambda f: f.path)


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


def _import_item(submission: Path, tree: Path, scenario_dir: Path, scenario: str, round_name: str | None) -> ImportItem:
    system_id, benchmark, _folder = scenario_dir.parts[-3:]
    key = "/".join(scenario_dir.parts[-3:])
    ledger = _Ledger(submission, tree)
    perf = scenario_dir / "performance" / "run_1"
    measurements = _measurements_file(submission, scenario_dir, scenario)
    beside = _beside(submission, "measurements", scenario_dir)
    compliance = _beside(submission, "compliance", scenario_dir)
    sources = {
        "system": ledger.load(
            submission / "systems" / f"{system_id}.json", read_json_object, what="system description", required=True
        ),
        "summary": ledger.load(perf / "mlperf_log_summary.txt", read_summary, what="LoadGen summary", required=True),
        "detail": ledger.load(perf / "mlperf_log_detail.txt", read_detail, what="LoadGen detail log", required=True),
        "measurements": ledger.load(
            measurements,
            read_json_object,
            what="measurements (implementation "
            f"description; also looked for in {beside.relative_to(tree).as_posix()}/)",
            required=True,
        ),
        "accuracy": ledger.load(
            scenario_dir / "accuracy" / "accuracy.txt", read_accuracy, what="accuracy result", required=False
        ),
        "test06": ledger.load(
            _first_file(scenario_dir / "TEST06" / "verify_accuracy.txt", compliance / "TEST06" / "verify_accuracy.txt"),
            read_test06,
            what="TEST06 compliance result",
            required=False,
            quiet=True,
        ),
        "user_conf": ledger.load(
            _first_file(scenario_dir / "user.conf", beside / "user.conf"),
            read_user_conf,
            what="LoadGen user.conf",
            required=False,
        ),
    }
    document, build = None, _Build()
    detail = sources["detail"]
    if not ledger.errors and detail["effective_scenario"] == "SingleStream" and scenario in INFERRED:
        return _inferred_item(key, tree, scenario_dir, ledger, scenario)
    if not ledger.errors:
        try:
            cross_check(sources["summary"], sources["detail"], LOADGEN_SCENARIO.get(scenario, scenario))
            document = _document(sources, system_id, benchmark, scenario, round_name, ledger.digests(), build)
        except SourceError as exc:  # a file that read cleanly but cannot be mapped: blame that file
            blamed = {
                "summary": perf / "mlperf_log_summary.txt",
                "system": submission / "systems" / f"{system_id}.json",
            }.get(exc.where, perf / "mlperf_log_detail.txt")
            ledger.fail(blamed, str(exc))
    if document is not None:
        build.warnings.extend(_layout_mismatches(submission, document))
        problems = [f"protocol {e.pointer or '/'}: {e.message} [{e.code}]" for e in protocol.errors(document)]
        problems += unstorable(document)
        if problems:
            ledger.errors.extend(problems)
            document = None
    files = list(ledger.reports.values()) + _unread(tree, scenario_dir, ledger.reports)
    return ImportItem(
        key=key,
        document=document,
        files=sorted(files, key=lambda f: f.path),
        errors=ledger.errors,
        warnings=ledger.warnings + build.warnings,
    )


# MLPerf lets an edge submission derive Offline and MultiStream from a SingleStream run (the submission
# checker's inferred results: Offline = 1/latency, MultiStream = 8 × latency). Those folders hold the
# SingleStream log: the importer stores measured runs only, so it imports the SingleStream folder and skips these.
INFERRED = frozenset({"Offline", "MultiStream"})


def _inferred_item(key: str, tree: Path, scenario_dir: Path, ledger: _Ledger, scenario: str) -> ImportItem:
    why = (
        f"LoadGen ran SingleStream here: MLPerf infers the {scenario} result from it rather than measuring "
        "it; only measured runs are imported (see this system's SingleStream folder)"
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


def _document(
    src: dict[str, Any],
    system_id: str,
    benchmark: str,
    scenario: str,
    round_name: str | None,
    files: dict[str, str],
    build: _Build,
) -> dict[str, Any]:
    detail = src["detail"]
    round_value = _round(round_name, detail)
    _round_from_loadgen(round_value, round_name, detail, build)
    count = _sample_count(detail)
    return {
        "protocol": f"{rules.PROTOCOL_NAME}/{rules.PROTOCOL_VERSION}",
        "phase": "inference",
        "workload": _workload(benchmark, round_value, detail, scenario),
        "scenario": _scenario(scenario, detail),
        "precision": _precision(src["measurements"], build),
        "system": system_section(src["system"], build),
        "software": software_section(src["system"], src["measurements"], _settings(detail, src["user_conf"]), build),
        "conditions": _conditions(detail, src["test06"], count, build),
        "metrics": _metrics(detail, scenario, benchmark, count, src["accuracy"], build),
        "provenance": _provenance(src, system_id, benchmark, scenario, round_value, files, build),
    }


def _round(round_name: str | None, detail: dict[str, Any]) -> str:
    """'v<major>.<minor>' from the argument, else from LoadGen's version (LoadGen 5.1.x is round v5.1)."""
    if round_name:
        return round_name if round_name.startswith("v") else f"v{round_name}"
    match = re.match(r"^(\d+)\.(\d+)", str(detail["loadgen_version"]))
    if not match:
        raise SourceError(
            f"loadgen_version {detail['loadgen_version']!r} has no major.minor: pass the round", where="detail"
        )
    return f"v{match[1]}.{match[2]}"


def _round_from_loadgen(round_value: str, round_name: str | None, detail: dict[str, Any], build: _Build) -> None:
    if not round_name:
        build.warnings.append(
            f"round {round_value} taken from loadgen_version {detail['loadgen_version']!r}: "
            "LoadGen versions can lag the round (pass --round, or keep the repository's "
            "folder name such as inference_results_v5.1)"
        )


def _plan_round(items: list[ImportItem], round_name: str | None) -> tuple[str | None, str]:
    if round_name:
        return _round(round_name, {}), "argument"
    found = {item.document["provenance"]["origin"]["round"] for item in items if item.document}
    if len(found) == 1:
        return found.pop(), "loadgen_version major.minor in mlperf_log_detail.txt (may lag the round)"
    return None, "mixed rounds: see each item" if found else "undetermined (no item imported)"


def _sample_count(detail: dict[str, Any]) -> int:
    """Number of timed samples: queries × samples per query as LoadGen generated them."""
    queries, per_query = detail.get("result_query_count"), detail.get("generated_samples_per_query", 1)
    if not isinstance(queries, int) or not isinstance(per_query, int) or queries < 1:
        raise SourceError("result_query_count / generated_samples_per_query are not positive integers", where="detail")
    return queries * per_query


def _workload(benchmark: str, round_value: str, detail: dict[str, Any], scenario: str) -> dict[str, Any]:
    # MLPerf fixes no batch size: the SUT batches as it likes. batch_size counts the samples in the unit
    # LoadGen times (one sample; one query of 8 in MultiStream) and `batching` says the SUT chose the rest.
    per_query = detail.get("generated_samples_per_query", 1)
    workload: dict[str, Any] = {
        "name": benchmark,
        "version": f"mlperf-inference-{round_value}",
        "shape": {"batch_size": per_query if scenario == "MultiStream" else 1, "batching": "sut-chosen"},
    }
    total = detail.get("qsl_reported_total_count")
    if isinstance(total, int):
        workload["dataset"] = {"samples": total}
    return workload


def _ms(value: Any) -> float:
    """Nanoseconds -> milliseconds, correctly rounded once (int / 1e6 is exact IEEE division)."""
    if isinstance(value, Decimal):
        return float(value / Decimal(1_000_000))
    return float(value) / 1e6  # exact: LoadGen's ns counts are far below 2**53


def _number(value: Any) -> float | int:
    return float(value) if isinstance(value, Decimal) else value


def _scenario(scenario: str, detail: dict[str, Any]) -> dict[str, Any]:
    # target_qps is left out on purpose: in MLPerf it is the submitter's tuning knob (and /scenario is a
    # controlled field), so it goes to software.settings as loadgen.target_qps.
    out: dict[str, Any] = {"kind": SCENARIOS[scenario], "arrival": ARRIVAL[scenario]}
    slo: dict[str, float] = {}
    if scenario in ("Server", "Interactive") and detail.get("effective_target_latency_percentile") == Decimal("0.99"):
        for key, name in (("requested_server_ttft_latency", "ttft_p99"), ("requested_server_tpot_latency", "tpot_p99")):
            if isinstance(detail.get(key), int) and detail[key] > 0:
                slo[name] = _ms(detail[key])
        target = detail.get("effective_target_latency_ns")
        if isinstance(target, int) and target > 0:
            slo["latency_p99"] = _ms(target)
    if slo:
        out["latency_slo_ms"] = slo
    return out


def _precision(measurements: dict[str, Any], build: _Build) -> dict[str, Any]:
    raw_weights = str(measurements.get("weight_data_types", "")).strip()
    weights = FORMATS.get(raw_weights.lower())
    if weights is None:
        weights = UNSPECIFIED
        build.flag("measurements.weight_data_types", raw_weights, "not one format of the protocol's list")
    # MLPerf does not report activation precision; input_data_types is the type of the model's inputs.
    precision: dict[str, Any] = {"weights": weights, "activations": UNSPECIFIED}
    raw_inputs = str(measurements.get("input_data_types", "")).strip()
    if FORMATS.get(raw_inputs.lower()):
        precision["inputs"] = FORMATS[raw_inputs.lower()]
    elif not units.not_stated(raw_inputs):
        build.flag("measurements.input_data_types", raw_inputs, "not one format of the protocol's list")
    transformations = str(measurements.get("weight_transformations", "")).strip()
    if weights in QUANTIZED or weights == UNSPECIFIED or "quant" in transformations.lower():
        note = f"measurements.json weight_data_types {raw_weights!r}"
        if weights == "fp8":
            note += "; the fp8 variant (e4m3 or e5m2, OCP or FNUZ encoding) is not stated"
        precision["quantization"] = {"method": transformations or None, "notes": note}
    return precision


def _settings(detail: dict[str, Any], user_conf: dict[str, str] | None) -> dict[str, Any]:
    """LoadGen's effective settings (the detail log) and the submitter's user.conf, as switches."""
    settings: dict[str, Any] = {}
    for key, value in detail.items():
        if key.startswith("effective_") or key == "generated_samples_per_query":
            name = "loadgen." + key.removeprefix("effective_")
            if isinstance(value, bool | str):
                settings[name] = value
            elif isinstance(value, int):  # the RNG seeds exceed 2**53: kept exact as text
                settings[name] = value if abs(value) <= 2**53 else str(value)
            elif isinstance(value, Decimal):
                settings[name] = float(value)
    for key, text in (user_conf or {}).items():
        settings[f"user.conf:{key}"] = _conf_value(text)
    return settings


def _conf_value(text: str) -> Any:
    if re.fullmatch(r"-?\d+", text) and abs(int(text)) <= 2**53:
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    return text


def _conditions(detail: dict[str, Any], test06: dict[str, str] | None, count: int, build: _Build) -> dict[str, Any]:
    met = detail.get("early_stopping_met")
    steady: dict[str, Any] = {"method": "loadgen-early-stopping", "reached": met if isinstance(met, bool) else None}
    if met is False:
        steady["reasons"] = ["LoadGen's early-stopping criterion was not met (early_stopping_met = false)"]
    # LoadGen logs no warm-up and not the length of the timed window (min_duration is a lower bound).
    return {
        "warmup": None,
        "window": {"seconds": None, "iterations": count, "repetitions": 1},
        "steady_state": steady,
        "validity": _validity(detail, test06, build),
    }


VALIDITY_KEYS = {
    "result_perf_constraints_met": "performance_constraints_satisfied",
    "result_min_duration_met": "min_duration_satisfied",
    "result_min_queries_met": "min_queries_satisfied",
    "early_stopping_met": "early_stopping_satisfied",
}
TEST06_CHECKS = {
    "First token check pass": "test06_first_token",
    "EOS check pass": "test06_eos",
    "Sample length check pass": "test06_sample_length",
}


def _validity(detail: dict[str, Any], test06: dict[str, str] | None, build: _Build) -> dict[str, Any]:
    checks = {name: detail[key] for key, name in VALIDITY_KEYS.items() if isinstance(detail.get(key), bool)}
    for key, name in (
        ("early_stopping_ttft_result", "ttft_early_stopping"),
        ("early_stopping_tpot_result", "tpot_early_stopping"),
    ):
        text = str(detail.get(key, "")).strip()
        if text == "* Run successful.":
            checks[name] = True
        elif text:
            build.flag(f"detail.{key}", text, "LoadGen's early-stopping text is not the known success line")
    if isinstance(detail.get("num_errors"), int):
        checks["loadgen_no_errors"] = detail["num_errors"] == 0
    for label, raw in (test06 or {}).items():
        if raw in ("True", "False"):
            checks[TEST06_CHECKS[label]] = raw == "True"
        else:  # "Skipped" (no first token in Offline) is not a pass or a fail
            build.unparsed[f"TEST06.{TEST06_CHECKS[label]}"] = raw
    return {"valid": detail["result_validity"] == "VALID", "checks": checks}


def _rate(detail: dict[str, Any], key: str, unit: str) -> dict[str, Any]:
    if key not in detail:
        raise SourceError(f"has no {key} record", where="detail")
    return {"value": _number(detail[key]), "unit": unit}


def _distribution(
    detail: dict[str, Any], count: int, low: str, mean: str, high: str, pct: str, build: _Build
) -> dict[str, Any] | None:
    """A LoadGen latency distribution in ms; percentiles the sample count cannot support are left out."""
    dist: dict[str, Any] = {"count": count, "method": "loadgen", "unit": "ms"}
    for name, key in (("min", low), ("mean", mean), ("max", high)):
        if isinstance(detail.get(key), int | Decimal):
            dist[name] = _ms(detail[key])
    if "mean" in dist and not dist.get("min", 0) <= dist["mean"] <= dist.get("max", dist["mean"]):
        # LoadGen's Offline logs can carry a mean outside [min, max] (it times the one query, not samples):
        # an impossible value is not typed; it is kept verbatim and flagged.
        del dist["mean"]
        build.flag(f"detail.{mean}", str(detail[mean]), "a mean outside LoadGen's own [min, max]")
    for text, name in PERCENTILES.items():
        key = pct.format(p=text)
        if isinstance(detail.get(key), int | Decimal) and rules.percentile_allowed(name, count):
            dist[name] = _ms(detail[key])
    return dist if len(dist) > 3 else None


# The figure MLCommons publishes for each scenario (its submission checker's RESULT_FIELD_NEW and
# RESULT_FIELD_BENCHMARK_OVERWRITE, v5.0/v5.1): tokens/s for the LLM benchmarks below, samples/s otherwise,
# and LoadGen's early-stopping latency estimate for SingleStream (p90) and MultiStream (p99).
TOKEN_HEADLINE = {
    "llama2-70b": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "llama2-70b-interactive": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "llama3.1-8b": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "llama3.1-8b-edge": ("result_tokens_per_second", None),
    "llama3.1-405b": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "mixtral-8x7b": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "deepseek-r1": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "whisper": ("result_tokens_per_second", None),
    "gptj": ("result_inferred_tokens_per_second", "result_inferred_completed_tokens_per_second"),
}
EARLY_STOPPING = {
    "SingleStream": ("early_stopping_latency_ss", "p90"),
    "MultiStream": ("early_stopping_latency_ms", "p99"),
}
# Benchmarks whose published SingleStream figure is the observed p90, not the estimate.
OBSERVED_SINGLE_STREAM = frozenset({"llama3.1-8b-edge"})


def model_of(benchmark: str) -> str:
    """The MLPerf model a benchmark folder runs: 'llama2-70b-99.9' -> 'llama2-70b', 'llama3_1-8b' ->
    'llama3.1-8b' (the checker's model_mapping)."""
    base = re.sub(r"-(99|99\.9)$", "", benchmark)
    return {
        "llama3_1-405b": "llama3.1-405b",
        "llama3_1-8b": "llama3.1-8b",
        "llama3_1-8b-edge": "llama3.1-8b-edge",
        "resnet50": "resnet",
        "ssd-resnet34": "retinanet",
    }.get(base, base)


def _throughput(
    detail: dict[str, Any],
    model: str,
    published: str | None,
    samples_key: str,
    tokens_key: str,
    add_tokens: bool,
    build: _Build,
) -> dict[str, Any]:
    """Offline or Server rates: the headline MLPerf publishes for the model (`published`, tokens/s for LLMs), or
    samples/s with a warning when the log lacks it; the other rate kept beside it."""
    key = published if published in detail else samples_key
    if published and key != published:
        build.warnings.append(
            f"MLPerf publishes {published} for {model}; the log has none, so the headline is samples/s"
        )
    out = {"throughput": _rate(detail, key, "tokens/s" if "token" in key else "samples/s")}
    if key != samples_key:
        out["request_rate"] = _rate(detail, samples_key, "requests/s")
    elif add_tokens:
        out["tokens_per_second"] = _rate(detail, tokens_key, "tokens/s")
    return out


def _metrics(
    detail: dict[str, Any], scenario: str, benchmark: str, count: int, accuracy: dict[str, Any] | None, build: _Build
) -> dict[str, Any]:
    model = model_of(benchmark)
    offline_key, server_key = TOKEN_HEADLINE.get(model, (None, None))
    llm = "result_tokens_per_second" in detail or "result_completed_tokens_per_second" in detail
    metrics: dict[str, Any] = {"primary": "throughput"}
    if scenario == "Offline":
        metrics.update(
            _throughput(detail, model, offline_key, "result_samples_per_second", "result_tokens_per_second", llm, build)
        )
    elif scenario in ("Server", "Interactive"):
        tokens = "result_completed_tokens_per_second"
        metrics.update(
            _throughput(detail, model, server_key, "result_completed_samples_per_sec", tokens, tokens in detail, build)
        )
    else:
        key, percentile = EARLY_STOPPING[scenario]
        metrics["primary"] = f"latency_ms.{percentile}"
        if "result_qps_with_loadgen_overhead" in detail:
            metrics["throughput"] = _rate(detail, "result_qps_with_loadgen_overhead", "queries/s")
        elif "result_samples_per_second" in detail:
            metrics["throughput"] = _rate(detail, "result_samples_per_second", "samples/s")
        if model in OBSERVED_SINGLE_STREAM and scenario == "SingleStream":
            pass  # MLPerf publishes the observed p90 for this benchmark
        elif isinstance(detail.get(key), int | Decimal):
            metrics["latency_estimate_ms"] = {
                "value": _ms(detail[key]),
                "unit": "ms",
                "percentile": percentile,
                "method": "loadgen-early-stopping",
                "count": detail["result_query_count"],
            }
            metrics["primary"] = "latency_estimate_ms"
        else:
            build.warnings.append(
                f"no {key} record: the headline is LoadGen's observed {percentile}, not the "
                "early-stopping estimate MLPerf publishes"
            )
    metrics["latency_ms"] = _latency(detail, scenario, count, build)
    if llm and scenario != "Offline":
        metrics["ttft_ms"] = _distribution(
            detail,
            count,
            "result_first_token_min_latency_ns",
            "result_first_token_mean_latency_ns",
            "result_first_token_max_latency_ns",
            "result_first_token_{p}_percentile_latency_ns",
            build,
        )
        metrics["tpot_ms"] = _distribution(
            detail,
            count,
            "result_time_to_output_token_min",
            "result_time_to_output_token_mean",
            "result_time_to_output_token_max",
            "result_time_per_output_token_{p}_percentile_ns",
            build,
        )
    if accuracy is not None:
        metrics["quality"] = _quality(benchmark, accuracy, build)
    return {k: v for k, v in metrics.items() if v is not None}


def _latency(detail: dict[str, Any], scenario: str, count: int, build: _Build) -> dict[str, Any] | None:
    if scenario == "MultiStream" and "result_99.00_percentile_per_query_latency_ns" in detail:
        # MultiStream is judged per query (8 samples), so the distribution is over queries.
        return _distribution(
            detail,
            detail["result_query_count"],
            "result_min_query_latency_ns",
            "result_mean_query_latency_ns",
            "result_max_query_latency_ns",
            "result_{p}_percentile_per_query_latency_ns",
            build,
        )
    return _distribution(
        detail,
        count,
        "result_min_latency_ns",
        "result_mean_latency_ns",
        "result_max_latency_ns",
        "result_{p}_percentile_latency_ns",
        build,
    )


def _quality(benchmark: str, accuracy: dict[str, Any], build: _Build) -> dict[str, Any] | None:
    """metrics.quality from accuracy.txt, judged as MLPerf judges it; None (flagged) when the file holds no
    value of the benchmark's headline accuracy metric. The run is imported either way: accuracy is optional."""
    values: dict[str, Any] = accuracy["values"]
    for line in accuracy.get("unread", []):
        build.warnings.append(f"accuracy.txt line not read: {line[:80]!r}")
    if accuracy.get("hash"):
        build.unparsed["accuracy.hash"] = accuracy["hash"]
    suffix = re.search(r"-(99|99\.9)$", benchmark)
    model = model_of(benchmark)
    ratio = {"99": 0.99, "99.9": 0.999}[suffix[1]] if suffix else (0.99 if model != "stable-diffusion-xl" else None)
    rule = accuracy_rule(model, ratio or 0.99)
    if rule is None:
        build.warnings.append(f"no MLPerf accuracy rule known for {benchmark}: values kept, nothing judged")
        metric = next(iter(values), None)
        if metric is None:
            return None
        return {"metric": metric, "value": values[metric], "target_ratio": ratio, "values": values}
    metric = next(iter(rule.checks))
    if not isinstance(values.get(metric), int | float):
        build.flag(
            "accuracy.txt",
            "; ".join(f"{k}={v}" for k, v in values.items()) or "(no values)",
            f"no {metric} value, MLPerf's accuracy metric for {model}",
        )
        return None
    reference = rule.checks[metric][0]
    build.targets.update({name: {"min": low, "max": high} for name, (_ref, low, high) in rule.checks.items()})
    return {
        "metric": metric,
        "value": values[metric],
        "target_ratio": ratio if reference else None,
        "reference_value": reference,
        "reference_precision": rule.reference_precision if reference else None,
        "passed": _passed(rule, values),
        "values": values,
    }


def _passed(rule: Accuracy, values: dict[str, Any]) -> bool | None:
    """MLPerf's own verdict: every checked value within its bounds; None when one of them is absent."""
    verdict = True
    for name, (_ref, low, high) in rule.checks.items():
        value = values.get(name)
        if not isinstance(value, int | float):
            return None
        verdict = verdict and (low is None or value >= low) and (high is None or value <= high)
    return verdict


def _provenance(
    src: dict[str, Any],
    system_id: str,
    benchmark: str,
    scenario: str,
    round_value: str,
    files: dict[str, str],
    build: _Build,
) -> dict[str, Any]:
    system, detail = src["system"], src["detail"]
    submitter = str(system.get("submitter", "")).strip()
    if not submitter:
        raise SourceError("the system description names no submitter", where="system")
    origin: dict[str, Any] = {
        "kind": "mlperf-inference",
        "round": round_value,
        "submitter": submitter,
        **publication_facets(system, build),
        "system_id": system_id,
        "benchmark": benchmark,
        "scenario": scenario,
        "loadgen_version": str(detail["loadgen_version"]),
        "files": files,
    }
    if build.targets:
        origin["targets"] = dict(sorted(build.targets.items()))
    for key in ("power_begin", "power_end"):  # LoadGen's run markers, written without a time zone
        if isinstance(detail.get(key), str):
            build.unparsed[f"detail.{key}"] = detail[key]
    if build.unparsed:
        origin["unparsed"] = dict(sorted(build.unparsed.items()))
    return {
        "runner": {"name": "mlperf-loadgen", "version": str(detail["loadgen_version"])},
        "submitter": submitter,
        "source": "import",
        "started_at": str(detail["test_datetime"]),
        "finished_at": None,
        "origin": origin,
    }


def _text(value: Any) -> str | None:
    return None if units.not_stated(value) else str(value).strip()


# MLPerf's closed vocabularies (submission checker VALID_DIVISIONS, VALID_AVAILABILITIES, system_type).
# "rdi" (research, development or internal) is MLPerf's name for the research category.
DIVISIONS = {"closed": "closed", "open": "open", "network": "network"}
AVAILABILITIES = {
    "available": "available",
    "preview": "preview",
    "rdi": "research",
    "research": "research",
    # MLPerf Training's words for available systems (result_summarizer config.yaml)
    "onprem": "available",
    "cloud": "available",
    "available on-premise": "available",
    "available cloud": "available",
}
CATEGORIES = {"datacenter": "datacenter", "edge": "edge"}


def publication_facets(system: dict[str, Any], build: _Build) -> dict[str, str | None]:
    """division, category and availability from the system description, in MLPerf's closed vocabularies.

    Case and spacing are normalised ('Available', 'datacenter, edge'); a value outside the vocabulary is kept
    verbatim and flagged, never mapped to the nearest word."""
    out: dict[str, str | None] = {}
    for name, key, table in (
        ("division", "division", DIVISIONS),
        ("category", "system_type", CATEGORIES),
        ("availability", "status", AVAILABILITIES),
    ):
        raw = _text(system.get(key))
        if raw is None:
            out[name] = None
            continue
        words = [w.strip().lower() for w in raw.split(",")]
        known = [table.get(w) for w in words]
        if all(known):
            out[name] = ",".join(sorted(set(known), key=list(table.values()).index))  # type: ignore[arg-type]
        else:
            out[name] = raw
            build.warnings.append(
                f"system.{key} = {raw!r} is not one of {', '.join(sorted(set(table.values())))}: kept as written"
            )
    return out


# ---------------------------------------------------------------------------------------------------------
# Readers: each takes a file's text and returns what the mapping needs, or raises SourceError.


class SourceError(Exception):
    """A source file is present but cannot be read as what it should be. `where` names the file's role."""

    def __init__(self, message: str, *, where: str = "") -> None:
        super().__init__(message)
        self.where = where


def read_json_object(text: str) -> dict[str, Any]:
    """A JSON object (system description, measurements.json)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise SourceError(TOO_DEEP) from None
    if not isinstance(value, dict):
        raise SourceError("expected a JSON object")
    return value


TOO_DEEP = "nested deeper than the JSON reader allows (about a thousand levels): not a description MLPerf writes"


def unstorable(document: Any, pointer: str = "") -> list[str]:
    """Text the registry cannot store, by JSON pointer: NUL (U+0000), which PostgreSQL text cannot hold, and lone
    surrogates, which are not UTF-8. A source file's JSON may spell either as an escape (\\u0000)."""
    if isinstance(document, str):
        if "\x00" in document:
            return [f"{pointer or '/'}: holds a NUL character (U+0000), which the registry cannot store"]
        return [] if _utf8(document) else [f"{pointer or '/'}: holds a lone surrogate, which is not UTF-8 text"]
    if isinstance(document, dict):
        found = []
        for key, value in document.items():
            here = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            found += unstorable(str(key), here) + unstorable(value, here)
        return list(dict.fromkeys(found))
    if isinstance(document, list):
        return [problem for n, value in enumerate(document) for problem in unstorable(value, f"{pointer}/{n}")]
    return []


# One decoder for every :::MLLOG line (floats as Decimal, keeping their printed digits).
MLLOG_DECODER = json.JSONDecoder(parse_float=Decimal)

DETAIL_REQUIRED = (
    "loadgen_version",
    "test_datetime",
    "effective_scenario",
    "effective_test_mode",
    "result_validity",
    "result_query_count",
)


def read_detail(text: str) -> dict[str, Any]:
    """The :::MLLOG records of mlperf_log_detail.txt as {key: first value}; floats are kept as Decimal."""
    entries: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if not line.startswith(":::MLLOG "):
            raise SourceError(f"line {number} is not a :::MLLOG record")
        try:
            record = MLLOG_DECODER.decode(line[len(":::MLLOG ") :])
        except json.JSONDecodeError as exc:
            raise SourceError(f"line {number}: malformed :::MLLOG record ({exc.msg})") from None
        except RecursionError:
            raise SourceError(f"line {number}: {TOO_DEEP}") from None
        if not isinstance(record, dict) or not isinstance(record.get("key"), str) or "value" not in record:
            raise SourceError(f"line {number}: a :::MLLOG record needs a key and a value")
        entries.setdefault(record["key"], record["value"])
    missing = [key for key in DETAIL_REQUIRED if key not in entries]
    if missing:
        raise SourceError(f"no {', '.join(missing)} record: truncated, or not a LoadGen performance log")
    if entries["effective_test_mode"] != "PerformanceOnly":
        raise SourceError(f"test mode is {entries['effective_test_mode']!r}, not PerformanceOnly")
    return entries


_SUMMARY_LINE = re.compile(r"^(?P<label>[^:]+?)\s*:\s*(?P<value>.*)$")
_SUMMARY_END = re.compile(r"^(No|\d+) errors? encountered during test\.?$")


def read_summary(text: str) -> dict[str, str]:
    """The 'label : value' lines of mlperf_log_summary.txt. It must end with LoadGen's errors line."""
    fields: dict[str, str] = {}
    pending: str | None = None
    for line in (raw.strip() for raw in text.splitlines()):
        if not line or line.startswith("="):
            continue
        if pending and line.startswith("*"):  # "TTFT Early Stopping Result:" continues on the next line
            fields[pending], pending = line, None
            continue
        match = _SUMMARY_LINE.match(line)
        if not match:
            continue
        label, value = match["label"].strip(), match["value"].strip()
        if not value:
            pending = label
        elif fields.setdefault(label, value) != value and _detail_key(label) is not None:
            # LLM summaries repeat the early-stopping lines for TTFT and TPOT; only results must be unique
            raise SourceError(f"'{label}' appears twice with different values")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not _SUMMARY_END.match(lines[-1]):
        raise SourceError("does not end with LoadGen's 'errors encountered during test' line (truncated?)")
    missing = [label for label in ("Scenario", "Mode", "Result is") if label not in fields]
    if missing:
        raise SourceError(f"has no {', '.join(missing)} line")
    return fields


SUMMARY_KEYS = {
    "Scenario": "effective_scenario",
    "Mode": "effective_test_mode",
    "Result is": "result_validity",
    "Completed samples per second": "result_completed_samples_per_sec",
    "Completed tokens per second": "result_completed_tokens_per_second",
    "Scheduled samples per second": "result_scheduled_samples_per_sec",
    "Samples per second": "result_samples_per_second",
    "Tokens per second": "result_tokens_per_second",
    "Min latency (ns)": "result_min_latency_ns",
    "Max latency (ns)": "result_max_latency_ns",
    "Mean latency (ns)": "result_mean_latency_ns",
    "Min First Token latency (ns)": "result_first_token_min_latency_ns",
    "Max First Token latency (ns)": "result_first_token_max_latency_ns",
    "Mean First Token latency (ns)": "result_first_token_mean_latency_ns",
    "Min Time to Output Token (ns)": "result_time_to_output_token_min",
    "Max Time to Output Token (ns)": "result_time_to_output_token_max",
    "Mean Time to Output Token (ns)": "result_time_to_output_token_mean",
}
SUMMARY_PERCENTILES = (
    (re.compile(r"^(\d+\.\d+) percentile latency \(ns\)$"), "result_{}_percentile_latency_ns"),
    (re.compile(r"^(\d+\.\d+) percentile first token latency \(ns\)$"), "result_first_token_{}_percentile_latency_ns"),
    (
        re.compile(r"^(\d+\.\d+) percentile time to output token \(ns\)$"),
        "result_time_per_output_token_{}_percentile_ns",
    ),
)


def _detail_key(label: str) -> str | None:
    if label in SUMMARY_KEYS:
        return SUMMARY_KEYS[label]
    for pattern, template in SUMMARY_PERCENTILES:
        match = pattern.match(label)
        if match:
            return template.format(match[1])
    return None


def cross_check(summary: dict[str, str], detail: dict[str, Any], loadgen_scenario: str) -> None:
    """Every result the summary prints must equal the detail log's record to the summary's precision."""
    if detail["effective_scenario"] != loadgen_scenario:
        raise SourceError(
            f"effective_scenario is {detail['effective_scenario']!r}; this directory needs {loadgen_scenario!r}",
            where="detail",
        )
    for label, text in summary.items():
        key = _detail_key(label)
        if key is None:
            continue
        if loadgen_scenario == "MultiStream":  # the summary prints MultiStream latencies per query
            per_query = {
                "result_min_latency_ns": "result_min_query_latency_ns",
                "result_max_latency_ns": "result_max_query_latency_ns",
                "result_mean_latency_ns": "result_mean_query_latency_ns",
            }.get(key, key.replace("_percentile_latency_ns", "_percentile_per_query_latency_ns"))
            key = per_query if per_query in detail else key
        if key not in detail:
            raise SourceError(f"has no {key} record, which the summary prints as '{label}'", where="detail")
        if not _agrees(text, detail[key]):
            raise SourceError(
                f"'{label}: {text}' disagrees with {key} = {detail[key]} in the detail log", where="summary"
            )


def _agrees(text: str, value: Any) -> bool:
    if isinstance(value, str | bool):
        return text == str(value)
    try:
        shown = Decimal(text)
    except ArithmeticError:
        return False
    logged = value if isinstance(value, Decimal) else Decimal(value)
    # The detail log prints doubles to 6 significant digits and drops a zero fraction: 632229.06 is logged
    # as 632229, so a whole number carries half a unit of rounding like any other printed value.
    tolerance = _half_ulp(shown) + _half_ulp(logged)
    return abs(shown - logged) <= tolerance


def _half_ulp(value: Decimal) -> Decimal:
    """Half a unit in the last printed digit: the rounding a printed value may carry."""
    return Decimal(5).scaleb(int(value.as_tuple().exponent) - 1)


_ACC_ITEM = re.compile(r"\s*(?P<name>[A-Za-z][\w ]*?)\s*[=:]\s*(?P<value>-?\d+(?:\.\d+)?)%?\s*$")
_DICE = re.compile(
    r"^Accuracy:\s*mean\s*=\s*(?P<mean>\d+(?:\.\d+)?)"
    r"(?P<rest>(?:\s*,\s*\w+\s*=\s*-?\d+(?:\.\d+)?)*)\s*$"
)
_NUMBER_TEXT = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*$")


def read_accuracy(text: str) -> dict[str, Any]:
    """accuracy.txt as MLPerf's accuracy scripts print it: {'values', 'hash', 'unread'}.

    Values come from (a) Python/JSON dict literals ('Results' of the LLM scripts, bert's {"exact_match",
    "f1"}, SDXL's 'Accuracy Results: {...}'), one line or spread over several, later dicts adding to
    earlier ones; numbers written as strings ('38.4847') are read as the numbers they spell; (b) lines made
    only of 'name=value[%]' items ('accuracy=76.078%, good=38039, total=50000', 'mAP=37.348%',
    'Word Error Rate: 2.17%, accuracy=97.83%'); (c) 3d-unet's 'Accuracy: mean = 0.86, kidney = ...' (the
    mean is DICE). Anything else (COCO tables, 'DONE (t=43.45s)', progress lines) is not a value: a line
    of (a) that cannot be read is listed in 'unread' for the caller to flag. Never raises on content.
    """
    values: dict[str, Any] = {}
    unread: list[str] = []
    hash_value = None
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if line.startswith("hash="):
            hash_value = line[5:]
            continue
        brace = line.find("{")
        if brace >= 0 and (brace == 0 or line[:brace].rstrip().endswith(":")):
            literal = line[brace:]
            while literal.count("{") > literal.count("}") and index < len(lines):  # a dict over several lines
                literal += " " + lines[index].strip()
                index += 1
            parsed = _literal_dict(literal)
            if parsed is None:
                unread.append(line)
            else:
                values.update(parsed)
            continue
        dice = _DICE.match(line)
        if dice:
            values["DICE"] = float(dice["mean"])
            values.update(_items(dice["rest"].strip().lstrip(",")) or {})
            continue
        items = _items(line)
        if items:
            values.update(items)
    return {"values": values, "hash": hash_value, "unread": unread}


def _items(line: str) -> dict[str, float] | None:
    """'a=1%, b = 2, Word Error Rate: 3%' -> {'a': 1.0, 'b': 2.0, 'word_error_rate': 3.0}; None unless the
    whole line is such items."""
    found: dict[str, float] = {}
    for part in line.split(","):
        match = _ACC_ITEM.fullmatch(part)
        if not match:
            return None
        name = match["name"].strip()
        found[name.lower().replace(" ", "_") if " " in name else name] = float(match["value"])
    return found or None


def _literal_dict(text: str) -> dict[str, float] | None:
    """A dict literal's numeric entries (numbers in strings included); None if it is not one dict literal."""
    try:
        value = ast.literal_eval(text)  # literals only: runs no code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    return _numbers(value)


def _numbers(value: dict[Any, Any]) -> dict[str, float]:
    """The numeric entries of a dict, those of nested dicts included ({'accuracy_results': {'FID_SCORE': ..}}
    as Google's SDXL harness prints it)."""
    out: dict[str, float] = {}
    for key, item in value.items():
        if not isinstance(key, str) or isinstance(item, bool):
            continue
        if isinstance(item, int | float):
            out[key] = item
        elif isinstance(item, str) and _NUMBER_TEXT.match(item):
            out[key] = float(item)
        elif isinstance(item, dict):
            out.update(_numbers(item))
    return out


def read_test06(text: str) -> dict[str, str]:
    """TEST06/verify_accuracy.txt: {check label: 'True' | 'False' | 'Skipped'}."""
    found = {}
    for line in text.splitlines():
        label, sep, value = line.partition(":")
        if sep and label.strip() in TEST06_CHECKS:
            found[label.strip()] = value.strip()
    if "TEST06 verification complete" not in text:
        raise SourceError("has no 'TEST06 verification complete' line (truncated?)")
    if not found:
        raise SourceError("has no TEST06 check lines")
    return found


def read_user_conf(text: str) -> dict[str, str]:
    """user.conf: 'model.scenario.key = value' lines; '#' starts a comment."""
    entries = {}
    for number, line in enumerate(text.splitlines(), 1):
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        key, sep, value = content.partition("=")
        if not sep or not key.strip():
            raise SourceError(f"line {number} is not 'key = value'")
        entries[key.strip()] = value.strip()
    return entries


# ---------------------------------------------------------------------------------------------------------
# The system description (systems/<id>.json): typed where the protocol has a field, text otherwise.

CONSUMED = frozenset(
    {
        "system_name",
        "number_of_nodes",
        "accelerators_per_node",
        "accelerator_model_name",
        "accelerator_memory_capacity",
        "accelerator_memory_configuration",
        "accelerator_host_interconnect",
        "accelerator_interconnect",
        "accelerator_frequency",
        "host_processor_model_name",
        "host_processors_per_node",
        "host_memory_capacity",
        "host_processor_frequency",
        "host_processor_core_count",
        "host_processor_vcpu_count",
        "cooling",
        "operating_system",
        "framework",
        "other_software_stack",
        "sw_notes",
        "division",
        "submitter",
        "status",
        "system_type",
    }
)
VENDORS = {"amd": "AMD", "nvidia": "NVIDIA", "intel": "Intel", "google": "Google", "qualcomm": "Qualcomm"}
COOLING = {
    "air": "air",
    "air-cooled": "air",
    "air cooled": "air",
    "liquid": "liquid",
    "liquid-cooled": "liquid",
    "liquid cooled": "liquid",
    "immersion": "immersion",
}
RUNTIMES = frozenset({"rocm", "cuda", "cudnn", "hip", "oneapi"})
ALIASES = {"pytorch": "torch"}


def system_section(system: dict[str, Any], build: _Build) -> dict[str, Any]:
    name, nodes = _text(system.get("system_name")), units.parse_count(system.get("number_of_nodes"))
    if not name or not nodes:
        raise SourceError("system_name and a positive number_of_nodes are required", where="system")
    out: dict[str, Any] = {
        "name": name,
        "nodes": nodes,
        "accelerators": _accelerators(system, nodes, build),
        "host": _host(system, build),
        "cooling": _cooling(system, build),
    }
    notes = {
        key: str(value)[:2000]
        for key, value in sorted(system.items())
        if key not in CONSUMED and not units.not_stated(value)
    }
    notes.update(build.system_notes)
    if notes:
        out["notes"] = notes
    return out


def _quantity(system: dict[str, Any], key: str, parser: Any, build: _Build) -> float | int | None:
    raw = system.get(key)
    if units.not_stated(raw):
        return None
    value = parser(str(raw))
    if value is None:
        build.flag(f"system.{key}", str(raw), "not '<number> <unit>' with a unit of the importer's table")
    elif re.search(r"\d\s*[MGT]B\s*$", str(raw), re.IGNORECASE):
        build.system_notes["import.memory_units"] = (
            "memory capacities in MB/GB/TB are read as MiB/GiB/TiB (JEDEC binary convention)"
        )
        build.warnings.append(
            f"system.{key} = {raw!r} read as {value} GiB: 'GB' taken in the JEDEC binary "
            "sense (the source does not say which)"
        )
    return value  # type: ignore[no-any-return]


def _accelerators(system: dict[str, Any], nodes: int, build: _Build) -> list[dict[str, Any]]:
    per_node = units.parse_count(system.get("accelerators_per_node"))
    model = _text(system.get("accelerator_model_name"))
    if per_node is None and not units.not_stated(system.get("accelerators_per_node")):
        build.flag("system.accelerators_per_node", str(system["accelerators_per_node"]), "not a count")
    if not per_node or model is None:
        return []
    vendor = VENDORS.get(model.split()[0].lower())
    if vendor:
        build.system_notes["import.accelerator_vendor"] = (
            f"{vendor!r} read from the first word of accelerator_model_name"
        )
    else:
        vendor = UNSPECIFIED
        build.flag("system.accelerator_model_name", model, "no known vendor name at its start")
    accelerator = {
        "vendor": vendor,
        "model": model,
        "count": per_node * nodes,
        "memory_gib": _quantity(system, "accelerator_memory_capacity", units.parse_memory_gib, build),
        "memory_type": _text(system.get("accelerator_memory_configuration")),
        "host_interconnect": _text(system.get("accelerator_host_interconnect")),
        "interconnect": _text(system.get("accelerator_interconnect")),
        "frequency_mhz": _quantity(system, "accelerator_frequency", units.parse_frequency_mhz, build),
    }
    return [{k: v for k, v in accelerator.items() if v is not None}]


def _host(system: dict[str, Any], build: _Build) -> dict[str, Any] | None:
    host = {
        "cpu_model": _text(system.get("host_processor_model_name")),
        "sockets": units.parse_count(system.get("host_processors_per_node")),
        "memory_gib": _quantity(system, "host_memory_capacity", units.parse_memory_gib, build),
        "frequency_mhz": _quantity(system, "host_processor_frequency", units.parse_frequency_mhz, build),
    }
    # Submitters fill these per processor or per node (both occur in published rounds): host.cores and
    # host.threads are per node, so the value is kept as text rather than multiplied on a guess.
    for key in ("host_processor_core_count", "host_processor_vcpu_count"):
        if not units.not_stated(system.get(key)):
            build.flag(f"system.{key}", str(system[key]), "per processor or per node is not stated")
    return {k: v for k, v in host.items() if v is not None} or None


def _cooling(system: dict[str, Any], build: _Build) -> str | None:
    raw = system.get("cooling")
    if units.not_stated(raw):
        return None
    cooling = COOLING.get(str(raw).strip().lower())
    if cooling is None:
        build.flag("system.cooling", str(raw), "not air, liquid or immersion")
    return cooling


def software_section(
    system: dict[str, Any], measurements: dict[str, Any], settings: dict[str, Any], build: _Build
) -> dict[str, Any]:
    out: dict[str, Any] = {"os": _os(system, build)}
    stack = _versions(system, "framework", build)
    runtimes = {k: v for k, v in stack.items() if k in RUNTIMES}
    frameworks = {k: v for k, v in stack.items() if k not in RUNTIMES}
    packages = _versions(system, "other_software_stack", build)
    for name, value in (
        ("runtimes", runtimes),
        ("frameworks", frameworks),
        ("packages", packages),
        ("settings", settings),
    ):
        if value:
            out[name] = value
    for key, value in sorted(measurements.items()):
        if key not in ("weight_data_types", "input_data_types") and not units.not_stated(value):
            build.software_notes[f"measurements.{key}"] = str(value)[:2000]
    if not units.not_stated(system.get("sw_notes")):
        build.software_notes["sw_notes"] = str(system["sw_notes"])[:2000]
    if build.software_notes:
        out["notes"] = dict(build.software_notes)
    return out


def _os(system: dict[str, Any], build: _Build) -> dict[str, str] | None:
    raw = _text(system.get("operating_system"))
    if raw is None:
        return None
    parsed = units.parse_os(raw)
    if parsed is None:
        build.flag("system.operating_system", raw, "not '<name> <version>'")
        return None
    if parsed[2]:  # a qualifier such as "LTS": the full text is kept beside the typed name and version
        build.software_notes["operating_system"] = raw
    return {"name": parsed[0], "version": parsed[1]}


def _versions(system: dict[str, Any], key: str, build: _Build) -> dict[str, str]:
    raw = _text(system.get(key))
    if raw is None:
        return {}
    pairs, leftovers = units.split_versions(raw)
    found: dict[str, str] = {}
    for name, version in pairs:
        canonical = ALIASES.get(name.lower(), name.lower())
        if canonical in found:
            leftovers.append(f"{name} {version}")
        else:
            found[canonical] = version
    if leftovers:
        build.flag(f"system.{key}", raw, f"parts not read as '<name> <version>': {'; '.join(leftovers)}")
    return found


# ---------------------------------------------------------------------------------------------------------
# The per-file report, for the CLI and the admin upload.


def report_dict(plan: ImportPlan) -> dict[str, Any]:
    """The plan as JSON-ready data: each item's outcome, flags and files, then the files no item used."""
    return {
        "round": plan.round,
        "round_source": plan.round_source,
        "errors": plan.errors,
        "warnings": plan.warnings,
        "items": [
            {
                "key": item.key,
                "status": item.status,
                "skipped": item.skipped,
                "errors": item.errors,
                "warnings": item.warnings,
                "files": [asdict(f) for f in item.files],
            }
            for item in plan.items
        ],
        "skipped": [asdict(f) for f in plan.skipped],
    }


def render_report(plan: ImportPlan) -> str:
    """A plain-text report: one block per item (errors, flags, one row per file), then unused files."""
    ready = sum(1 for item in plan.items if item.document)
    lines = [f"MLPerf import: {ready} of {len(plan.items)} runs ready; round {plan.round or '?'} ({plan.round_source})"]
    lines += [f"  error: {e}" for e in plan.errors] + [f"  note:  {w}" for w in plan.warnings]
    for item in plan.items:
        state = {"ready": "ready", "skipped": f"SKIPPED: {item.skipped}", "refused": "REFUSED: nothing will be stored"}[
            item.status
        ]
        lines += ["", f"{item.key}: {state}"]
        lines += [f"  error: {e}" for e in item.errors] + [f"  flag:  {w}" for w in item.warnings]
        lines += _file_rows(item.files)
    if plan.skipped:
        lines += ["", "files not used by any run:", *_file_rows(plan.skipped)]
    return "\n".join(lines)


def _file_rows(files: list[FileReport]) -> list[str]:
    return [f"  {f.status:<7} {(f.sha256 or '-')[:12]:<12}  {f.path}  ({f.reason})" for f in files]
