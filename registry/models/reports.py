"""Decision reports: a comparison rendered to a signed PDF, with a lifecycle."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from registry.choices import ReportStatus

from .fields import JSONField


class Report(models.Model):
    """One requested decision report about one stored comparison.

    Not append-only: it moves queued -> rendering -> ready | failed (services.reports claims each step with a
    conditional update). Once READY, `pdf_path` (its name in the reports storage, registry/storage.py) names a
    file that is never rewritten and hashes to `pdf_digest`; `evidence_digest` is the SHA-256 of the JSON
    evidence attached inside it, and `checkpoint` the signed audit-log checkpoint its inclusion proofs are
    against. Issuing it appends a `report.issued` audit entry whose subject is `pdf_digest`.
    """

    comparison = models.ForeignKey("registry.Comparison", on_delete=models.PROTECT, related_name="reports")
    title = models.CharField(max_length=200)
    decision = models.TextField(help_text="the decision this report supports, in the requester's words")
    prices = JSONField(
        default=dict, blank=True, help_text="price per system-hour by system.name, as the requester stated them"
    )
    currency = models.CharField(max_length=3, default="USD")
    status = models.CharField(max_length=20, choices=ReportStatus.choices, default=ReportStatus.QUEUED, db_index=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reports")
    requested_by_name = models.CharField(max_length=150, help_text="username snapshotted at request")
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    pdf_path = models.CharField(
        max_length=300, blank=True, help_text="its name in the reports storage (registry/storage.py)"
    )
    pdf_digest = models.CharField(max_length=71, blank=True, db_index=True)
    pdf_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    evidence_digest = models.CharField(max_length=71, blank=True)
    checkpoint = models.ForeignKey(
        "registry.Checkpoint", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    checkpoint_size = models.BigIntegerField(null=True, blank=True)
    dedup_key = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_index=True,
        help_text="SHA-256 of (requester, comparison, title, decision): an identical "
        "request returns the report queued, rendering or ready with this key",
    )

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"report {self.pk} ({self.status}): {self.title}"
