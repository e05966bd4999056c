"""Decision pages: the list with the form that declares one, and one decision's answer with its badge."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from registry import policy
from registry.exceptions import RegistryError
from registry.presentation import answers, charts_serving
from registry.presentation.sweeps import sweep_lines
from registry.selectors.decisions import decision_latest_answer, decision_list, decision_runs_trust
from registry.services.decision_followups import decision_gap_plan, decision_report, decision_report_refusal
from registry.services.decisions import decision_create, decision_fresh
from registry.services.webhooks import webhook_url_problem
from registry.web.context import signed_in_user
from registry.web.forms import DecisionForm, GapPlanForm, TrainingDecisionForm


def _beside_split(candidates: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[list[dict[str, str]]]]:
    """What the contract shows beside each candidate's number, in words, split into what every candidate shares
    (said once, above the table) and, per candidate, what is its own (its row): eight identical lines per row said
    nothing."""
    shown = [answers.beside_rows(c["beside"][0]) if c.get("beside") else [] for c in candidates]
    fields = [{b["field"]: b["value"] for b in rows} for rows in shown]
    common = [
        b
        for b in (shown[0] if shown else [])
        if len(shown) > 1 and all(f.get(b["field"]) == b["value"] for f in fields)
    ]
    shared = {b["field"] for b in common}
    return common, [[b for b in rows if b["field"] not in shared] for rows in shown]


def _answer_words(answer: dict[str, Any] | None, candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer in the words the page shows: the plain conclusion the signed report's cover gives (the same
    function), each candidate's sentence and row with only its own caveats (those every candidate shares are said
    once), the frontier in sentences, and what is shown beside every candidate's figures."""
    common, own = _beside_split(candidates)
    shared = answers.shared_gap_codes(candidates)
    return {
        "conclusion": answers.conclusion(answer) if answer else None,
        "sentences": answers.candidate_sentences(answer) if answer else [],
        "shared_caveats": answers.shared_caveats(candidates),
        "shared_gaps": answers.shared_gap_titles(shared),
        "frontier_lines": answers.frontier_lines(answer.get("frontier") or {}) if answer else [],
        "rows": [(c, mine, answers.own_gap_titles(c, shared)) for c, mine in zip(candidates, own, strict=True)],
        "beside_common": common,
    }


def _decision_context(request: HttpRequest, decision: Any, plan_form: GapPlanForm | None = None) -> dict[str, Any]:
    principal = policy.for_request(request)
    latest = decision_latest_answer(decision=decision)
    can_plan = policy.can(principal, policy.PLAN_CREATE)
    trust = decision_runs_trust(answer=latest.answer) if latest else {}
    candidates = [
        {**c, "runs": [{**r, "trust": r.get("trust") or trust.get(r.get("id"), "")} for r in c.get("runs") or []]}
        for c in (latest.answer.get("candidates", []) if latest else [])
    ]
    can_report = policy.can(principal, policy.DECISION_CREATE)
    answer = latest.answer if latest else None
    return {
        "decision": decision,
        "latest": latest,
        "answer": answer,
        **_answer_words(answer, candidates),
        "can_report": can_report,
        "report_refusal": (
            decision_report_refusal(decision=decision, requested_by=signed_in_user(request))
            if can_report and answer
            else None
        ),
        "can_plan": can_plan,
        "plan_form": plan_form or (GapPlanForm() if can_plan else None),
        "plan_form_for": plan_form.data.get("candidate") if plan_form is not None else None,
        "frontier_chart": charts_serving.decision_frontier_chart(latest.answer) if latest else None,
        "sweep_lines": sweep_lines(latest.answer) if latest else [],
        "issued": decision.reports.select_related("report", "answer").order_by("-id"),
    }


