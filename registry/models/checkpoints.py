"""Signed checkpoints of the audit log: its size and Merkle root at a moment, in the C2SP signed-note format."""

from __future__ import annotations

from django.db import models

from registry.choices import CheckpointReason

from .immutable import AppendOnlyModel


class Checkpoint(AppendOnlyModel):
    """One signed tree head. `note` is the signed note exactly as served; the other columns are read from it.

    Append-only like the evidence: a checkpoint once published may be held by anyone, so rewriting it here would
    only hide what they can still prove. `vkey` snapshots the verifier key that signed it (keys rotate).
    """

    size = models.BigIntegerField(db_index=True)
    root_hash = models.CharField(max_length=64, help_text="hex SHA-256 Merkle root of entries 0..size-1")
    origin = models.CharField(max_length=200)
    note = models.TextField(help_text="the C2SP signed note: checkpoint body, blank line, signature line")
    vkey = models.CharField(max_length=300, help_text="verifier key string of the signing key")
    reason = models.CharField(max_length=20, choices=CheckpointReason.choices)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-id"]
        get_latest_by = "id"

    def __str__(self) -> str:
        return f"checkpoint {self.pk}: size {self.size} ({self.reason})"


class Cosignature(AppendOnlyModel):
    """A witness's C2SP tlog-cosignature on a checkpoint: the witness checked the checkpoint is consistent with
    every earlier one it cosigned for this log. `line` is the signature line appended to the note as served."""

    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.PROTECT, related_name="cosignatures")
    witness = models.CharField(max_length=200, help_text="the witness key's name")
    vkey = models.CharField(max_length=300, help_text="the witness's verifier key string (cosignature/v1)")
    line = models.CharField(max_length=400, help_text="the signature line, `— <name> <base64>`")
    timestamp = models.BigIntegerField(help_text="seconds since the epoch, as the witness signed it")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["checkpoint", "vkey"], name="one_cosignature_per_witness")]

    def __str__(self) -> str:
        return f"cosignature by {self.witness} on checkpoint {self.checkpoint_id}"
