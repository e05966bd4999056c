"""Importing published results: each document goes through the same one path in as any submission."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from registry.choices import AuditKind, Trust
from registry.exceptions import RegistryError
from registry.importers import mlperf, mlperf_training
from registry.services.audit import audit_append
from registry.services.submissions import submission_create

BATCH_SIZE = 200  # runs stored per transaction in a whole-round import


@dataclass
class ImportOutcome:
    """What became of one result folder: stored, known (already imported), refused or skipped, and why."""

    key: str
    status: str
    run_id: int | None = None
    digest: str | None = None
    errors: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    plan: mlperf.ImportPlan
    outcomes: list[ImportOutcome]
    suite: str = "inference"

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for outcome in self.outcomes:
            out[outcome.status] = out.get(outcome.status, 0) + 1
        return out

    def render(self) -> str:
        lines = [mlperf.render_report(self.plan), "", "registry:"]
        for o in self.outcomes:
            where = f" as run {o.run_id} ({o.digest})" if o.run_id else ""
            lines.append(f"  {o.key}: {o.status}{where}")
            lines.extend(f"      - {e}" for e in o.errors)
        lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items())))
        return "\n".join(lines)


def mlperf_import(*, root: Path, submitted_by: AbstractBaseUser, round_name: str | None = None,
                  suite: str = "auto", batch_size: int = BATCH_SIZE,
                  progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Import an MLPerf Inference or Training tree (a whole round, a division, a submitter or one system).

    Every document is validated and stored by `submission_create`, like any other run. Runs are stored in
    batches of `batch_size`, one transaction each (with a savepoint per run, so a refused run stores
    nothing and the rest of its batch is kept); importing the same tree again stores nothing new.
    `progress(done, total)` is called after each result folder. `suite` is 'inference', 'training' or 'auto'
    (training when the tree holds results/<system>/<benchmark>/result_<n>.txt files).
    """
    if suite == "auto":
        suite = "training" if mlperf_training.is_training_tree(root) else "inference"
    parser = mlperf_training.parse_tree if suite == "training" else mlperf.parse_tree
    plan = parser(root, round_name=round_name)
    outcomes: list[ImportOutcome] = []
    total = len(plan.items)
    for start in range(0, total, batch_size):
        with transaction.atomic():
            for item in plan.items[start:start + batch_size]:
                outcomes.append(_store(item, submitted_by))
                if progress:
                    progress(len(outcomes), total)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("stored", "known", "refused", "skipped")}
    with transaction.atomic():
        audit_append(kind=AuditKind.IMPORT_COMPLETED, actor=submitted_by.get_username(),
                     subject=f"mlperf:{plan.round or 'unknown-round'}",
                     payload={"source": f"mlperf-{suite}", "round": plan.round, **counts,
                              "runs": [o.digest for o in outcomes if o.digest]})
    return ImportResult(plan=plan, outcomes=outcomes, suite=suite)


def _store(item: mlperf.ImportItem, submitted_by: AbstractBaseUser) -> ImportOutcome:
    if item.skipped:
        return ImportOutcome(item.key, "skipped", errors=[item.skipped])
    if item.document is None:
        return ImportOutcome(item.key, "refused", errors=list(item.errors))
    try:
        with transaction.atomic():  # a savepoint: a refused run leaves its batch intact
            # The one call into the normal submission path (validation, canonical form, audit, catalogue).
            run, created = submission_create(document=item.document, submitted_by=submitted_by,
                                             trust=Trust.IMPORTED)
    except RegistryError as exc:
        details = [f"{e.get('pointer')}: {e.get('message')}" for e in exc.errors] or [exc.message]
        return ImportOutcome(item.key, "refused", errors=details)
    return ImportOutcome(item.key, "stored" if created else "known", run.pk, run.digest)
