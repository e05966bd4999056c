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


def recent_sweeps(*, limit: int = 30, scan: int = 500) -> list[tuple[str, Submission]]:
    """The sweeps of the newest stored levels, newest first: (sweep id, its newest run), for a picker.

    Reads the newest `scan` levels only (one query), so a registry of many sweeps offers its recent ones.
    """
    found: dict[str, Submission] = {}
    levels = Submission.objects.filter(document__scenario__has_key="sweep", withdrawal__isnull=True).order_by("-pk")
    for run in levels.only("id", "document")[:scan]:
        sweep = (run.document.get("scenario") or {}).get("sweep") or {}
        if isinstance(sweep.get("id"), str):
            found.setdefault(sweep["id"], run)
        if len(found) >= limit:
            break
    return list(found.items())
