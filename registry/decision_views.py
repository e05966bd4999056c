"""Decision pages: the list with the form that declares one, and one decision's answer with its badge."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from protocol import decisions as dec
from protocol import sizing
from registry import policy
from registry.exceptions import RegistryError
from registry.forms import RowChoiceField
from registry.models import Agent
from registry.permissions import roles_of
from registry.selectors.decisions import decision_latest_answer, decision_list
from registry.services.decision_followups import decision_gap_plan, decision_report
from registry.services.decisions import decision_create, decision_fresh
from registry.services.webhooks import webhook_url_problem


class DecisionForm(forms.Form):
    title = forms.CharField(max_length=200)
    workload = forms.CharField(max_length=200, help_text="e.g. llama2-70b-99")
    scenario = forms.ChoiceField(choices=[("server", "server"), ("interactive", "interactive"), ("offline", "offline")])
    # The ranges are protocol.decisions' plausible ranges (docs/decisions.md), stated on the page as min/max.
    ttft_p99_ms = forms.FloatField(
        required=False, min_value=0.001, max_value=sizing.MAX_LATENCY_MS, label="p99 TTFT at most (ms)"
    )
    tpot_p99_ms = forms.FloatField(
        required=False, min_value=0.001, max_value=sizing.MAX_LATENCY_MS, label="p99 TPOT at most (ms)"
    )
    quality_target_ratio = forms.FloatField(
        required=False, min_value=0.001, max_value=1.5, label="Quality target (ratio of the reference, e.g. 0.99)"
    )
    demand = forms.FloatField(min_value=0.001, max_value=dec.MAX_DEMAND, label="Demand, sustained")
    demand_unit = forms.ChoiceField(choices=[(u, u) for u in ("tokens/s", "samples/s", "requests/s", "queries/s")])
    headroom = forms.FloatField(
        required=False, min_value=0, max_value=dec.MAX_HEADROOM, label="Headroom (spare capacity, 0.2 = 20%)"
    )
    price_per_system_hour = forms.FloatField(
        required=False, min_value=0, max_value=dec.MAX_PRICE_PER_HOUR, label="Price per system-hour (any system)"
    )
    energy_per_kwh = forms.FloatField(
        required=False, min_value=0, max_value=dec.MAX_ENERGY_PRICE_KWH, label="Energy price per kWh"
    )
    webhook_url = forms.URLField(required=False, max_length=500, assume_scheme="https", label="Webhook URL (optional)")

    def question(self) -> dict[str, Any]:
        d = self.cleaned_data
        objectives = [
            {"metric": m, "percentile": "p99", "max_ms": d[f]}
            for m, f in (("ttft_ms", "ttft_p99_ms"), ("tpot_ms", "tpot_p99_ms"))
            if d.get(f)
        ]
        prices: dict[str, Any] = {}
        if d.get("price_per_system_hour") is not None:
            prices["system_hour"] = {"*": d["price_per_system_hour"]}
        if d.get("energy_per_kwh") is not None:
            prices["energy_per_kwh"] = d["energy_per_kwh"]
        return {
            "phase": "inference",
            "workload": d["workload"],
            "scenario": d["scenario"],
            "objectives": objectives,
            **({"headroom": d["headroom"]} if d.get("headroom") else {}),
            "quality": {"target_ratio": d["quality_target_ratio"]} if d.get("quality_target_ratio") else {},
            "demand": {"value": d["demand"], "unit": d["demand_unit"]},
            "prices": prices,
        }


class GapPlanForm(forms.Form):
    """Measure a missing or weak candidate: which live agents run it, and how many times (3: what an interval needs)."""

    candidate = forms.CharField(max_length=500, widget=forms.HiddenInput)
    agents = RowChoiceField(queryset=Agent.objects.none(), widget=forms.CheckboxSelectMultiple)
    repetitions = forms.IntegerField(min_value=3, max_value=50, initial=3)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Names only: an agent's inventory, host and addresses stay behind AGENT_READ.
        self.fields["agents"].queryset = Agent.objects.filter(revoked_at__isnull=True).order_by("name")
        self.fields["agents"].label_from_instance = lambda agent: agent.name


def _beside_split(candidates: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[list[dict[str, str]]]]:
    """What the contract shows beside each candidate's number, split into what every candidate shares (said once,
    above the table) and, per candidate, what is its own (its row): eight identical lines per row said nothing."""
    shown = [c["beside"][0] if c.get("beside") else [] for c in candidates]
    fields = [{b["field"]: b["value"] for b in rows} for rows in shown]
    common = [
        b
        for b in (shown[0] if shown else [])
        if len(shown) > 1 and all(f.get(b["field"]) == b["value"] for f in fields)
    ]
    shared = {b["field"] for b in common}
    return common, [[b for b in rows if b["field"] not in shared] for rows in shown]


def _decision_context(request: HttpRequest, decision: Any, plan_form: GapPlanForm | None = None) -> dict[str, Any]:
    principal = policy.for_request(request)
    latest = decision_latest_answer(decision=decision)
    can_plan = policy.can(principal, policy.PLAN_CREATE)
    candidates = latest.answer.get("candidates", []) if latest else []
    common, own = _beside_split(candidates)
    return {
        "decision": decision,
        "latest": latest,
        "answer": latest.answer if latest else None,
        "rows": list(zip(candidates, own, strict=True)),
        "beside_common": common,
        "roles": roles_of(request.user),
        "can_report": policy.can(principal, policy.DECISION_CREATE),
        "can_plan": can_plan,
        "plan_form": plan_form or (GapPlanForm() if can_plan else None),
        "plan_form_for": plan_form.data.get("candidate") if plan_form is not None else None,
        "issued": decision.reports.select_related("report", "answer").order_by("-id"),
    }


@login_required
@require_http_methods(["GET", "POST"])
def decisions_page(request: HttpRequest) -> HttpResponse:
    principal = policy.for_request(request)
    policy.require(principal, policy.DECISION_READ)
    form = DecisionForm(request.POST or None)
    status = 200
    if request.method == "POST":
        policy.require(principal, policy.DECISION_CREATE)
        if form.data.get("webhook_url") and not policy.can(principal, policy.WEBHOOK_REGISTER):
            form.add_error("webhook_url", "only those who may submit runs may register a webhook")
        elif form.is_valid() and form.cleaned_data.get("webhook_url"):
            problem = webhook_url_problem(form.cleaned_data["webhook_url"])
            if problem:
                form.add_error("webhook_url", problem)
        if form.is_valid():
            try:
                decision = decision_create(
                    owner=request.user,
                    title=form.cleaned_data["title"],
                    question=form.question(),
                    webhook_url=form.cleaned_data.get("webhook_url") or "",
                )
                return redirect("decision", decision_id=decision.pk)
            except RegistryError as exc:
                form.add_error(None, str(exc))
        status = 400
    decisions = policy.visible_decisions(principal, decision_list())[:100]
    return render(
        request,
        "registry/decisions.html",
        {"form": form, "decisions": decisions, "roles": roles_of(request.user)},
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
        report = decision_report(decision=decision, requested_by=request.user)
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
                created_by=request.user,
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
