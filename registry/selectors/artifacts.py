"""The files a run's document names in `provenance.artifacts`, and which of them the registry keeps."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from registry.models import RunArtifact, Submission


def named_artifacts(document: Any) -> list[dict[str, Any]]:
    """The artifacts a document names (`provenance.artifacts`), as they are written there."""
    provenance = document.get("provenance") if isinstance(document, dict) else None
    named = provenance.get("artifacts") if isinstance(provenance, dict) else None
    return [a for a in named or [] if isinstance(a, dict) and isinstance(a.get("sha256"), str)]


def named_artifact(run: Submission, sha256: str) -> dict[str, Any] | None:
    return next((a for a in named_artifacts(run.document) if a["sha256"] == sha256), None)


def artifact_path(run_id: int, sha256: str) -> str:
    """The API path that downloads (and uploads) the run's artifact `sha256`."""
    return reverse("api-submission-artifact", args=[run_id, sha256.removeprefix("sha256:")])


def run_artifacts(run: Submission) -> list[dict[str, Any]]:
    """Each artifact the run's document names, in its order: name, sha256, bytes, format, media_type as named;
    `stored` (whether the registry keeps its bytes), and for a stored one `path` (its download) and `stored_at`."""
    kept = {a.sha256: a for a in RunArtifact.objects.filter(run=run)}
    out = []
    for named in named_artifacts(run.document):
        row = kept.get(named["sha256"])
        out.append(
            {
                "name": named.get("name"),
                "sha256": named["sha256"],
                "bytes": named.get("bytes"),
                "format": named.get("format"),
                "media_type": named.get("media_type"),
                "stored": row is not None,
                "path": artifact_path(run.pk, row.sha256) if row is not None else None,
                "stored_at": row.stored_at.isoformat() if row is not None else None,
            }
        )
    return out
