"""Reading decisions."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from protocol import decisions as dec
from protocol.decisions.training import TRAINING_SCENARIOS
from registry.choices import Trust
from registry.exceptions import NotFound
from registry.models import Decision, DecisionAnswer, Submission
from registry.models.fields import loads_stored


def decision_list(*, owner_id: int | None = None) -> QuerySet[Decision]:
    """Decisions, newest first; only one owner's when `owner_id` is given."""
    decisions = Decision.objects.select_related("owner")
    return decisions.filter(owner_id=owner_id) if owner_id is not None else decisions


def decision_get(*, decision_id: int) -> Decision:
    decision = Decision.objects.select_related("owner").filter(pk=decision_id).first()
    if decision is None:
        raise NotFound(f"no decision {decision_id}")
    return decision


def decision_runs_trust(*, answer: dict[str, Any]) -> dict[int, str]:
    """The trust level of every run an answer's candidates cite, by run id (answers stored before their references
    carried trust have only the ids)."""
    ids = {r["id"] for c in answer.get("candidates") or [] for r in c.get("runs") or [] if isinstance(r.get("id"), int)}
    return dict(Submission.objects.filter(pk__in=ids).values_list("pk", "trust"))


def decision_latest_answer(*, decision: Decision) -> DecisionAnswer | None:
    """The decision's latest answer (the highest number), or None before its first."""
    return decision.answers.order_by("-number").first()


def decision_candidate_runs(*, question: dec.Question | dec.TrainingQuestion) -> list[Submission]:
    """The stored, not withdrawn runs of the question's phase, workload and scenario, documents and trust loaded, each
    measurement once (Submission.objects.not_superseded: the newest document of it). Example documents (trust
    "example") measure nothing and never answer a decision; derived runs are left out by protocol.decisions, which
    says why."""
    # A training question is answered by time-to-quality runs and by throughput runs (the latter with their gap).
    scenarios = TRAINING_SCENARIOS if isinstance(question, dec.TrainingQuestion) else (question.scenario,)
    runs = (
        Submission.objects.not_superseded()
        .filter(
            phase=question.phase,
            workload_name=question.workload,
            scenario_kind__in=scenarios,
            withdrawal__isnull=True,
        )
        .exclude(trust=Trust.EXAMPLE)
    )
    if question.workload_version:
        runs = runs.filter(workload_version=question.workload_version)
    # The canonical text alone is loaded and parsed (as Submission.from_db does when both are loaded): the JSONB
    # column would be sent and parsed a second time for nothing. trust is read for every run's reference.
    loaded = list(runs.order_by("id").only("id", "digest", "trust", "canonical"))
    for run in loaded:
        run.document = loads_stored(run.canonical)
    return loaded
