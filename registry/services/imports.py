"""Importing published MLPerf results: each document goes through the same one path in as any submission (serving
tools' files: imports_serving.py; nccl-tests' logs: imports_collectives.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from registry.choices import AuditKind, Trust
from registry.importers import mlperf
from registry.importers.mlperf import published as mlperf_published
from registry.importers.mlperf import referee as mlperf_referee
from registry.importers.mlperf import training as mlperf_training
from registry.models import PublishedCitation
from registry.services.audit import audit_append
from registry.services.import_outcomes import BATCH_SIZE, ImportOutcome, outcome_counts
from registry.services.submissions import BatchOutcome, submission_create_batch


@dataclass(frozen=True)
class Referee:
    """How the published table referees an import. `published`: the table (None: summary_results.json of the
    round the tree belongs to, if it has one); `scope`: the tree's folder in the round ('closed/AMD'; None: from
    the layout); `accept_disagreements`: store the runs the table disagrees about too (they are held back
    otherwise); `enabled` False: no referee."""

    published: Path | None = None
    scope: str | None = None
    accept_disagreements: bool = False
    enabled: bool = True


@dataclass
class ImportResult:
    plan: mlperf.ImportPlan
    outcomes: list[ImportOutcome]
    suite: str = "inference"
    referee: mlperf_referee.RefereeReport | None = None
    referee_note: str = ""  # why there is no referee report
    root: Path | None = None  # the folder imported

    @property
    def counts(self) -> dict[str, int]:
        return outcome_counts(self.outcomes)

    def render(self) -> str:
        lines = [mlperf.render_report(self.plan, self.referee), "", "registry:"]
        for o in self.outcomes:
            where = f" as run {o.run_id} ({o.digest})" if o.run_id else ""
            lines.append(f"  {o.key}: {o.status}{where}")
            lines.extend(f"      - {e}" for e in [*o.errors, *([o.note] if o.note else [])])
        lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items())))
        if self.referee_note:
            lines.append(f"  not refereed: {self.referee_note}")
        return "\n".join(lines)


def mlperf_import(
    *,
    root: Path,
    submitted_by: User,
    round_name: str | None = None,
    suite: str = "auto",
    batch_size: int = BATCH_SIZE,
    progress: Callable[[int, int], None] | None = None,
    referee: Referee | None = None,
) -> ImportResult:
    """Import an MLPerf Inference or Training tree (a whole round, a division, a submitter or one system).

    Every document is validated and stored by `submission_create_batch`, the API's batch path. Runs are stored in
    batches of `batch_size`, one transaction each (with a savepoint per run, so a refused run stores
    nothing and the rest of its batch is kept); importing the same tree again stores nothing new.
    `progress(done, total)` is called after each result folder. `suite` is 'inference', 'training' or 'auto'
    (training when the tree holds results/<system>/<benchmark>/result_<n>.txt files).

    Before anything is stored, the round's published table (`referee`, docs/mlperf-import.md) is compared with
    every document; a run it disagrees about is held back ("held"), unless `referee.accept_disagreements`.
    Raises mlperf_published.PublishedTableError when the table cannot be read: nothing is stored then.
    """
    if suite == "auto":
        suite = "training" if mlperf_training.is_training_tree(root) else "inference"
    parser = mlperf_training.parse_tree if suite == "training" else mlperf.parse_tree
    options = referee or Referee()
    table, note = _published_table(root, suite, options)  # a table that cannot be read stops the import here
    plan = parser(root, round_name=round_name)
    report = _referee(plan, root, table, options)
    held = report.held if report and not options.accept_disagreements else frozenset()
    ready = [n for n, item in enumerate(plan.items) if _storable(item) and n not in held]
    tracker = _Progress(progress, len(plan.items))
    stored = _store(plan, ready, submitted_by, batch_size, lambda index, _: tracker.advance(ready[index] + 1))
    tracker.advance(len(plan.items))
    outcomes = [_held(item, n, report) if n in held else stored[n] for n, item in enumerate(plan.items)]
    cited = _cite(table, report, outcomes)
    _audit_import(submitted_by, plan, suite, outcomes, report, table, cited)
    return ImportResult(plan=plan, outcomes=outcomes, suite=suite, referee=report, referee_note=note, root=root)


class ImportRefused(Exception):
    """The options do not fit the tree (one round named for a folder holding several): nothing was read or stored."""


def mlperf_import_rounds(
    *,
    root: Path,
    submitted_by: User,
    round_name: str | None = None,
    suite: str = "auto",
    batch_size: int = BATCH_SIZE,
    progress: Callable[[int, int], None] | None = None,
    referee: Referee | None = None,
    on_round: Callable[[mlperf.RoundFolder], None] | None = None,
) -> list[ImportResult]:
    """`mlperf_import` of every round `root` holds (mlperf.round_folders): a results repository is one round; a
    folder holding an Inference and a Training round, or rounds side by side, is imported one round folder at a
    time, each with the suite of its contents and the round of its own name. `suite` other than 'auto' imports the
    round folders of that suite only. `on_round(folder)` is called before each round.

    Raises ImportRefused, before anything is read, when `round_name` or the referee's `published`/`scope` name one
    round and `root` holds several."""
    folders = mlperf_round_folders(root=root, suite=suite, round_name=round_name, referee=referee)
    options = referee or Referee()
    results = []
    for folder in folders:
        if on_round is not None:
            on_round(folder)
        own = options if folder.suite != "training" or len(folders) == 1 else Referee(enabled=options.enabled)
        results.append(
            mlperf_import(
                root=folder.path,
                submitted_by=submitted_by,
                round_name=round_name,
                suite=folder.suite if len(folders) > 1 and folder.suite else suite,
                batch_size=batch_size,
                progress=progress,
                referee=own,
            )
        )
    return results


def mlperf_round_folders(
    *, root: Path, suite: str = "auto", round_name: str | None = None, referee: Referee | None = None
) -> list[mlperf.RoundFolder]:
    """The round folders `mlperf_import_rounds` imports, in order, or ImportRefused saying why the options do not
    fit them."""
    found = mlperf.round_folders(root)
    if len(found) == 1:
        return found  # one round: the importer decides the suite (`suite`) and says what is missing
    chosen = [f for f in found if suite == "auto" or f.suite == suite]
    names = ", ".join(f"{f.path.relative_to(root).as_posix()} ({f.suite})" for f in found)
    if not chosen:
        raise ImportRefused(f"{root} holds no MLPerf {suite} round: it holds {names}")
    if round_name:
        raise ImportRefused(
            f"--round {round_name} names one round, but {root} holds {len(found)}: {names}. Leave --round out (each "
            "round is read from its own folder's name) or import one folder at a time"
        )
    inference = [f for f in chosen if f.suite == "inference"]
    if referee is not None and (referee.published or referee.scope) and len(inference) > 1:
        raise ImportRefused(
            f"--published and --published-scope referee one round, but {root} holds {len(inference)} Inference "
            f"rounds ({names}): import one folder at a time"
        )
    return chosen


def _storable(item: mlperf.ImportItem) -> bool:
    return not item.skipped and item.document is not None


@dataclass(frozen=True)
class _Table:
    """The published table an import is refereed against, read before the tree is: where it lies in the round,
    its rows and the digest of its bytes (cited with each run it publishes)."""

    found: mlperf_published.Found
    rows: list[mlperf_published.PublishedRow]
    digest: str


def _published_table(root: Path, suite: str, options: Referee) -> tuple[_Table | None, str]:
    """The round's table, or None and why there is none. Raises PublishedTableError (nothing read, nothing
    stored) for a table that cannot be read or whose form the importer does not know."""
    if not options.enabled:
        return None, "the referee was turned off (--published none)"
    if suite == "training":
        if options.published:
            raise mlperf_published.PublishedTableError(
                "MLPerf Training results repositories publish no results table: --published is for Inference"
            )
        return None, "MLPerf Training results repositories publish no results table"
    if options.published:
        found = mlperf_published.Found(options.published, mlperf_published.scope_of(root))
    else:
        looked = mlperf_published.find_table(root)
        if looked is None:
            return None, f"no {mlperf_published.TABLE_NAME} in the tree or its round's root (--published names one)"
        found = looked
    text = mlperf_published.read_table_bytes(Path(found.table))  # read once: parsed and cited by its digest
    rows = mlperf_published.parse_table(Path(found.table).name, text)
    return _Table(found, rows, "sha256:" + hashlib.sha256(text).hexdigest()), ""


def _referee(
    plan: mlperf.ImportPlan, root: Path, table: _Table | None, options: Referee
) -> mlperf_referee.RefereeReport | None:
    if table is None:
        return None
    scope = table.found.scope if options.scope is None else options.scope.strip("/")
    return mlperf_referee.referee(
        plan, table.rows, root=root, scope=scope, wrapper=table.found.wrapper, table=str(table.found.table)
    )


def _cite(table: _Table | None, report: mlperf_referee.RefereeReport | None, outcomes: list[ImportOutcome]) -> int:
    """A citation (MLCommons' result ID, audit ID, Details link, retrieval date) for every stored or known run
    whose published row the referee matched; one per run and table, so importing again adds none. Returns how
    many were added."""
    if table is None or report is None:
        return 0
    cited = {
        (run_id, row.published_location or row.location): row
        for index, row in report.matched.items()
        if (run_id := outcomes[index].run_id) is not None
    }
    with transaction.atomic():
        known = set(
            PublishedCitation.objects.filter(
                table_digest=table.digest, submission_id__in={run for run, _ in cited}
            ).values_list("submission_id", "location")
        )
        now, name = timezone.now(), Path(table.found.table).name[:100]
        new = [_citation(run, location, row, table.digest, name, now) for (run, location), row in cited.items()]
        PublishedCitation.objects.bulk_create([c for c in new if (c.submission_id, c.location) not in known])
    return len(cited) - len(known & set(cited))


def _citation(
    run_id: int, location: str, row: mlperf_published.PublishedRow, digest: str, table_name: str, now: Any
) -> PublishedCitation:
    cited = row.citation or mlperf_published.Citation("", "", "", "", "", "")
    return PublishedCitation(
        submission_id=run_id,
        table_digest=digest,
        location=location,
        table_name=table_name,
        round=row.version[:20],
        result_id=cited.result_id[:100],
        unique_id=cited.unique_id[:500],
        details=cited.details[:1000] if cited.details.startswith("https://") else "",
        suite=cited.suite[:40],
        division=row.division[:40],
        submitter=cited.submitter[:200],
        system=cited.system[:500],
        benchmark=row.model[:200],
        scenario=row.scenario[:40],
        retrieved_at=now,
    )


def _held(item: mlperf.ImportItem, index: int, report: mlperf_referee.RefereeReport | None) -> ImportOutcome:
    """A run the published table disagrees about: not stored, with each disagreement."""
    lines = [d.line() for d in (report.disagreements if report else []) if d.item == index]
    return ImportOutcome(item.key, "held", errors=["the published table disagrees (not stored):", *lines])


@dataclass
class _Progress:
    """Calls `report(done, total)` once per result folder, those without a document included."""

    report: Callable[[int, int], None] | None
    total: int
    done: int = 0

    def advance(self, upto: int) -> None:
        while self.report and self.done < upto:
            self.done += 1
            self.report(self.done, self.total)


def _store(
    plan: mlperf.ImportPlan,
    ready: list[int],
    submitted_by: User,
    batch_size: int,
    decided: Callable[[int, BatchOutcome], None],
) -> list[ImportOutcome]:
    """The documents go through the batch path of the API (submission_create_batch): `batch_size` to a
    transaction. `ready` are the positions of the items with a document."""
    stored = iter(
        submission_create_batch(
            documents=(cast(dict[str, Any], plan.items[n].document) for n in ready),  # ready: those with one
            submitted_by=submitted_by,
            trust=Trust.IMPORTED,
            on_outcome=decided,
            per_transaction=batch_size,
        )
    )
    chosen = set(ready)
    return [_outcome(item, next(stored) if n in chosen else None) for n, item in enumerate(plan.items)]


def _audit_import(
    submitted_by: User,
    plan: mlperf.ImportPlan,
    suite: str,
    outcomes: list[ImportOutcome],
    report: mlperf_referee.RefereeReport | None,
    table: _Table | None = None,
    cited: int = 0,
) -> None:
    counts = {s: sum(o.status == s for o in outcomes) for s in ("stored", "known", "refused", "skipped", "held")}
    with transaction.atomic():
        audit_append(
            kind=AuditKind.IMPORT_COMPLETED,
            actor=submitted_by.get_username(),
            subject=f"mlperf:{plan.round or 'unknown-round'}",
            payload={
                "source": f"mlperf-{suite}",
                "round": plan.round,
                **counts,
                "disagreements": len(report.disagreements) if report else None,
                **({"table": {"name": Path(table.found.table).name, "digest": table.digest}} if table else {}),
                "citations_added": cited,
                "runs": [o.digest for o in outcomes if o.digest],
            },
        )


def _outcome(item: mlperf.ImportItem, stored: BatchOutcome | None) -> ImportOutcome:
    if item.skipped:
        return ImportOutcome(item.key, "skipped", errors=[item.skipped])
    if stored is None:
        return ImportOutcome(item.key, "refused", errors=list(item.errors))
    if stored.run is None:
        exc = stored.error
        assert exc is not None
        details = [f"{e.get('pointer')}: {e.get('message')}" for e in exc.errors] or [exc.message]
        return ImportOutcome(item.key, "refused", errors=details)
    return ImportOutcome(item.key, stored.status, stored.run.pk, stored.run.digest, note=stored.note)
