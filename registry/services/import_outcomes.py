"""What an import made of each file or folder (stored, known, refused, skipped, held), shared by the importers'
services: MLPerf rounds (registry/services/imports.py), serving tools' files (imports_serving.py) and nccl-tests'
logs (imports_collectives.py). A module of its own so that one kind's import loads no other kind's importer."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from registry.services.submissions import BatchOutcome

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
