"""Reads for the audit log's pages: a page of entries newest first, the latest checkpoints with their
cosignatures, and the ids behind the subjects a page shows. Every read is bounded by a page size: entries are
paged by keyset on `seq` (no OFFSET, no COUNT over the log), and subjects are looked up in one query per table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from registry.models import AuditEntry, Checkpoint, Comparison, Submission

ENTRY_COLUMNS = ("seq", "created_at", "actor", "kind", "subject", "entry", "leaf_hash", "format")


@dataclass(frozen=True)
class EntryPage:
    """Entries newest first; `newer`/`older` say whether the log holds more matching entries on either side."""

    entries: list[AuditEntry]
    newer: bool
    older: bool


def audit_entry_page(
    *, size: int, kind: str | None = None, subject: str | None = None, before: int | None = None,
    after: int | None = None,
) -> EntryPage:  # fmt: skip
    """Up to `size` entries, newest first: those numbered below `before`, or the first ones above `after`
    (a reader paging back towards the newest), or the newest. One query (size + 1 rows)."""
    entries = AuditEntry.objects.only(*ENTRY_COLUMNS)
    if kind:
        entries = entries.filter(kind=kind)
    if subject:
        entries = entries.filter(subject=subject)
    if after is not None:
        rows = list(entries.filter(seq__gt=after).order_by("seq")[: size + 1])
        more = len(rows) > size
        return EntryPage(list(reversed(rows[:size])), newer=more, older=True)
    if before is not None:
        entries = entries.filter(seq__lt=before)
    rows = list(entries.order_by("-seq")[: size + 1])
    return EntryPage(rows[:size], newer=before is not None, older=len(rows) > size)


def audit_entries_of(*, subject: str, limit: int) -> list[AuditEntry]:
    """The first `limit` entries about one subject, in log order (a run has one or two)."""
    return list(AuditEntry.objects.only(*ENTRY_COLUMNS).filter(subject=subject).order_by("seq")[:limit])


def checkpoints_recent(*, count: int) -> list[Checkpoint]:
    """The latest `count` checkpoints, newest first, each with its cosignatures (two queries)."""
    return list(Checkpoint.objects.order_by("-id").prefetch_related("cosignatures")[:count])


def subject_ids(subjects: Iterable[str]) -> dict[str, dict[str, Any]]:
    """For digests among `subjects`: {digest: {"run": id}} or {"comparison": id}. At most two queries."""
    digests = {s for s in subjects if s.startswith("sha256:")}
    if not digests:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for digest, pk in Submission.objects.filter(digest__in=digests).values_list("digest", "pk"):
        found[digest] = {"run": pk}
    rest = digests - set(found)
    if rest:
        for digest, pk in Comparison.objects.filter(digest__in=rest).values_list("digest", "pk"):
            found[digest] = {"comparison": pk}
    return found


def run_digest(*, run_id: int) -> str | None:
    """A run's digest (public: its `run.submitted` entry names it), None if there is no such run."""
    return Submission.objects.filter(pk=run_id).values_list("digest", flat=True).first()
