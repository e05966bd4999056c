"""What an import made of each file or folder (stored, known, refused, skipped, held), shared by the importers'
services: MLPerf rounds (registry/services/imports.py), serving tools' files (imports_serving.py) and nccl-tests'
logs (imports_collectives.py). A module of its own so that one kind's import loads no other kind's importer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from registry.choices import AuditKind, Trust
from registry.services.audit import audit_append
from registry.services.submissions import BatchOutcome, submission_create_batch

BATCH_SIZE = 200  # runs stored per transaction in a whole-round import


@dataclass
class ImportOutcome:
    """What became of one result folder: stored, known (already imported), refused or skipped, and why."""

    key: str
    status: str
    run_id: int | None = None
    digest: str | None = None
    errors: list[str] = field(default_factory=list)
    note: str = ""  # what it was to a stored run of the same measurement (same source files), if anything


def outcome_counts(outcomes: list[ImportOutcome]) -> dict[str, int]:
    """How many outcomes of each status (stored, known, refused, ...) an import had."""
    return dict(Counter(outcome.status for outcome in outcomes))


def file_outcome(path: str, stored: BatchOutcome) -> ImportOutcome:
    """What became of one imported file's document in the batch path: stored or known as a run, or refused with
    each problem by its pointer."""
    if stored.run is None:
        exc = stored.error
        details = [f"{e.get('pointer')}: {e.get('message')}" for e in exc.errors] if exc else []
        return ImportOutcome(path, "refused", errors=details or [str(exc)])
    return ImportOutcome(path, stored.status, stored.run.pk, stored.run.digest, note=stored.note)


def store_declared_files(
    files: Sequence[tuple[str, dict[str, Any]]], *, submitted_by: User, source: str, subject: str
) -> list[ImportOutcome]:
    """Store each (path, document) of a tool's files through the API's batch path with trust `declared`, one outcome
    per file, and record the import in the audit log (`source`, the counts and the runs' digests) under `subject`."""
    stored = submission_create_batch(
        documents=(document for _, document in files), submitted_by=submitted_by, trust=Trust.DECLARED
    )
    outcomes = [file_outcome(path, outcome) for (path, _), outcome in zip(files, stored, strict=True)]
    with transaction.atomic():
        audit_append(
            kind=AuditKind.IMPORT_COMPLETED,
            actor=submitted_by.get_username(),
            subject=f"{source}:{subject}"[:200],
            payload={
                "source": source,
                **{s: sum(o.status == s for o in outcomes) for s in ("stored", "known", "refused")},
                "runs": [o.digest for o in outcomes if o.digest],
            },
        )
    return outcomes