def _declare(request: HttpRequest, principal: Any, form: DecisionForm | TrainingDecisionForm) -> Any:
    """The decision the posted form declares, or None with the form's errors said on it (nothing stored)."""
    if form.data.get(form.add_prefix("webhook_url")) and not policy.can(principal, policy.WEBHOOK_REGISTER):
        form.add_error("webhook_url", "only those who may submit runs may register a webhook")
    elif form.is_valid() and form.cleaned_data.get("webhook_url"):
        problem = webhook_url_problem(form.cleaned_data["webhook_url"])
        if problem:
            form.add_error("webhook_url", problem)
    if not form.is_valid():
        return None
    try:
        return decision_create(
            owner=signed_in_user(request),
            title=form.cleaned_data["title"],
            question=form.question(),
            webhook_url=form.cleaned_data.get("webhook_url") or "",
        )
    except RegistryError as exc:
        form.add_error(None, str(exc))
        return None


@login_required
@require_http_methods(["GET", "POST"])
def decisions_page(request: HttpRequest) -> HttpResponse:
    principal = policy.for_request(request)
    policy.require(principal, policy.DECISION_READ)
    # Two forms on one page: an inference question, or a training one (its fields prefixed "training-"); the one
    # posted is bound, the other shown empty.
    posted_training = request.method == "POST" and "training-phase" in request.POST
    form = DecisionForm(request.POST if request.method == "POST" and not posted_training else None)
    training_form = TrainingDecisionForm(request.POST if posted_training else None)
    status = 200
    if request.method == "POST":
        policy.require(principal, policy.DECISION_CREATE)
        decision = _declare(request, principal, training_form if posted_training else form)
        if decision is not None:
            return redirect("decision", decision_id=decision.pk)
        status = 400
    decisions = policy.visible_decisions(principal, decision_list())[:100]
    return render(
        request,
        "registry/decisions.html",
        {"form": form, "training_form": training_form, "decisions": decisions},
        status=status,
    )


@login_required
@require_GET
def decision_page(request: HttpRequest, decision_id: int) -> HttpResponse:
    decision = decision_fresh(decision=policy.decision_get(policy.for_request(request), decision_id))
    return render(request, "registry/decision.html", _decision_context(request, decision))


def _decision_for(request: HttpRequest, decision_id: int, action: str, words: str) -> Any:
    """The decision (404 unless the caller may read it), then 403 unless the caller may also do `action`."""
    principal = policy.for_request(request)
    decision = policy.decision_get(principal, decision_id)
    if not policy.can(principal, action):
        raise PermissionDenied(f"your roles do not include {words}")
    return decision


@login_required
@require_POST
def decision_report_view(request: HttpRequest, decision_id: int) -> HttpResponse:
    """Issue the signed report of the decision's answer, as `POST /api/v1/decisions/<id>/reports`."""
    decision = _decision_for(request, decision_id, policy.DECISION_CREATE, "issuing reports")
    try:
        report = decision_report(decision=decision, requested_by=signed_in_user(request))
    except RegistryError as exc:
        messages.error(request, exc.message)
        return redirect("decision", decision_id=decision.pk)
    messages.success(
        request,
        "Report requested. The comparison page shows its status until the PDF can be "
        "downloaded; the decision lists it too.",
    )
    return redirect(reverse("comparison", args=[report.comparison_id]) + f"#report-{report.pk}")


@login_required
@require_POST
def decision_plan_view(request: HttpRequest, decision_id: int) -> HttpResponse:
    """Turn a candidate's gap into a benchmark plan for chosen agents, as `POST /api/v1/decisions/<id>/plans`."""
    decision = _decision_for(request, decision_id, policy.PLAN_CREATE, "planning runs")
    form = GapPlanForm(request.POST)
    if form.is_valid():
        try:
            plan = decision_gap_plan(
                decision=decision,
                candidate=form.cleaned_data["candidate"],
                agents=list(form.cleaned_data["agents"]),
                created_by=signed_in_user(request),
                repetitions=form.cleaned_data["repetitions"],
            )
        except RegistryError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(
                request,
                f"Plan {plan.pk} dispatched {plan.jobs.count()} jobs. When their runs are "
                "stored, this decision is flagged and answered again with them.",
            )
            return redirect("jobs")
    return render(request, "registry/decision.html", _decision_context(request, decision, form), status=400)
