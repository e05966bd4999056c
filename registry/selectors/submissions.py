"""Reading runs: lists for the API and catalogue, single runs with their metadata."""

from __future__ import annotations

from django.db.models import QuerySet

from registry.exceptions import NotFound
from registry.models import Submission

# Everything but the two large document columns: list pages never need them.
LIST_DEFERRED = ("document", "canonical")


def submission_list() -> QuerySet[Submission]:
    """All runs, newest first, with what list views show and without the documents themselves."""
    return Submission.objects.defer(*LIST_DEFERRED).select_related("withdrawal")


def submission_get(*, run_id: int) -> Submission:
    """One run with its withdrawal, or NotFound."""
    run: Submission | None = Submission.objects.select_related("withdrawal").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"no run {run_id}")
    return run
