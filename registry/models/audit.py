"""The audit log's rows: one entry per event, in a gapless sequence, each hashing to a Merkle leaf."""

from __future__ import annotations

from django.db import models

from .fields import BulkTextField
from .immutable import AppendOnlyModel


class AuditEntry(AppendOnlyModel):
    """One event. `entry` is the canonical JSON that was hashed; `leaf_hash` = SHA-256(0x00 || entry).

    `seq` starts at 0 so it equals the leaf index in the Merkle tree.
    """

    seq = models.BigIntegerField(unique=True)
    created_at = models.DateTimeField()
    actor = models.CharField(max_length=150)
    # Who did it, beside the name: the user's and the API token's ids (None when none). With `actor` they are what
    # a format-3 entry's `who` commits to (protocol/audit_entries.py: actor_commitment); not foreign keys, so the
    # log never blocks or cascades with the tables it records.
    actor_user = models.BigIntegerField(null=True)
    actor_token = models.BigIntegerField(null=True)
    kind = models.CharField(max_length=40, db_index=True)
    subject = models.CharField(max_length=200, db_index=True, help_text="digest or id of what it is about")
    entry = BulkTextField()  # a plain TextField that bulk-inserts faster: see fields.py
    leaf_hash = models.CharField(max_length=64)
    format = models.PositiveSmallIntegerField(
        default=2,
        help_text="entry format (registry/audit/entries.py): 1 before migration 0011 (restricted), "
        "2 since (public), 3 since 0019 (public, commits the actor)",
    )

    class Meta:
        ordering = ["seq"]
        # The audit page's kind filter reads the newest entries of one kind (kind = K AND seq < N ORDER BY seq DESC
        # LIMIT 51): one index range, where the seq index alone would walk past every entry of other kinds.
        indexes = [models.Index(fields=["kind", "seq"], name="auditentry_kind_seq")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.kind} {self.subject}"


class AuditHead(models.Model):
    """A single row holding the log's size; appenders lock it, which keeps the sequence gapless."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    size = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"audit log of {self.size} entries"


# --- entries queued by the change's transaction, sequenced in batches (registry.services.audit) -------


class AuditQueued(models.Model):
    """An event whose change has committed (or is committing) and that has no number yet.

    The change's transaction inserts it (no lock on anything shared); the sequencer (`audit_integrate`) numbers
    queued rows in id order, writes their AuditEntry rows, moves the head and deletes them, in one transaction
    per batch. `queued_at` is the entry's `time`; `payload` is its canonical JSON text (kept as text so no number
    changes spelling on the way).
    """

    id = models.BigAutoField(primary_key=True)
    queued_at = models.DateTimeField()
    actor = models.CharField(max_length=150)
    actor_user = models.BigIntegerField(null=True)
    actor_token = models.BigIntegerField(null=True)
    kind = models.CharField(max_length=40)
    subject = models.CharField(max_length=200, db_index=True)
    payload = BulkTextField()

    def __str__(self) -> str:
        return f"queued {self.kind} {self.subject}"
