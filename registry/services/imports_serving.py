"""`benchreg import serving`: serving tools' result files (aiperf, guidellm, vLLM bench serve) stored as one run per
load level, through the API's batch path with trust `declared` (docs/serving.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from registry.choices import AuditKind, Trust
from registry.importers import serving
from registry.services.audit import audit_append
from registry.services.import_outcomes import ImportOutcome, file_outcome, outcome_counts
from registry.services.submissions import submission_create_batch


@dataclass
class ServingImportResult:
    """What became of each load level of a serving import (docs/serving.md)."""

    levels: list[serving.ImportedLevel]
    outcomes: list[ImportOutcome]

    @property
    def counts(self) -> dict[str, int]:
        return outcome_counts(self.outcomes)

    def render(self) -> str:
        lines = []
        for level, o in zip(self.levels, self.outcomes, strict=True):
            load = level.document["scenario"]
            offered = (
                f"concurrency {load['concurrency']}"
                if load["concurrency"] is not None
                else f"{load['target_qps']} req/s"
            )
            where = f" as run {o.run_id} ({o.digest})" if o.run_id else ""
            lines.append(f"  {level.sweep} #{level.index} ({offered}): {o.status}{where}  [{level.path}]")
            lines.extend(f"      - {e}" for e in o.errors)
        lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items())))
        return "\n".join(lines)


def serving_import(
    *, paths: list[Path], deployment: serving.Deployment, submitted_by: User, submitter: str | None = None
) -> ServingImportResult:
    """Import serving benchmark result files: every level is read and checked first (serving.parse raises
    ServingImportError, naming the file or the deployment key, and nothing is stored); then each level goes through
    the API's batch path with trust `declared`. Importing the same files again stores nothing new ("known").

    The submitter every level states is `submitter`, else the deployment's `submitter` (its file key, or the
    --submitter flag, which wins over the file like every flag), else the importing user's name."""
    named = submitter or deployment.get("submitter") or submitted_by.get_username()
    levels = serving.parse(paths, deployment, submitter=named)
    stored = submission_create_batch(
        documents=(level.document for level in levels), submitted_by=submitted_by, trust=Trust.DECLARED
    )
    outcomes = [file_outcome(level.path, outcome) for level, outcome in zip(levels, stored, strict=True)]
    with transaction.atomic():
        audit_append(
            kind=AuditKind.IMPORT_COMPLETED,
            actor=submitted_by.get_username(),
            subject=f"serving:{','.join(sorted({level.sweep for level in levels}))}"[:200],
            payload={
                "source": "serving",
                **{s: sum(o.status == s for o in outcomes) for s in ("stored", "known", "refused")},
                "runs": [o.digest for o in outcomes if o.digest],
            },
        )
    return ServingImportResult(levels=levels, outcomes=outcomes)
