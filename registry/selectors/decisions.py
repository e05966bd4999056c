"""Reading decisions."""

from __future__ import annotations

from django.db.models import QuerySet

from registry.exceptions import NotFound
from registry.models import Decision


def decision_list(*, owner_id: int | None = None) -> QuerySet[Decision]:
    """Decisions, newest first; only one owner's when `owner_id` is given."""
    decisions = Decision.objects.select_related("owner")
    return decisions.filter(owner_id=owner_id) if owner_id is not None else decisions


def decision_get(*, decision_id: int) -> Decision:
    decision = Decision.objects.select_related("owner").filter(pk=decision_id).first()
    if decision is None:
        raise NotFound(f"no decision {decision_id}")
    return decision
