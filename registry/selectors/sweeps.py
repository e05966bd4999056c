"""The runs of a serving sweep: every stored, not withdrawn level that names the sweep (the sweep_id column)."""

from __future__ import annotations

from registry.models import Submission

MAX_LEVELS = 500  # levels (and their repetitions) read for one sweep; a sweep has tens


def sweep_runs(*, sweep_id: str) -> list[Submission]:
    """The sweep's runs, oldest first (at most MAX_LEVELS), withdrawn runs left out.

    On the indexed sweep_id column (scenario.sweep.id, stored with the run): no run's JSON is read to find them."""
    # "" is every run that is no sweep's level, not a sweep; NUL is in no stored id (the protocol refuses it in any
    # string) and PostgreSQL refuses it in a query, so a query string's %00 would end in a 500.
    if not sweep_id or "\x00" in sweep_id:
        return []
    return list(
        Submission.objects.select_related("withdrawal")
        .filter(sweep_id=sweep_id, withdrawal__isnull=True)
        .order_by("pk")[:MAX_LEVELS]
    )


def recent_sweeps(*, limit: int = 30, scan: int = 500) -> list[tuple[str, Submission]]:
    """The sweeps of the newest stored levels, newest first: (sweep id, its newest run), for a picker.

    Two queries: the sweep ids of the newest `scan` levels (the sweep_id column's partial index, no documents
    read), then the one document per sweep that labels it, so a registry of many large levels offers its recent
    sweeps cheaply.
    """
    newest: dict[str, int] = {}
    levels = Submission.objects.exclude(sweep_id="").filter(withdrawal__isnull=True).order_by("-pk")
    for pk, sweep in levels.values_list("pk", "sweep_id")[:scan]:
        newest.setdefault(sweep, pk)
        if len(newest) >= limit:
            break
    runs = Submission.objects.only("id", "document").in_bulk(list(newest.values()))
    return [(sweep, runs[pk]) for sweep, pk in newest.items() if pk in runs]
