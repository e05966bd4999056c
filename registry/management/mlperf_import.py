"""`benchreg import mlperf`: the MLPerf kind of the import_results command (registry/management/commands/
import_results.py), with its progress bar, retries and reports. A module of its own, loaded by an MLPerf import only:
MLPerf's importers, rich and tenacity are ~0.1 s that `benchreg import serving` (issue 41: a sweep in under 2 s)
and `nccl-tests` need not load."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from registry.importers import mlperf
from registry.importers.mlperf.published import PublishedTableError
from registry.migration_state import pending_migrations
from registry.services.imports import ImportRefused, ImportResult, Referee, mlperf_import_rounds
from registry.services.tokens import user_for_token


def run(command: BaseCommand, paths: list[Path], options: dict[str, Any], *, username: str, json_out: bool) -> None:
    """`benchreg import mlperf PATH` (the import_results command's MLPerf kind): the rounds under PATH imported with a
    progress bar, retried while the database is unavailable, then the reports."""
    if len(paths) != 1:
        raise CommandError("mlperf: name one folder")
    path = paths[0]
    if not path.is_dir():
        raise CommandError(f"{path} is not a directory")
    if options["batch_size"] < 1 or options["attempts"] < 1:
        raise CommandError("--batch-size and --attempts must be at least 1")
    # the report goes to stdout, the bar to stderr; `_out` is the stream the OutputWrapper wraps
    console = Console(file=cast(TextIO, command.stderr._out), stderr=True)
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
    _write_reports(command, results, elapsed, report=options["report"], json=json_out, full=options["full"])


def _write_reports(
    command: BaseCommand, results: list[ImportResult], elapsed: float, *, report: Path | None, json: bool, full: bool
) -> None:
    if report:
        report.write_text(_json_reports(results), encoding="utf-8")
    if json:
        command.stdout.write(_json_reports(results))
    else:
        for result in results:
            command.stdout.write(result.render() if full else _problems(result))
            _summary(Console(file=cast(TextIO, command.stdout._out)), result, elapsed if len(results) == 1 else None)
        if len(results) > 1:
            command.stdout.write(f"{len(results)} rounds imported in {elapsed:.1f} s")
    failures = [line for result in results for line in _failures(result, named=len(results) > 1)]
    if failures:
        raise CommandError("\n".join(failures))


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
            retry=retry_if_exception(_transient),
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


def _transient(exc: BaseException) -> bool:
    """A database that went away, which a retry may find back; not one without the registry's tables, for which
    SQLite raises the same OperationalError ("no such table"): `benchreg import` then says to migrate."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    try:
        return not pending_migrations()
    except DatabaseError:  # it cannot even say: gone
        return True


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
