"""Decisions: declare a procurement question, answer it from the stored runs, flag it when its evidence changes.

The arithmetic lives in protocol.decisions (pure, tested against hand-computed cases and seeded simulations);
this module selects the runs, stores answers with the runs they cite, writes the audit log and sends the
owner's signed webhook when a decision's evidence changes.

A stored run costs its submitter one UPDATE per workload and scenario, whatever the number of decisions: the
decisions of its question are marked stale (`stale_since`), and one task per question key, dispatched after the
commit, recomputes them (`decisions_recompute_stale`). A reader of a stale decision recomputes it on the spot
(`decision_fresh`). A recompute that fails is recorded on the decision (`recompute_error`), never raised to the
submitter or the reader.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Max, Value
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils import timezone

from protocol import canonical
from protocol import decisions as dec
from protocol.decisions.training import PHASE as TRAINING_PHASE
from protocol.decisions.training import SCENARIO as TRAINING_SCENARIO
from protocol.decisions.training import TRAINING_SCENARIOS
from registry import dispatch
from registry.choices import AuditKind, DecisionStatus, Trust
from registry.exceptions import RegistryError
from registry.models import Alert, Decision, DecisionAnswer, DecisionEvidence, Submission
from registry.models.fields import finite_json
from registry.selectors.decisions import decision_candidate_runs, decision_latest_answer
from registry.services.audit import audit_append
from registry.services.webhooks import webhook_enqueue, webhook_secret_new

EVENT_CHANGED = "decision.evidence_changed"
RECOMPUTE_TASK = "registry.tasks.decisions.decisions_recompute"
log = logging.getLogger(__name__)


def decision_question(data: Any) -> dec.Question | dec.TrainingQuestion:
    """The decision's question checked (protocol.decisions.Question, or TrainingQuestion for phase 'training'), or a
    422 naming the wrong field."""
    try:
        return dec.read(data)
    except dec.DecisionError as exc:
        pointer = str(exc).split(":", 1)[0] if str(exc).startswith("/") else ""
        raise RegistryError(
            f"the decision's question is wrong: {exc}",
            code="invalid-question",
            status=422,
            errors=[{"pointer": f"/question{pointer}", "message": str(exc)}],
        ) from None


def decision_evidence(runs: Iterable[Submission]) -> list[dec.Evidence]:
    """The runs as protocol.decisions reads them: each document with the reference an answer cites it by."""
    return [
        dec.Evidence(
            run.document,
            # trust travels with the run into the answer: every page and report that shows a candidate shows it
            {"id": run.pk, "digest": run.digest, "url": reverse("run", kwargs={"run_id": run.pk}), "trust": run.trust},
        )
        for run in runs
    ]


def decision_compute(*, question: dec.Question | dec.TrainingQuestion) -> tuple[dict[str, Any], list[Submission]]:
    """The answer over the runs stored now, and the runs it cites (those in a candidate configuration)."""
    runs = decision_candidate_runs(question=question)
    try:
        answer = dec.answer_question(question, decision_evidence(runs), digests_name_documents=True)  # run digests
    except dec.DecisionError as exc:  # runs of several models, or a figure left what JSON carries: say so
        pointer = str(exc).split(":", 1)[0] if str(exc).startswith("/") else ""
        raise RegistryError(
            f"the question cannot be answered from the stored runs: {exc}",
            code="unanswerable",
            status=422,
            errors=[{"pointer": f"/question{pointer}", "message": str(exc)}] if pointer else None,
        ) from None
    cited = {r["id"] for c in answer["candidates"] for r in c["runs"]}
    return answer, [r for r in runs if r.pk in cited]


@transaction.atomic
def decision_create(*, owner: User, title: str, question: dict[str, Any], webhook_url: str = "") -> Decision:
    """Store a decision and its first answer (audited). Raises RegistryError (400) naming a wrong field, 409 when
    the owner already has BENCHREG_MAX_DECISIONS_PER_USER decisions."""
    checked = decision_question(question)
    _check_title(title)
    _check_quota(owner)
    decision = Decision.objects.create(
        title=title.strip(),
        question=question,
        owner=owner,
        workload_name=checked.workload,
        scenario_kind=checked.scenario,
        webhook_url=webhook_url,
        created_at=timezone.now(),
        webhook_secret=webhook_secret_new() if webhook_url else "",
    )
    _audit_created(decision, owner, question)
    # A decision created in this transaction is current and unseen by any other: its first answer is number 1, with
    # no row lock, no highest number to read and no status to reset (decision_answer does all three).
    _store_answer(decision, 1, actor=owner.get_username())
    return decision


def _check_title(title: str) -> None:
    if not title.strip() or len(title) > 200:
        raise RegistryError(
            "a decision needs a title of at most 200 characters",
            code="invalid-question",
            errors=[{"pointer": "/title", "message": "required, at most 200 characters"}],
        )


def _audit_created(decision: Decision, owner: User, question: dict[str, Any]) -> None:
    audit_append(
        kind=AuditKind.DECISION_CREATED,
        actor=owner.get_username(),
        subject=f"decision:{decision.pk}",
        payload={"decision": decision.pk, "title": decision.title, "question": canonical.digest(question)},
    )


def _check_quota(owner: User) -> None:
    """409 when the owner already has BENCHREG_MAX_DECISIONS_PER_USER decisions."""
    # The owner's row is locked so that two concurrent requests cannot both take the last place.
    get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
    limit = settings.BENCHREG_MAX_DECISIONS_PER_USER
    if Decision.objects.filter(owner_id=owner.pk).count() >= limit:
        raise RegistryError(
            f"you already have {limit} decisions, the most one person may keep "
            "(BENCHREG_MAX_DECISIONS_PER_USER); an operator can raise it",
            status=409,
            code="too-many-decisions",
        )


@transaction.atomic
def decision_answer(*, decision: Decision, actor: str) -> DecisionAnswer:
    """Answer (or re-answer) the decision from the runs stored now; the decision is current again."""
    # The next number is taken under the decision's row lock: two answers at once would otherwise both read the
    # same highest number and the second would meet decision_answer_number.
    Decision.objects.select_for_update().filter(pk=decision.pk).exists()
    number = (decision.answers.aggregate(n=Max("number"))["n"] or 0) + 1
    stored = _store_answer(decision, number, actor=actor)
    _mark_current(decision)
    return stored


def _store_answer(decision: Decision, number: int, *, actor: str) -> DecisionAnswer:
    """Compute, store (with the runs it cites) and audit answer `number`; the caller holds the transaction. The
    stored answer is kept on the decision (`Decision.answered`): whoever shows it next in this request needs not
    read its ~170 KB back."""
    answer, cited = decision_compute(question=decision_question(decision.question))
    stored = DecisionAnswer.objects.create(
        decision=decision,
        number=number,
        answer=finite_json(answer),  # an answer holds only finite figures (protocol.decisions checks)
        digest=canonical.digest(answer),
        created_at=timezone.now(),
    )
    stored.answer = answer
    DecisionEvidence.objects.bulk_create([DecisionEvidence(answer=stored, submission=run) for run in cited])
    _audit_answered(stored, cited, actor)
    decision.answered = stored
    return stored


def _audit_answered(stored: DecisionAnswer, cited: list[Submission], actor: str) -> None:
    audit_append(
        kind=AuditKind.DECISION_ANSWERED,
        actor=actor,
        subject=f"decision:{stored.decision_id}",
        payload={
            "decision": stored.decision_id,
            "answer": stored.number,
            "digest": stored.digest,
            "cited": [r.digest for r in cited],
        },
    )


def _mark_current(decision: Decision) -> None:
    Decision.objects.filter(pk=decision.pk).update(
        status=DecisionStatus.CURRENT, change=None, changed_at=None, recompute_error=""
    )
    decision.status, decision.change, decision.changed_at, decision.recompute_error = (
        DecisionStatus.CURRENT,
        None,
        None,
        "",
    )


def _what_would_change(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The differences a reader acts on: candidates added or gone, verdicts and system counts that moved."""
    before = {c["label"]: c for c in old["candidates"]}
    after = {c["label"]: c for c in new["candidates"]}
    out = [f"{label}: no longer a candidate (its evidence is gone)" for label in before if label not in after]
    out += [
        f"{label}: a new candidate ({after[label]['meets'].replace('-', ' ')})"
        for label in after
        if label not in before
    ]
    for label in before.keys() & after.keys():
        out += _candidate_changes(label, before[label], after[label])
    if old["frontier"]["labels"] != new["frontier"]["labels"]:
        out.append(
            f"frontier: {', '.join(old['frontier']['labels']) or 'empty'} becomes "
            f"{', '.join(new['frontier']['labels']) or 'empty'}"
        )
    return sorted(out) or ["the figures move but no verdict, count or frontier changes"]


