"""The runs of a serving sweep: every stored, not withdrawn level that names the sweep (scenario.sweep.id)."""

from __future__ import annotations

from registry.models import Submission

MAX_LEVELS = 500  # levels (and their repetitions) read for one sweep; a sweep has tens


def sweep_runs(*, sweep_id: str) -> list[Submission]:
    """The sweep's runs, oldest first (at most MAX_LEVELS), withdrawn runs left out."""
    return list(
        Submission.objects.select_related("withdrawal")
        .filter(document__scenario__sweep__id=sweep_id, withdrawal__isnull=True)
        .order_by("pk")[:MAX_LEVELS]
    )
