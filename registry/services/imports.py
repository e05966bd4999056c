"""Importing published results: each document goes through the same one path in as any submission."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from registry.choices import AuditKind, Trust
from registry.exceptions import RegistryError
from registry.importers import mlperf
from registry.services.audit import audit_append
from registry.services.submissions import submission_create


@dataclass
class ImportOutcome:
    """What became of one system × benchmark × scenario: stored, known (already imported), or refused."""

    key: str
    status: str
    run_id: int | None = None
    digest: str | None = None
    errors: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    plan: mlperf.ImportPlan
    outcomes: list[ImportOutcome]

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


def mlperf_import(*, root: Path, submitted_by: AbstractBaseUser, round_name: str | None = None) -> ImportResult:
    """Import an MLPerf Inference tree. Each valid run is stored on its own, so a broken part stores nothing
    while the valid rest is kept; importing the same tree again stores nothing new."""
    plan = mlperf.parse_tree(root, round_name=round_name)
    outcomes = [_store(item, submitted_by) for item in plan.items]
    counts = {s: sum(o.status == s for o in outcomes) for s in ("stored", "known", "refused")}
    with transaction.atomic():
        audit_append(kind=AuditKind.IMPORT_COMPLETED, actor=submitted_by.get_username(),
                     subject=f"mlperf:{plan.round or 'unknown-round'}",
                     payload={"source": "mlperf-inference", "round": plan.round, **counts,
                              "runs": [o.digest for o in outcomes if o.digest]})
    return ImportResult(plan=plan, outcomes=outcomes)


def _store(item: mlperf.ImportItem, submitted_by: AbstractBaseUser) -> ImportOutcome:
    if item.document is None:
        return ImportOutcome(item.key, "refused", errors=list(item.errors))
    try:
        run, created = submission_create(document=item.document, submitted_by=submitted_by,
                                         trust=Trust.IMPORTED)
    except RegistryError as exc:
        details = [f"{e.get('pointer')}: {e.get('message')}" for e in exc.errors] or [exc.message]
        return ImportOutcome(item.key, "refused", errors=details)
    return ImportOutcome(item.key, "stored" if created else "known", run.pk, run.digest)
