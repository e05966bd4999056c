"""Files a run's document names in `provenance.artifacts` (a serving level's per-request export), kept by the
registry once their bytes were uploaded and checked against what the document names."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .immutable import AppendOnlyModel
from .submissions import Submission


class RunArtifact(AppendOnlyModel):
    """One stored artifact of one run: the document named it (name, sha256, bytes, format), someone uploaded bytes
    that hash to it. The bytes lie in the `artifacts` storage under their sha256 (`storage_name`), so two runs naming
    the same file share one copy. Evidence: never changed, never deleted."""

    run = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="artifacts")
    name = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=71, help_text="as the document names it: sha256:<64 hex>")
    bytes = models.BigIntegerField()
    format = models.CharField(max_length=100, blank=True)
    media_type = models.CharField(max_length=100, blank=True)
    stored_at = models.DateTimeField()
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    uploaded_by_name = models.CharField(max_length=150)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "sha256"], name="registry_artifact_once_per_run")]

    def __str__(self) -> str:
        return f"artifact {self.name} of run {self.run_id}"

    @property
    def storage_name(self) -> str:
        return storage_name(self.sha256)


def storage_name(sha256: str) -> str:
    """Where the bytes of `sha256:<hex>` lie in the artifacts storage."""
    hexdigest = sha256.removeprefix("sha256:")
    return f"sha256/{hexdigest[:2]}/{hexdigest}"
