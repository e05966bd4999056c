"""Writing the audit log: appending events (inside the transaction of the change each records) and signing
checkpoints of its Merkle tree."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

import protocol
from protocol.signed_note import Checkpoint as NoteCheckpoint
from protocol.signed_note import sign_note
from protocol.transparency import leaf_hash
from registry.audit.keys import checkpoint_key, log_origin
from registry.choices import CheckpointReason
from registry.exceptions import RegistryError
from registry.models import AuditEntry, AuditHead, Checkpoint
from registry.selectors.audit import audit_root, checkpoint_latest


@transaction.atomic
def audit_append(*, kind: str, actor: str, subject: str, payload: dict[str, Any] | None = None) -> AuditEntry:
    """Append one event and return it.

    The head row is locked for the rest of the caller's transaction: appends are serialised, so the
    sequence has no gaps and no duplicates, and an entry exists exactly when the change it records commits.
    """
    head = AuditHead.objects.select_for_update().get(id=1)
    now = timezone.now()
    entry = protocol.canonicalize({
        "seq": head.size,
        "time": now.isoformat().replace("+00:00", "Z"),
        "actor": actor,
        "kind": kind,
        "subject": subject,
        "payload": payload or {},
    })
    row = AuditEntry.objects.create(seq=head.size, created_at=now, actor=actor, kind=kind, subject=subject,
                                    entry=entry.decode(), leaf_hash=leaf_hash(entry).hex())
    AuditHead.objects.filter(id=1).update(size=head.size + 1)
    return row


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
    size = AuditHead.objects.get(id=1).size
    key = checkpoint_key()
    latest = checkpoint_latest()
    if latest is not None and latest.size == size and latest.vkey == key.vkey and reason != CheckpointReason.REPORT:
        return latest
    root = audit_root(size=size)
    body = NoteCheckpoint(log_origin(), size, root).body()
    note = sign_note(body, key.name, key.signer.private_key).decode()
    return Checkpoint.objects.create(size=size, root_hash=root.hex(), origin=log_origin(), note=note,
                                     vkey=key.vkey, reason=reason, created_at=timezone.now())


def checkpoint_current() -> Checkpoint:
    """The checkpoint to publish now: the latest, or a new one if there is none or the log outgrew the latest
    one more than BENCHREG_CHECKPOINT_INTERVAL_S ago.

    Celery beat signs periodically in a full deployment; this keeps the embedded one (no beat) publishing too,
    at the same pace, so the write a read endpoint may cause is at most one checkpoint per interval.
    """
    latest = checkpoint_latest()
    if latest is not None:
        age = (timezone.now() - latest.created_at).total_seconds()
        if age < settings.BENCHREG_CHECKPOINT_INTERVAL_S or latest.size == AuditHead.objects.get(id=1).size:
            return latest
    return checkpoint_sign(reason=CheckpointReason.PERIODIC)
