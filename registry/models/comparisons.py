"""Stored comparisons: immutable, with a digest over their inputs and their result."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .fields import JSONField
from .immutable import AppendOnlyModel


class Comparison(AppendOnlyModel):
    """A like-for-like comparison of runs along an axis, as `protocol.comparability.compare` computed it.

    `canonical` is the RFC 8785 text of {"inputs": ..., "result": ...}; `digest` is its SHA-256. The same
    inputs always give the same result (bootstrap seeds derive from the data), hence the same digest.
    """

    digest = models.CharField(max_length=71, unique=True)
    # Digest of the request (inputs, contract version, statistical methods): a repeated request is a lookup.
    # "" on comparisons stored before it existed, which were computed with earlier methods and so never match.
    request_key = models.CharField(max_length=71, db_index=True, default="")
    axis = models.CharField(max_length=20)
    inputs = JSONField(help_text="run digests, axis, prices and sizing as the user gave them")
    result = JSONField()
    canonical = models.TextField()
    runs = models.ManyToManyField("registry.Submission", through="ComparisonRun", related_name="comparisons")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_by_name = models.CharField(max_length=150)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"comparison {self.pk} along {self.axis} of {len(self.inputs.get('runs', []))} runs"


class ComparisonRun(AppendOnlyModel):
    """Which runs a comparison covers, in the order the user gave them."""

    comparison = models.ForeignKey(Comparison, on_delete=models.PROTECT, related_name="members")
    submission = models.ForeignKey("registry.Submission", on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["comparison", "position"]
        constraints = [models.UniqueConstraint(fields=["comparison", "position"], name="comparison_run_position")]

    def __str__(self) -> str:
        return f"run {self.submission_id} in comparison {self.comparison_id}"