def _candidate_changes(label: str, a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What moved for a candidate in both answers: its verdict, systems needed, run count."""
    out = []
    if a["meets"] != b["meets"]:
        out.append(f"{label}: {a['meets'].replace('-', ' ')} becomes {b['meets'].replace('-', ' ')}")
    if a["systems_needed"]["value"] != b["systems_needed"]["value"]:
        out.append(f"{label}: systems needed {a['systems_needed']['value']} becomes {b['systems_needed']['value']}")
    if len(a["runs"]) != len(b["runs"]):
        out.append(f"{label}: {len(a['runs'])} run(s) become {len(b['runs'])}")
    return out


def _flag(
    decision: Decision, *, reason: str, runs: list[dict[str, Any]], actor: str, new: dict[str, Any] | None = None
) -> None:
    latest = decision_latest_answer(decision=decision)
    if new is None:
        new, _ = decision_compute(question=decision_question(decision.question))
    change = {
        "reason": reason,
        "runs": [{"id": r["id"], "digest": r["digest"]} for r in runs],
        "answer": latest.number if latest else None,
        "would_change": _what_would_change(latest.answer, new) if latest else [],
    }
    now = timezone.now()
    Decision.objects.filter(pk=decision.pk).update(
        status=DecisionStatus.EVIDENCE_CHANGED, change=change, changed_at=now
    )
    decision.status, decision.change, decision.changed_at = DecisionStatus.EVIDENCE_CHANGED, change, now
    _announce_change(decision, change, actor)


def _announce_change(decision: Decision, change: dict[str, Any], actor: str) -> None:
    """The flag's audit entry, and its webhook when the decision has one."""
    audit_append(
        kind=AuditKind.DECISION_EVIDENCE_CHANGED,
        actor=actor,
        subject=f"decision:{decision.pk}",
        payload={"decision": decision.pk, **change},
    )
    if decision.webhook_url:
        webhook_enqueue(
            url=decision.webhook_url,
            secret=decision.webhook_secret,
            event=EVENT_CHANGED,
            body={
                "decision": decision.pk,
                "title": decision.title,
                "url": reverse("decision", kwargs={"decision_id": decision.pk}),
                **change,
            },
        )


@transaction.atomic
def decisions_flag_for_runs(*, runs: Iterable[Submission], reason: str, actor: str = "registry") -> list[Decision]:
    """Flag every decision whose latest answer cites one of `runs` ("evidence changed", audited, webhook).

    Only decisions with an answer citing one of the runs are read (one query over the cited-run index), and of
    those only the ones whose *latest* answer cites it are flagged: an older answer is history, not the basis.
    """
    runs = list(runs)
    cited: dict[int, dict[int, set[int]]] = {}  # decision -> answer number -> cited run ids among `runs`
    for decision_id, number, run_id in DecisionEvidence.objects.filter(
        submission_id__in=[r.pk for r in runs]
    ).values_list("answer__decision_id", "answer__number", "submission_id"):
        cited.setdefault(decision_id, {}).setdefault(number, set()).add(run_id)
    flagged = []
    for decision in Decision.objects.select_for_update().filter(pk__in=cited).order_by("id"):
        latest = decision_latest_answer(decision=decision)
        hit = cited[decision.pk].get(latest.number) if latest is not None else None
        if hit:
            _flag(
                decision,
                reason=reason,
                runs=[{"id": r.pk, "digest": r.digest} for r in runs if r.pk in hit],
                actor=actor,
            )
            flagged.append(decision)
    return flagged


def decisions_flag_for_series_alert(*, alert: Alert) -> list[Decision]:
    """A series moved beyond its noise (registry.services.reactions.series_alert_raised): every decision citing
    one of its runs is flagged with the alert's summary."""
    runs = Submission.objects.filter(series_member__series_id=alert.series_id)
    return decisions_flag_for_runs(
        runs=runs,
        reason=f"series {alert.series_id} changed (alert {alert.pk}): run {alert.run_id} against the runs before it",
    )


def decisions_flag_for_new_runs(*, runs: list[Submission]) -> int:
    """Mark stale the decisions whose question new `runs` may enter; recompute them after the commit.

    Called for every stored run or batch, inside its transaction. Its cost does not grow with the decisions on
    the question: one UPDATE per workload and scenario of the runs (an index on both) and, when it marked any,
    one task dispatched once the transaction commits. A decision already stale (its task is pending) is left as
    it is, so concurrent submitters do not queue behind one another's row locks; one whose last recompute
    failed, or that stayed stale longer than BENCHREG_DECISION_RECOMPUTE_RETRY_S (its task was lost), is
    marked again and dispatched again. Returns how many decisions were marked.
    """
    keys = sorted({_question_key(r) for r in runs if r.trust != Trust.EXAMPLE})
    now = timezone.now()
    retry = now - timedelta(seconds=settings.BENCHREG_DECISION_RECOMPUTE_RETRY_S)
    marked = 0
    for workload, scenario in keys:
        count = _mark_stale(workload=workload, scenario=scenario, now=now, retry=retry)
        if count:
            marked += count
            # The defaults bind this iteration's key: to on_commit the lambda is a hook of no arguments.
            hook = cast(Callable[[], None], lambda w=workload, s=scenario: decisions_dispatch(workload=w, scenario=s))
            transaction.on_commit(hook, robust=True)
    return marked


def _mark_stale(*, workload: str, scenario: str, now: datetime, retry: datetime) -> int:
    """`Decision.objects.filter(Q(stale_since__isnull=True) | ~Q(recompute_error="") | Q(stale_since__lt=retry),
    workload_name=workload, scenario_kind=scenario).update(stale_since=Coalesce(F("stale_since"), Value(now)),
    recompute_error="")`, written as SQL: every submission sends it, and the ORM's compiling of it cost more than
    PostgreSQL's work (0.6 ms of a submission's ~7 ms of CPU, issue 42). Tests pin what it marks."""
    connection = transaction.get_connection()
    at, before = connection.ops.adapt_datetimefield_value(now), connection.ops.adapt_datetimefield_value(retry)
    with connection.cursor() as cursor:
        cursor.execute(_MARK_STALE_SQL, [at, before, workload, scenario])
        return int(cursor.rowcount)


_MARK_STALE_SQL = (
    f"UPDATE {Decision._meta.db_table} SET stale_since = COALESCE(stale_since, %s), recompute_error = '' "  # noqa: S608 (the model's table; values are parameters)
    "WHERE (stale_since IS NULL OR recompute_error <> '' OR stale_since < %s) "
    "AND workload_name = %s AND scenario_kind = %s"
)


def _question_key(run: Submission) -> tuple[str, str]:
    """The (workload, scenario) of the decisions a run may enter: a training run of any scenario (time to quality,
    or throughput over fixed steps) enters the training decisions, whose key is time-to-quality."""
    if run.phase == TRAINING_PHASE and run.scenario_kind in TRAINING_SCENARIOS:
        return run.workload_name, TRAINING_SCENARIO
    return run.workload_name, run.scenario_kind


def decisions_dispatch(*, workload: str, scenario: str) -> None:
    """Queue the recompute of a question key's stale decisions (run in-process without a broker). Never raises:
    the submission is stored whatever happens here, and a reader or the next run recomputes what is left."""
    try:
        dispatch.send(RECOMPUTE_TASK, workload, scenario)
    except Exception:
        log.exception("decisions on %s/%s: recompute not dispatched; readers recompute them", workload, scenario)


def decisions_recompute_stale(*, workload: str, scenario: str) -> dict[str, int]:
    """Recompute every stale decision of one question key (the task's body). Counts by outcome."""
    ids = list(
        Decision.objects.filter(
            workload_name=workload, scenario_kind=scenario, stale_since__isnull=False, recompute_error=""
        )
        .order_by("id")
        .values_list("id", flat=True)
    )
    out = {"recomputed": 0, "flagged": 0, "failed": 0}
    for decision_id in ids:
        outcome = decision_refresh(decision_id=decision_id)
        if outcome in out:
            out[outcome] += 1
    return out


def _refusal_words(exc: Exception) -> str:
    if isinstance(exc, RegistryError | dec.DecisionError):
        return str(exc)[:480]
    return f"an internal error ({type(exc).__name__}), logged for the operator; the previous answer stands"


def decision_refresh(*, decision_id: int, actor: str = "registry") -> str:
    """Recompute one stale decision: flag it if a run entered its question since its latest answer.

    The decision is claimed by clearing `stale_since` first (a conditional UPDATE), so a run stored while the
    recompute runs marks it stale again and is never missed, and two recomputes of one decision do not both
    work. The answer is computed outside any transaction (on SQLite a write transaction holds the whole database,
    and submitters would wait on every recompute); the flag is then written in a short one, after checking under
    the row lock that the decision is as it was read (another answer or flag in between: computed again there).
    Returns "recomputed" (nothing entered), "flagged", "failed" (recorded on the decision) or "skipped".
    """
    since: datetime | None = Decision.objects.filter(pk=decision_id).values_list("stale_since", flat=True).first()
    if since is None or not Decision.objects.filter(pk=decision_id, stale_since=since, recompute_error="").update(
        stale_since=None
    ):
        return "skipped"
    try:
        return "flagged" if _refresh_claimed(decision_id, actor=actor) else "recomputed"
    except Exception as exc:
        log.exception("decision %s: recompute failed", decision_id)
        Decision.objects.filter(pk=decision_id).update(
            stale_since=Coalesce(F("stale_since"), Value(since)), recompute_error=_refusal_words(exc)
        )
        return "failed"


def _refresh_claimed(decision_id: int, *, actor: str) -> bool:
    """The claimed decision's new answer, computed with no transaction open, then the flag written in one short
    transaction if nothing changed on the decision meanwhile (recomputed under the lock if something did)."""
    decision = Decision.objects.get(pk=decision_id)
    latest = decision_latest_answer(decision=decision)
    if latest is None:  # never answered (its first answer failed): answer it now, in decision_answer's transaction
        decision_answer(decision=decision, actor=actor)
        return False
    read = _state(decision, latest)
    new, _ = decision_compute(question=decision_question(decision.question))
    if not _entering(decision, latest, new):
        return False  # nothing to write: no write transaction at all
    with transaction.atomic():
        decision = Decision.objects.select_for_update().get(pk=decision_id)
        latest = decision_latest_answer(decision=decision)
        if latest is None or _state(decision, latest) != read:
            return _entered(decision, actor=actor)
        return _entered(decision, actor=actor, new=new)


def _state(decision: Decision, latest: DecisionAnswer) -> tuple[int, str, Any]:
    """What a recompute's flag rests on: the latest answer's number and the decision's status and change."""
    return latest.number, decision.status, decision.change


def _entered(decision: Decision, *, actor: str, new: dict[str, Any] | None = None) -> bool:
    """Flag `decision` when runs entered its question since its latest answer (and since its last flag). `new` is
    the answer computed now, when the caller already has it."""
    latest = decision_latest_answer(decision=decision)
    if latest is None:
        decision_answer(decision=decision, actor=actor)
        return False
    if new is None:
        new, _ = decision_compute(question=decision_question(decision.question))
    found = _entering(decision, latest, new)
    if not found:
        return False
    _flag(decision, reason=_entry_reason(found), runs=found, actor=actor, new=new)
    return True


def _entering(decision: Decision, latest: DecisionAnswer, new: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of `new` that `latest` neither cites nor leaves out, unless the decision is already flagged for
    all of them; in run order."""
    known = {r["id"] for c in latest.answer["candidates"] for r in c["runs"]}
    known |= {x["run"]["id"] for x in latest.answer.get("left_out", [])}
    entering = {r["id"]: r for c in new["candidates"] for r in c["runs"] if r["id"] not in known}
    flagged = (
        {r["id"] for r in (decision.change or {}).get("runs", [])}
        if decision.status == DecisionStatus.EVIDENCE_CHANGED
        else set()
    )
    if not entering or set(entering) <= flagged:
        return []
    return [entering[i] for i in sorted(entering)]


def _entry_reason(found: list[dict[str, Any]]) -> str:
    ids = ", ".join(str(r["id"]) for r in found[:20]) + (f" and {len(found) - 20} more" if len(found) > 20 else "")
    if len(found) == 1:
        return f"new evidence: run {ids} enters the question"
    return f"new evidence: runs {ids} enter the question"


def decision_fresh(*, decision: Decision) -> Decision:
    """The decision as it stands, recomputed first if a run marked it stale (what a reader sees). Never raises: a
    failed recompute is recorded on the decision, which then says so."""
    if decision.stale_since is not None and not decision.recompute_error:
        try:
            decision_refresh(decision_id=decision.pk, actor="registry")
        except Exception:  # the claim itself failed (database gone away): show the decision as it was
            log.exception("decision %s: lazy recompute failed", decision.pk)
            return decision
        decision.refresh_from_db()
    return decision
