"""`benchreg import mlperf PATH`: import a published MLPerf Inference or Training tree (a whole round, a
division, a submitter or one system, or a folder holding several rounds, each imported on its own) through the
normal validation path, with a progress bar, a summary and a per-file report.

`benchreg import nccl-tests LOG...`: store nccl-tests' logs as collective runs, each refused unless it reproduces
its own printed figures (docs/interconnect.md).

`benchreg import serving FILE...`: import the result files of serving benchmark tools (aiperf, guidellm, vLLM's bench
serve), one run per load level, with the deployment they do not describe from --deployment FILE and flags
(docs/serving.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import InterfaceError, OperationalError, connections
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from registry.importers import mlperf, nccl_tests_documents, serving
from registry.importers.mlperf.published import PublishedTableError
from registry.importers.serving.deployment import FLAGS as DEPLOYMENT_FLAGS
from registry.services.imports import (
    BATCH_SIZE,
    ImportRefused,
    ImportResult,
    Referee,
    mlperf_import_rounds,
    serving_import,
)
from registry.services.imports_collectives import nccl_tests_import
from registry.services.tokens import user_for_token


class Command(BaseCommand):
    help = (
        "Import published results through the normal validation path: MLPerf rounds, and serving tools' result files."
    )
    # Django's system checks look at the web server's configuration (URLs, views, templates: importing them is ~2 s
    # of a busy host's start), which `benchreg serve` and `migrate` check; an import's checks are the protocol's.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind", choices=list(IMPORTERS), help="what kind of published results")
        parser.add_argument(
            "path",
            type=Path,
            nargs="+",
            help="mlperf: a results repository, division, submitter or system folder, or a folder holding several "
            "rounds (one; each round imported on its own, its suite and round from its contents and its folder's "
            "name); serving: result files (aiperf's, guidellm's, vLLM bench serve's), or folders holding aiperf's "
            "profile_export_aiperf.json or guidellm's "
            "benchmarks.json (.yaml); nccl-tests: the logs (stdout) of nccl-tests' *_perf binaries",
        )
        parser.add_argument(
            "--system",
            type=Path,
            help="nccl-tests: a YAML or JSON file holding the protocol's system object (name, nodes, accelerators, "
            "host, ...); default: the log's hosts and device names",
        )
        parser.add_argument(
            "--collective", help="nccl-tests: the collective (all_reduce, ...) of a log too old to name its own"
        )
        parser.add_argument(
            "--deployment", type=Path, help="serving: a YAML or JSON description of the deployment (docs/serving.md)"
        )
        for key, (flag, kind) in DEPLOYMENT_FLAGS.items():
            parser.add_argument(
                flag,
                dest=f"deploy__{key}",
                type=kind,
                metavar=key.rsplit(".", 1)[-1].upper(),  # `--accelerator-count COUNT`, not the internal dest
                help=f"serving: {key} of the deployment file",
            )
        parser.add_argument(
            "--round",
            dest="round_name",
            help="MLPerf round, e.g. v5.1 (default: from the folder's name, ..._v5.1, else for Inference from the "
            "logs); for one round only",
        )
        parser.add_argument(
            "--suite",
            choices=["auto", "inference", "training"],
            default="auto",
            help="MLPerf suite (default: each round folder's own: training where result_<n>.txt files are found); "
            "with a folder holding several rounds, import only that suite's",
        )
        parser.add_argument("--username", default="mlperf-import", help="registry user recorded as submitter")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="runs stored per transaction")
        parser.add_argument("--report", type=Path, help="write the per-file report (JSON) to this file")
        parser.add_argument("--json", action="store_true", help="print the per-file report as JSON")
        parser.add_argument(
            "--full",
            action="store_true",
            help="print the per-file text report, not only the summary and the folders that were refused or skipped",
        )
        parser.add_argument(
            "--published",
            help="MLCommons' results table (summary_results.json) that referees the import; default: the one at "
            "the root of the round the tree belongs to, if any; 'none': no referee",
        )
        parser.add_argument(
            "--published-scope",
            help="where the tree lies in the round, as the table's Location starts (e.g. closed/AMD); default: "
            "from the folders (closed/<submitter>/...)",
        )
        parser.add_argument(
            "--accept-disagreements",
            action="store_true",
            help="store the runs the published table disagrees with too (held back otherwise); the exit status "
            "stays non-zero",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")
        parser.add_argument(
            "--attempts",
            type=int,
            default=6,
            help="tries in all when the database is "
            "unavailable (backoff 1, 2, 4... s up to 30 s); retrying is safe: stored runs come "
            "back as known",
        )

    def handle(self, *args: Any, kind: str, path: list[Path], username: str, json: bool, **options: Any) -> None:
        IMPORTERS[kind](self, path, options, username=username, json_out=json)

    def _mlperf(self, paths: list[Path], options: dict[str, Any], *, username: str, json_out: bool) -> None:
        if len(paths) != 1:
            raise CommandError("mlperf: name one folder")
        path = paths[0]
        if not path.is_dir():
            raise CommandError(f"{path} is not a directory")
        if options["batch_size"] < 1 or options["attempts"] < 1:
            raise CommandError("--batch-size and --attempts must be at least 1")
        # the report goes to stdout, the bar to stderr; `_out` is the stream the OutputWrapper wraps
        console = Console(file=cast(TextIO, self.stderr._out), stderr=True)
        started = time.perf_counter()
        referee = _referee(options["published"], options["published_scope"], options["accept_disagreements"])

        def once() -> list[ImportResult]:
            return _import_with_bar(
                console,
                disable=options["no_progress"] or json_out,
                root=path,
                username=username,
                round_name=options["round_name"],
                suite=options["suite"],
                batch_size=options["batch_size"],
                referee=referee,
            )

        try:
            results = _with_retries(once, console, options["attempts"])
        except ImportRefused as exc:
            raise CommandError(f"{exc}; nothing was stored") from None
        except PublishedTableError as exc:
            raise CommandError(f"the published table cannot referee this import: {exc}; nothing was stored") from None
        elapsed = time.perf_counter() - started
        self._write_reports(results, elapsed, report=options["report"], json=json_out, full=options["full"])

    def _serving(self, paths: list[Path], options: dict[str, Any], *, username: str, json_out: bool) -> None:
        flags = {key: options.get(f"deploy__{key}") for key in DEPLOYMENT_FLAGS}
        user = user_for_token(username=username if username != "mlperf-import" else "serving-import")
        try:
            deployment = serving.load(options.get("deployment"), flags)
            result = serving_import(paths=paths, deployment=deployment, submitted_by=user)
        except serving.ServingImportError as exc:
            raise CommandError(f"{exc}; nothing was stored") from None
        if json_out:
            rows = [
                {"path": lv.path, "sweep": lv.sweep, "index": lv.index, **o.__dict__}
                for lv, o in zip(result.levels, result.outcomes, strict=True)
            ]
            self.stdout.write(json.dumps(rows, indent=2))
        else:
            self.stdout.write(f"serving import: {len(result.levels)} load level(s)\n{result.render()}")
        if result.counts.get("refused"):
            raise CommandError(f"{result.counts['refused']} level(s) refused; the valid ones were kept")

    def _nccl_tests(self, paths: list[Path], options: dict[str, Any], *, username: str, json_out: bool) -> None:
        user = user_for_token(username=username if username != "mlperf-import" else "nccl-tests-import")
        try:
            system = nccl_tests_documents.load_system(options.get("system"))
            result = nccl_tests_import(
                paths=paths,
                submitted_by=user,
                system=system,
                collective=options.get("collective"),
                submitter=options.get("deploy__submitter"),  # --submitter, shared with serving
            )
        except nccl_tests_documents.NcclImportError as exc:
            raise CommandError(f"{exc}; nothing was stored") from None
        if json_out:
            rows = [{"path": s.path, **o.__dict__} for s, o in zip(result.sweeps, result.outcomes, strict=True)]
            self.stdout.write(json.dumps(rows, indent=2))
        else:
            self.stdout.write(f"nccl-tests import: {len(result.sweeps)} sweep(s)\n{result.render()}")

    def _write_reports(
        self, results: list[ImportResult], elapsed: float, *, report: Path | None, json: bool, full: bool
    ) -> None:
        if report:
            report.write_text(_json_reports(results), encoding="utf-8")
        if json:
            self.stdout.write(_json_reports(results))
        else:
            for result in results:
                self.stdout.write(result.render() if full else _problems(result))
                _summary(Console(file=cast(TextIO, self.stdout._out)), result, elapsed if len(results) == 1 else None)
            if len(results) > 1:
                self.stdout.write(f"{len(results)} rounds imported in {elapsed:.1f} s")
        failures = [line for result in results for line in _failures(result, named=len(results) > 1)]
        if failures:
            raise CommandError("\n".join(failures))


# Every kind `benchreg import` knows (the first argument's choices), and the method that imports it, called with
# the paths, the command's other options, the user and whether to answer in JSON: adding an importer is a row here,
# its method and its options in add_arguments (docs/architecture.md, "Adding an importer").
IMPORTERS: dict[str, Callable[..., None]] = {
    "mlperf": Command._mlperf,
    "serving": Command._serving,
    "nccl-tests": Command._nccl_tests,
}


def _referee(published: str | None, scope: str | None, accept: bool) -> Referee:
    if published is not None and published.strip().lower() == "none":
        return Referee(enabled=False)
    table = Path(published) if published else None
    if table is not None and not table.is_file():
        raise CommandError(f"--published {published}: no such file")
    return Referee(published=table, scope=scope, accept_disagreements=accept)


def _failures(result: ImportResult, *, named: bool = False) -> list[str]:
    """Why the command exits non-zero: refused results, and every disagreement with the published table. Each line
    says what was kept, in numbers: never "the valid ones were kept" when none were."""
    where = f"{_label(result)}: " if named else ""
    counts = result.counts
    out = []
    if counts.get("refused"):
        out.append(f"{where}{counts['refused']} result(s) refused; {_kept(counts)}")
    if result.referee and result.referee.disagreements:
        held = counts.get("held", 0)
        out.append(
            f"{where}{len(result.referee.disagreements)} disagreement(s) with the published table "
            f"({', '.join(f'{n} {kind}' for kind, n in result.referee.counts().items())}); "
            + (
                f"{held} run(s) held back, not stored (--accept-disagreements stores them)"
                if held
                else "the runs were stored (--accept-disagreements)"
                if result.referee.held
                else "no run held back"
            )
        )
    return out


def _kept(counts: dict[str, int]) -> str:
    """What the registry holds of this import: '12 stored, 3 already known', or 'nothing was stored'."""
    stored, known = counts.get("stored", 0), counts.get("known", 0)
    if not stored and not known:
        return "nothing was stored"
    parts = [f"{stored} stored" if stored else "", f"{known} already known" if known else ""]
    return f"the others were kept: {', '.join(p for p in parts if p)}"


def _label(result: ImportResult) -> str:
    """A round as the report names it: its folder, suite and round."""
    folder = result.root.name if result.root is not None else "?"
    return f"{folder} (MLPerf {result.suite} {result.plan.round or 'round unknown'})"


def _import_with_bar(
    console: Console,
    *,
    disable: bool,
    root: Path,
    username: str,
    round_name: str | None,
    suite: str,
    batch_size: int,
    referee: Referee,
) -> list[ImportResult]:
    with _progress_bar(console, disable) as bar:
        task = bar.add_task("import", total=None, folder="")
        return mlperf_import_rounds(
            root=root,
            submitted_by=user_for_token(username=username),
            round_name=round_name,
            suite=suite,
            batch_size=batch_size,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            referee=referee,
            on_round=lambda folder: bar.reset(task, total=None, folder=f" {folder.path.name}"),
        )


def _progress_bar(console: Console, disable: bool) -> Progress:
    return Progress(
        TextColumn("importing{task.fields[folder]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=disable,
        transient=True,
    )


def _with_retries(once: Callable[[], list[ImportResult]], console: Console, attempts: int) -> list[ImportResult]:
    """Run `once`, retrying while the database is unavailable, and say so when it took retries."""
    retries: list[str] = []
    try:
        result = Retrying(
            retry=retry_if_exception_type((OperationalError, InterfaceError)),
            stop=stop_after_attempt(attempts),
            wait=wait_exponential(multiplier=1, max=30),
            before_sleep=_retry_announcer(console, attempts, retries),
        )(once)
    except (RetryError, OperationalError, InterfaceError) as exc:
        raise _unavailable(exc, attempts) from None
    if retries:
        console.print(
            f"the import succeeded after {len(retries)} retry(ies); runs stored before an "
            "interruption are counted as known"
        )
    return result


def _unavailable(exc: RetryError | OperationalError | InterfaceError, attempts: int) -> CommandError:
    cause = exc.last_attempt.exception() if isinstance(exc, RetryError) else exc
    return CommandError(
        f"the database stayed unavailable after {attempts} attempt(s): "
        f"{type(cause).__name__}: {str(cause).strip().splitlines()[0][:300]}; "
        "runs stored before it went away are kept (import again to finish)"
    )


def _retry_announcer(console: Console, attempts: int, retries: list[str]) -> Callable[[RetryCallState], None]:
    def say(state: RetryCallState) -> None:  # the database went away: say so, drop the broken connection
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        retries.append(f"{type(error).__name__}: {str(error).strip().splitlines()[0][:200] if error else ''}")
        console.print(
            f"retrying: the database is unavailable ({retries[-1]}); attempt {state.attempt_number + 1}"
            f" of {attempts} in {wait:.0f} s; runs already stored will come back as known"
        )
        connections.close_all()

    return say


def _problems(result: ImportResult) -> str:
    """The folders that were not stored, each with why (the full report has every file)."""
    folder = f" of {result.root.name}" if result.root is not None else ""
    lines = [f"MLPerf {result.suite} import{folder}, round {result.plan.round or '?'} ({result.plan.round_source})"]
    lines += [f"  error: {e}" for e in result.plan.errors]
    for outcome in result.outcomes:
        if outcome.status in ("refused", "skipped"):
            lines.append(f"  {outcome.status.upper()} {outcome.key}")
            lines.extend(f"      - {e}" for e in outcome.errors)
        elif outcome.note:  # known or stored beside a stored run of the same measurement: which, and what became
            lines.append(f"  {outcome.status.upper()} {outcome.key} (run {outcome.run_id})")
            lines.append(f"      - {outcome.note}")
    lines += result.referee.lines() if result.referee else [f"not refereed: {result.referee_note}"]
    return "\n".join(lines)


def _summary(console: Console, result: ImportResult, elapsed: float | None) -> None:
    took = f" in {elapsed:.1f} s" if elapsed is not None else ""
    folder = f" of {result.root.name}" if result.root is not None else ""
    table = Table(title=f"MLPerf {result.suite} import{folder}: {len(result.outcomes)} result folders{took}")
    for column in ("stored", "known", "refused", "skipped", "held", "files not used"):
        table.add_column(column, justify="right")
    counts = result.counts
    table.add_row(
        *(str(counts.get(s, 0)) for s in ("stored", "known", "refused", "skipped", "held")),
        str(len(result.plan.skipped)),
    )
    console.print(table)


def _json_report(result: ImportResult) -> dict[str, Any]:
    report = mlperf.report_dict(result.plan, result.referee)
    report["referee_note"] = result.referee_note
    report["suite"] = result.suite
    report["folder"] = str(result.root) if result.root is not None else None
    report["registry"] = [o.__dict__ for o in result.outcomes]
    return report


def _json_reports(results: list[ImportResult]) -> str:
    """One round: its report; several: {"rounds": [each round's report]}."""
    if len(results) == 1:
        return json.dumps(_json_report(results[0]), indent=2)
    return json.dumps({"rounds": [_json_report(r) for r in results]}, indent=2)
