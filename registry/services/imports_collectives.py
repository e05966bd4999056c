"""`benchreg import nccl-tests`: a cluster team's nccl-tests logs stored as collective runs (docs/interconnect.md).

Every log is read and checked first (registry/importers/nccl_tests_documents.py: a log that does not reproduce its
own printed figures is refused naming the line, side and column, and nothing is stored); then each document goes
through the API's batch path, `submission_create_batch`, with trust `declared` like the serving tools' files: the
figures are the submitter's own measurement, not a publication the registry can referee. Importing the same log
again stores nothing new ("known").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

import protocol
from registry.importers import nccl_tests_documents
from registry.services.import_outcomes import ImportOutcome, outcome_counts, store_declared_files


def _check_all(sweeps: list[nccl_tests_documents.ImportedSweep]) -> None:
    """Every document must pass the protocol before any is stored: nothing partial from one import."""
    for sweep in sweeps:
        try:
            protocol.check(sweep.document)
        except protocol.Invalid as exc:
            problems = "; ".join(f"{e.pointer}: {e.message}" for e in exc.errors)
            raise nccl_tests_documents.NcclImportError(f"{sweep.path}: the protocol refuses it: {problems}") from None


@dataclass
class NcclImportResult:
    """What became of each sweep read from the logs."""

    sweeps: list[nccl_tests_documents.ImportedSweep]
    outcomes: list[ImportOutcome]

    @property
    def counts(self) -> dict[str, int]:
        return outcome_counts(self.outcomes)

    def render(self) -> str:
        lines = []
        for sweep, o in zip(self.sweeps, self.outcomes, strict=True):
            block = sweep.document["metrics"]["collectives"]
            where = f" as run {o.run_id} ({o.digest})" if o.run_id else ""
            what = f"{block['collective']} {block['dtype']} over {block['ranks']} ranks, {len(block['sizes'])} sizes"
            lines.append(f"  {sweep.path}: {what}: {o.status}{where}")
            lines.extend(f"      - {e}" for e in [*o.errors, *([o.note] if o.note else [])])
        lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items())))
        return "\n".join(lines)


def nccl_tests_import(
    *,
    paths: list[Path],
    submitted_by: User,
    system: dict[str, Any] | None = None,
    collective: str | None = None,
    submitter: str | None = None,
) -> NcclImportResult:
    """Import nccl-tests logs; raises nccl_tests_documents.NcclImportError (nothing stored) for a log it refuses."""
    named = submitter or submitted_by.get_username()
    sweeps = nccl_tests_documents.read(paths, system=system, submitter=named, collective=collective)
    _check_all(sweeps)
    outcomes = store_declared_files(
        [(sweep.path, sweep.document) for sweep in sweeps],
        submitted_by=submitted_by,
        source="nccl-tests",
        subject=",".join(sorted({p.name for p in paths})),
    )
    return NcclImportResult(sweeps=sweeps, outcomes=outcomes)
