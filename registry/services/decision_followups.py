"""What follows a decision's answer: a signed report of it, and a benchmark plan that fills a candidate's gaps."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction

from protocol import comparability
from registry.choices import AuditKind, DecisionStatus, Trust
from registry.exceptions import RegistryError
from registry.models import Agent, Decision, DecisionAnswer, DecisionReport, Plan, Report, Submission
from registry.selectors.decisions import decision_latest_answer
from registry.services.audit import audit_append
from registry.services.comparisons import comparison_create
from registry.services.decisions import decision_answer, decision_fresh, decision_question
from registry.services.plans import plan_create
from registry.services.reports import report_quota_problem, report_request, report_signing_problem


def decision_report_text(answer: dict[str, Any]) -> str:
    """The report's decision statement: the question, then each candidate's verdict with its caveats in the same
    sentence, and the frontier. Cut at the report's limit only between sentences (never mid-caveat)."""
    lines = [
        answer["question"],
        *answer["summary"],
        f"Pareto frontier over {', '.join(answer['frontier']['criteria']) or 'no criterion'}: "
        f"{'; '.join(answer['frontier']['labels']) or 'empty'}.",
    ]
    text = ""
    for line in lines:
        if len(text) + len(line) + 1 > 1900:
            return text + " (more candidates in the evidence)"
        text += ("\n" if text else "") + line
    return text


# The axes a decision report's comparison may stand on, in this order: decisions are answered at equal quality;
# runs that measured no quality (a served model's load sweep) answer a question that states no quality target, and
# their report compares them on the first of the other axes that holds two of them.
REPORT_AXES = ("iso-quality", "system", "software", "precision")


@transaction.atomic  # the DecisionReport row exists before the render (on commit) looks for it in the evidence
def decision_report(*, decision: Decision, requested_by: User) -> Report:
    """Issue a signed report of the decision's latest answer (queued like any report; eager without a broker).

    The report's comparison is the largest set of the answer's runs comparable on one axis (`_report_comparison`);
    its decision statement is the question and the answer. A decision whose evidence changed is answered again
    first: the new report is what is known now, and earlier reports stay verifiable as what was known then.
    """
    latest = _answered_now(decision, requested_by)
    if latest is None:
        raise _not_enough("the decision has no answer yet")
    axis, compared, cited = _report_comparison(latest.answer)
    text = _statement(latest.answer, axis=axis, compared=len(compared), cited=cited)
    comparison, _ = comparison_create(runs=compared, axis=axis, created_by=requested_by)
    report = report_request(comparison=comparison, title=decision.title[:200], decision=text, requested_by=requested_by)
    DecisionReport.objects.create(decision=decision, answer=latest, report=report)
    audit_append(
        kind=AuditKind.DECISION_REPORTED,
        actor=requested_by.get_username(),
        subject=f"decision:{decision.pk}",
        payload={"decision": decision.pk, "answer": latest.number, "report": report.pk},
    )
    return report


def decision_report_refusal(*, decision: Decision, requested_by: User) -> str | None:
    """Why a signed report of the decision's answer would be refused now, in words; None when it would be issued.

    Reads only, with the checks `decision_report` and `report_request` make before they write: an answer with
    candidates, two of its runs comparable on one axis (the report's comparison), no example run among them, a
    usable signing identity, and room in the requester's queue. The decision page offers "Issue a signed report"
    only where this is None, and says why otherwise, instead of letting a reader submit and fail."""
    latest = decision_latest_answer(decision=decision)
    if latest is None or not latest.answer.get("candidates"):
        return "no run answers this question yet, so there is nothing to report"
    try:
        axis, compared, _ = _report_comparison(latest.answer)
        verdict = comparability.check([r.document for r in compared], axis)
        if not verdict.comparable:
            differing = "; ".join(d.words for d in verdict.offending[:3])
            return f"the answer's runs do not answer the same question ({differing}), so no report can rest on them"
        _check_members(compared)
        return report_signing_problem() or report_quota_problem(requested_by)
    except RegistryError as exc:
        return exc.message.rstrip(".")  # the page ends the sentence


def _check_members(runs: list[Submission]) -> None:
    """RegistryError naming the example documents among `runs`: a report never rests on one."""
    examples = [r.pk for r in runs if r.trust == Trust.EXAMPLE]
    if examples:
        raise RegistryError(
            f"run(s) {', '.join(map(str, examples))} are example documents, and a report cannot rest on them",
            code="example-run",
            status=422,
        )


def _statement(answer: dict[str, Any], *, axis: str, compared: int, cited: int) -> str:
    text = decision_report_text(answer)
    if compared < cited:
        text = text[:1750] + (
            f"\nThe runs compared in this report are {compared} of the {cited} the answer rests on: the others are "
            f"not comparable with them on the {comparability.axis_label(axis)} axis."
        )
    return text


