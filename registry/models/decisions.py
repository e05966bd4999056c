"""Decisions: a procurement question kept as a record, its answers over time, and the runs each answer cites."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from registry.choices import DecisionStatus

from .fields import JSONField
from .immutable import AppendOnlyModel


class Decision(models.Model):
    """A question (protocol.decisions.Question in its JSON form) owned by a user.

    `status` is "current" while the latest answer still stands, "evidence-changed" once a cited run was
    withdrawn or new evidence entered the question; `change` then says what would change in the answer. The
    answers themselves are append-only (DecisionAnswer); re-answering adds one and makes the decision current.

    A stored run on the decision's workload and scenario only sets `stale_since` (one UPDATE in the submitter's
    transaction); the recompute that decides whether the run enters the question runs later, in a task or when
    the decision is next read. `recompute_error` says why the last recompute could not finish.
    """

    title = models.CharField(max_length=200)
    question = JSONField()
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="decisions")
    status = models.CharField(max_length=20, choices=DecisionStatus.choices, default=DecisionStatus.CURRENT)
    change = JSONField(null=True, blank=True, help_text="what changed and what would change in the answer")
    changed_at = models.DateTimeField(null=True, blank=True)
    webhook_url = models.URLField(max_length=500, blank=True, default="")
    webhook_secret = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="Standard Webhooks signing secret (whsec_…), shown to the owner once",
    )
    workload_name = models.CharField(max_length=200, db_index=True)
    scenario_kind = models.CharField(max_length=40)
    created_at = models.DateTimeField()
    stale_since = models.DateTimeField(
        null=True, blank=True, help_text="a run was stored on its workload since; not yet recomputed"
    )
    recompute_error = models.CharField(
        max_length=500, blank=True, default="", help_text="why the last recompute could not finish (empty: it did)"
    )

    # Not a column: the answer this process stored on this instance (registry.services.decisions), so that the
    # response showing it does not read it back. None on an instance read from the database.
    answered: DecisionAnswer | None = None

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["workload_name", "scenario_kind"], name="decision_question_key")]

    def __str__(self) -> str:
        return f"decision {self.pk}: {self.title}"


class DecisionAnswer(AppendOnlyModel):
    """One answer to a decision's question, as protocol.decisions.answer computed it from the runs then stored."""

    decision = models.ForeignKey(Decision, on_delete=models.PROTECT, related_name="answers")
    number = models.PositiveIntegerField()
    answer = JSONField()
    digest = models.CharField(max_length=71)
    created_at = models.DateTimeField()
    runs = models.ManyToManyField("registry.Submission", through="DecisionEvidence", related_name="decision_answers")

    class Meta:
        ordering = ["decision", "-number"]
        constraints = [models.UniqueConstraint(fields=["decision", "number"], name="decision_answer_number")]


class DecisionEvidence(AppendOnlyModel):
    """A run an answer cites: withdrawing it flags the decision."""

    answer = models.ForeignKey(DecisionAnswer, on_delete=models.PROTECT, related_name="evidence")
    submission = models.ForeignKey("registry.Submission", on_delete=models.PROTECT, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["answer", "submission"], name="decision_evidence_once")]


class DecisionReport(AppendOnlyModel):
    """A signed report issued from one answer of a decision (the report's comparison holds the cited runs)."""

    decision = models.ForeignKey(Decision, on_delete=models.PROTECT, related_name="reports")
    answer = models.ForeignKey(DecisionAnswer, on_delete=models.PROTECT, related_name="+")
    report = models.OneToOneField("registry.Report", on_delete=models.PROTECT, related_name="decision_record")
