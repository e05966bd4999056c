"""Appending to the audit log. Called inside the transaction of the change it records."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

import protocol
from protocol.transparency import leaf_hash
from registry.models import AuditEntry, AuditHead


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