def _answered_now(decision: Decision, requested_by: User) -> DecisionAnswer | None:
    """The decision's latest answer, answered again first when its evidence changed."""
    # Concurrent reports of one decision queue on its row and read it again once they hold it: the first one in
    # answers it again, the others find it current and report that answer instead of answering once more each.
    Decision.objects.select_for_update().filter(pk=decision.pk).exists()
    decision.refresh_from_db()
    decision_fresh(decision=decision)
    if decision.status == DecisionStatus.EVIDENCE_CHANGED or decision.recompute_error:
        decision_answer(decision=decision, actor=requested_by.get_username())
    return decision_latest_answer(decision=decision)


def _report_comparison(answer: dict[str, Any]) -> tuple[str, list[Submission], int]:
    """The axis and the runs of the report's comparison, and how many runs the answer rests on.

    Candidates of one question may differ in a controlled field (another dataset size, another latency
    constraint), and a sweep's levels differ in their load. The comparison is the largest set of runs comparable
    on the first axis of REPORT_AXES that holds two: among the runs each candidate is read at first, then among
    every run the answer rests on (every level of a sweep, so levels of two sweeps at one load)."""
    candidates = answer["candidates"]
    read_ids = {r["id"] for c in candidates for r in c["runs"]}
    levels = [level for c in candidates for level in (c.get("sweep") or {}).get("levels") or []]
    # a withdrawn run is never in a report: an answer citing one is answered again first (_answered_now)
    every = list(
        Submission.objects.filter(
            pk__in=read_ids | {r["id"] for lv in levels for r in lv["runs"]}, withdrawal__isnull=True
        ).order_by("id")
    )
    read_at = [r for r in every if r.pk in read_ids]
    for pool in (read_at, every):
        for axis in REPORT_AXES:
            group = _largest_group(pool, axis, read_ids)
            if len(group) >= 2:
                return axis, group, len(every)
    raise _not_enough(
        f"a decision report needs at least two of the answer's runs comparable on one axis; its {len(every)} "
        "run(s) are not (a single run, or one sweep measured once per load: measure a level again, or another "
        "candidate, and report again)"
    )


def _largest_group(runs: list[Submission], axis: str, read_ids: set[int]) -> list[Submission]:
    """The largest set of `runs` with one comparability key on `axis` that meet the axis's requirements; of equal
    sets, the one holding most runs a candidate is read at (a sweep's knee), then the earliest."""
    column = Submission.KEY_COLUMNS[axis]
    groups: dict[str, list[Submission]] = {}
    for run in runs:
        if comparability.meets_requirements(run.document, axis):
            groups.setdefault(getattr(run, column), []).append(run)
    return max(groups.values(), key=lambda g: (len(g), sum(r.pk in read_ids for r in g)), default=[])


def _not_enough(message: str) -> RegistryError:
    return RegistryError(message, code="not-enough-evidence", status=422)


def decision_gap_plan(
    *,
    decision: Decision,
    candidate: str,
    agents: list[Agent],
    created_by: User,
    repetitions: int = 3,
    options: dict[str, Any] | None = None,
) -> Plan:
    """Turn a missing or weak candidate configuration into a benchmark plan for enrolled agents.

    The plan runs the question's workload and scenario with the candidate's precision and batch size, at least
    `repetitions` times (3: what an interval needs). Its runs are stored like any run, and a run that enters the
    question flags the decision ("evidence changed"), so re-answering takes them in.
    """
    found = _candidate(decision, candidate)
    plan = plan_create(
        created_by=created_by,
        agents=agents,
        options=options,
        **_candidate_plan_fields(decision, candidate, found["configuration"], repetitions),
    )
    _audit_planned(created_by, decision, candidate, plan, [g["code"] for g in found["gaps"]])
    return plan


def _audit_planned(created_by: User, decision: Decision, candidate: str, plan: Plan, gaps: list[str]) -> None:
    audit_append(
        kind=AuditKind.DECISION_PLANNED,
        actor=created_by.get_username(),
        subject=f"decision:{decision.pk}",
        payload={"decision": decision.pk, "gap": candidate, "plan": plan.pk, "gaps": gaps},
    )


def _candidate(decision: Decision, candidate: str) -> dict[str, Any]:
    """The latest answer's candidate labelled `candidate`, or a 400."""
    latest = decision_latest_answer(decision=decision)
    found = next((c for c in (latest.answer["candidates"] if latest else []) if c["label"] == candidate), None)
    if found is None:
        raise RegistryError(
            f"decision {decision.pk} has no candidate {candidate!r}",
            code="unknown-candidate",
            errors=[{"pointer": "/candidate", "message": "one of the answer's candidate labels"}],
        )
    return cast(dict[str, Any], found)


def _candidate_plan_fields(
    decision: Decision, candidate: str, config: dict[str, Any], repetitions: int
) -> dict[str, Any]:
    """plan_create's arguments that run the question's workload and scenario in the candidate's configuration."""
    question = decision_question(decision.question)
    return {
        "runner": question.phase,
        "workload": question.workload,
        "precisions": [str(config.get("precision.weights") or "fp32")],
        "batch_sizes": [config.get("workload.shape.batch_size")],
        "scenario": question.scenario,
        "repetitions": max(3, repetitions),
        "name": f"decision {decision.pk}: {candidate}"[:200],
    }
