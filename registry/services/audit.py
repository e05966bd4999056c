"""Writing the audit log: appending events (inside the transaction of the change each records) and signing
checkpoints of its Merkle tree."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

import protocol
from protocol.audit_entries import WHO_WIDEST, entry_text
from protocol.signed_note import Checkpoint as NoteCheckpoint
from protocol.signed_note import sign_note
from registry import dispatch
from registry.audit.keys import CheckpointKey, checkpoint_key, log_origin
from registry.audit.sequencer import audit_integrate, background_sequencer, integrate_after_commit
from registry.choices import CheckpointReason
from registry.exceptions import RegistryError
from registry.models import AuditHead, AuditQueued, Checkpoint
from registry.models.copy import create_many
from registry.selectors.audit import audit_root, checkpoint_latest

log = logging.getLogger(__name__)
COSIGN_TASK = "registry.tasks.audit.request_cosignatures"


def audit_append(
    *,
    kind: str,
    actor: str,
    subject: str,
    payload: dict[str, Any] | None = None,
    time: datetime | None = None,
    actor_user: int | None = None,
    actor_token: int | None = None,
) -> AuditQueued:
    """Record one event, inside the transaction of the change it records, and return the queued row.

    `time` is when the change happened (default: now); a run passes its `submitted_at`, so its entry can be
    rebuilt from its public record. Nothing shared is locked: the event is queued (one INSERT) and numbered
    later by `audit_integrate`, which runs when this transaction commits (BENCHREG_AUDIT_SEQUENCING, see
    docs/audit.md). The queued row commits or rolls back with the change, so an entry exists exactly when its
    change commits. The entry's text (protocol.audit_entries.entry_text) is public; `actor` (a name) and
    `actor_user`/`actor_token` (the user's and API token's ids, when the change has them) stay columns, and the text
    commits to them (`who`), so `audit verify` sees them rewritten.
    """
    row = AuditQueued.objects.create(
        **_queued(
            kind=kind,
            actor=actor,
            subject=subject,
            payload=payload,
            time=time,
            actor_user=actor_user,
            actor_token=actor_token,
        )
    )
    _sequence_after()
    return row


def audit_append_many(*, events: list[dict[str, Any]]) -> list[AuditQueued]:
    """`audit_append` for many events of one transaction (a batch of runs): one multi-row INSERT. Each event is
    audit_append's keyword arguments."""
    rows = create_many(AuditQueued, [AuditQueued(**_queued(**event)) for event in events])
    _sequence_after()
    return rows


def _queued(
    *,
    kind: str,
    actor: str,
    subject: str,
    payload: dict[str, Any] | None = None,
    time: datetime | None = None,
    actor_user: int | None = None,
    actor_token: int | None = None,
) -> dict[str, Any]:
    now = time or timezone.now()
    # Built once here only to refuse an entry too large for the log in the change's own transaction, never in
    # the sequencer's (seq and the commitment at their widest, so the real entry is no longer than this one).
    entry_text(seq=10**15, time=now, kind=kind, subject=subject, payload=payload, who=WHO_WIDEST)
    return {
        "queued_at": now,
        "actor": actor,
        "actor_user": actor_user,
        "actor_token": actor_token,
        "kind": kind,
        "subject": subject,
        "payload": protocol.canonicalize(payload or {}).decode(),
    }


def _sequence_after() -> None:
    """Number the queued entries as BENCHREG_AUDIT_SEQUENCING says (docs/audit.md)."""
    mode = settings.BENCHREG_AUDIT_SEQUENCING
    if mode == "inline":
        audit_integrate()  # numbered in the change's own transaction: writers serialise (tests, one-writer setups)
    elif mode in ("commit", "background"):
        hook = integrate_after_commit if mode == "commit" else background_sequencer.wake
        if not any(pending[1] is hook for pending in connection.run_on_commit):
            transaction.on_commit(hook)  # once per transaction, however many events it records


def checkpoint_sign(*, reason: str) -> Checkpoint:
    """Sign the log's current head (size and root of entries 0..size-1) and store the signed note.

    A periodic or manual call returns the latest checkpoint instead when it already covers this size with the
    current key; a report always gets its own, so the report can name the checkpoint it was issued under.
    Called inside a report's transaction, the head includes the report's own entry (and the checkpoint rolls
    back with the report).

    Not @transaction.atomic on purpose: the only write is one INSERT, and reading the entries outside a
    transaction lets the shared Merkle tree (registry.selectors.audit) cache them, so a periodic checkpoint
    costs O(new entries). Two racing callers may both sign the same size; that is harmless.
    """
    if reason not in CheckpointReason.values:
        raise RegistryError(f"unknown checkpoint reason {reason!r}", code="invalid-reason")
    audit_integrate()  # everything committed (and, inside a report's transaction, the report's own entry)
    size = AuditHead.objects.get(id=1).size
    key = checkpoint_key()
    latest = checkpoint_latest()
    if latest is not None and latest.size == size and latest.vkey == key.vkey and reason != CheckpointReason.REPORT:
        return latest
    checkpoint = _checkpoint_create(size, key, reason)
    if settings.BENCHREG_WITNESSES and reason != CheckpointReason.REPORT:  # a report asks its witnesses itself
        transaction.on_commit(lambda: _ask_witnesses(checkpoint.pk))
    return checkpoint


def _checkpoint_create(size: int, key: CheckpointKey, reason: str) -> Checkpoint:
    """Sign the head of `size` entries with `key` and store the signed note."""
    root = audit_root(size=size)
    body = NoteCheckpoint(log_origin(), size, root).body()
    note = sign_note(body, key.name, key.signer.private_key).decode()
    return Checkpoint.objects.create(
        size=size,
        root_hash=root.hex(),
        origin=log_origin(),
        note=note,
        vkey=key.vkey,
        reason=reason,
        created_at=timezone.now(),
    )


def _ask_witnesses(checkpoint_id: int) -> None:
    """Queue the cosignature requests; with no broker the task runs here, and a failure is only logged:
    the checkpoint stands without cosignatures and the next one asks again."""
    try:
        dispatch.send(COSIGN_TASK, checkpoint_id)
    except Exception:
        log.exception("could not ask the witnesses to cosign checkpoint %s", checkpoint_id)


def checkpoint_current() -> Checkpoint:
    """The checkpoint to publish now: the latest, or a new one if there is none or the log outgrew the latest
    one more than BENCHREG_CHECKPOINT_INTERVAL_S ago.

    Celery beat signs periodically in a full deployment; this keeps the embedded one (no beat) publishing too,
    at the same pace, so the write a read endpoint may cause is at most one checkpoint per interval.
    """
    latest = checkpoint_latest()
    if latest is not None:
        age = (timezone.now() - latest.created_at).total_seconds()
        if age < settings.BENCHREG_CHECKPOINT_INTERVAL_S:
            return latest
        audit_integrate()
        if latest.size == AuditHead.objects.get(id=1).size:
            return latest
    return checkpoint_sign(reason=CheckpointReason.PERIODIC)
