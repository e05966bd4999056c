"""`benchreg import serving`: serving tools' result files (aiperf, guidellm, vLLM bench serve) stored as one run per
load level, through the API's batch path with trust `declared` (docs/serving.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User

from registry.importers import serving
from registry.services.import_outcomes import ImportOutcome, outcome_counts, store_declared_files


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
    outcomes = store_declared_files(
        [(level.path, level.document) for level in levels],
        submitted_by=submitted_by,
        source="serving",
        subject=",".join(sorted({level.sweep for level in levels})),
    )
    return ServingImportResult(levels=levels, outcomes=outcomes)
