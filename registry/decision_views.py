"""Decision pages: the list with the form that declares one, and one decision's answer with its badge."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from registry import policy
from registry.exceptions import RegistryError
from registry.permissions import roles_of
from registry.selectors.decisions import decision_list
from registry.services.decisions import decision_create, decision_latest_answer


class DecisionForm(forms.Form):
    title = forms.CharField(max_length=200)
    workload = forms.CharField(max_length=200, help_text="e.g. llama2-70b-99")
    scenario = forms.ChoiceField(choices=[("server", "server"), ("interactive", "interactive"),
                                          ("offline", "offline")])
    ttft_p99_ms = forms.FloatField(required=False, min_value=0.001, label="p99 TTFT at most (ms)")
    tpot_p99_ms = forms.FloatField(required=False, min_value=0.001, label="p99 TPOT at most (ms)")
    quality_target_ratio = forms.FloatField(required=False, min_value=0.001, max_value=1.5,
                                            label="Quality target (ratio of the reference, e.g. 0.99)")
    demand = forms.FloatField(min_value=0.001, label="Demand, sustained")
    demand_unit = forms.ChoiceField(choices=[(u, u) for u in ("tokens/s", "samples/s", "requests/s", "queries/s")])
    price_per_system_hour = forms.FloatField(required=False, min_value=0, label="Price per system-hour (any system)")
    energy_per_kwh = forms.FloatField(required=False, min_value=0, label="Energy price per kWh")
    webhook_url = forms.URLField(required=False, max_length=500, assume_scheme="https", label="Webhook URL (optional)")

    def question(self) -> dict[str, Any]:
        d = self.cleaned_data
        objectives = [{"metric": m, "percentile": "p99", "max_ms": d[f]} for m, f in
                      (("ttft_ms", "ttft_p99_ms"), ("tpot_ms", "tpot_p99_ms")) if d.get(f)]
        prices: dict[str, Any] = {}
        if d.get("price_per_system_hour") is not None:
            prices["system_hour"] = {"*": d["price_per_system_hour"]}
        if d.get("energy_per_kwh") is not None:
            prices["energy_per_kwh"] = d["energy_per_kwh"]
        return {"phase": "inference", "workload": d["workload"], "scenario": d["scenario"], "objectives": objectives,
                "quality": {"target_ratio": d["quality_target_ratio"]} if d.get("quality_target_ratio") else {},
                "demand": {"value": d["demand"], "unit": d["demand_unit"]}, "prices": prices}


@login_required
@require_http_methods(["GET", "POST"])
def decisions_page(request: HttpRequest) -> HttpResponse:
    principal = policy.for_request(request)
    policy.require(principal, policy.DECISION_READ)
    form = DecisionForm(request.POST or None)
    status = 200
    if request.method == "POST":
        policy.require(principal, policy.DECISION_CREATE)
        if form.is_valid():
            try:
                decision = decision_create(owner=request.user, title=form.cleaned_data["title"],
                                           question=form.question(),
                                           webhook_url=form.cleaned_data.get("webhook_url") or "")
                return redirect("decision", decision_id=decision.pk)
            except RegistryError as exc:
                form.add_error(None, str(exc))
        status = 400
    decisions = policy.visible_decisions(principal, decision_list())[:100]
    return render(request, "registry/decisions.html", {"form": form, "decisions": decisions,
                                                       "roles": roles_of(request.user)}, status=status)


@login_required
@require_GET
def decision_page(request: HttpRequest, decision_id: int) -> HttpResponse:
    decision = policy.decision_get(policy.for_request(request), decision_id)
    latest = decision_latest_answer(decision=decision)
    return render(request, "registry/decision.html", {"decision": decision, "latest": latest,
                                                      "answer": latest.answer if latest else None,
                                                      "roles": roles_of(request.user)})
