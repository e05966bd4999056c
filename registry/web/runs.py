"""A run's page (its document, statistics and distribution) and its withdrawal by an admin."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET, require_POST

from protocol import serving
from protocol.per_accelerator import per_accelerator
from registry import policy
from registry.exceptions import RegistryError
from registry.presentation.sweeps import comparison_view, sweep_view
from registry.selectors.artifacts import run_artifacts
from registry.selectors.run_page import run_detail
from registry.selectors.scaling import configuration_size_counts
from registry.selectors.sweeps import recent_sweeps, sweep_runs
from registry.services.submissions import submission_withdraw
from registry.web.charts import cached_chart
from registry.web.context import signed_in_user
from registry.web.forms import WithdrawForm


@login_required
@require_GET
def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    principal = policy.for_request(request)
    run = policy.run_get(principal, run_id)
    detail = run_detail(run=run)
    per_user, per_user_error = per_user_param(request)
    return render(
        request,
        "registry/run.html",
        {
            "detail": detail,
            "run": run,
            "distribution_chart": cached_chart("latency_distribution_chart", run.digest, run.document),
            "can_withdraw": policy.can(principal, policy.RUN_WITHDRAW),
            "withdraw_form": WithdrawForm(),
            "distribution_fields": detail.distribution_fields,
            "history_link": _history_link(run.pk),
            "sweep": _sweep(run, per_user),
            "scaling": _scaling(run.document),
            "other_sizes": _other_sizes(run),
            "per_user": per_user,
            "per_user_error": per_user_error,
            # from the document: the reasons for an absent figure are exact
            "per_accelerator": per_accelerator(run.document),
            "artifacts": run_artifacts(run),
        },
    )


def per_user_param(request: HttpRequest) -> tuple[float | None, str | None]:
    """?per_user=50: the interactivity target (tokens/s per user) a sweep is read at; (None, why) when it is not a
    number in range, so the page says so instead of failing."""
    raw = request.GET.get("per_user", "").strip()
    if not raw:
        return None, None
    try:
        return serving.per_user_target(float(raw[:32]), "per_user"), None
    except (ValueError, serving.TargetError):
        return (
            None,
            f"per_user: a positive number of tokens/s per user of at most {serving.MAX_PER_USER:g} (got {raw[:32]!r})",
        )


def _sweep(run: Any, per_user: float | None) -> dict[str, Any] | None:
    """The run's sweep (every stored level that names its sweep), None for a run that is not a level of one."""
    sweep_id = serving.sweep_id(run.document)
    if sweep_id is None:
        return None
    runs = sweep_runs(sweep_id=sweep_id)
    refs = [{"id": r.pk, "digest": r.digest, "url": f"/runs/{r.pk}/"} for r in runs]
    view = sweep_view([r.document for r in runs], refs, serving.configuration_label(run.document), per_user)
    return {**view, "id": sweep_id, "count": len(runs)}


def _scaling(document: dict[str, Any]) -> dict[str, Any] | None:
    """The scaling plan the run is a size of (scenario.distributed.scaling: id, mode, sizes), None for any other."""
    layout = (document.get("scenario") or {}).get("distributed") or {}
    plan = layout.get("scaling")
    return {**plan, "world_size": layout.get("world_size")} if isinstance(plan, dict) else None


def _other_sizes(run: Any) -> dict[str, Any] | None:
    """Where this training run's configuration is stored at more than one size (the scaling axis's key, one
    submitter): how many runs and which sizes, for the link to /runs/<id>/sizes/; None otherwise."""
    count, sizes = configuration_size_counts(run=run)
    return {"count": count, "sizes": sizes} if len(sizes) > 1 else None


def _history_link(run_id: int) -> str | None:
    """The configuration's history page (/runs/<id>/history/), where the URL conf has it."""
    try:
        reverse("run-history", args=[run_id])
    except NoReverseMatch:
        return None
    return f"/runs/{run_id}/history/"


@login_required
@require_POST
def run_withdraw(request: HttpRequest, run_id: int) -> HttpResponse:
    principal = policy.for_request(request)
    policy.require(principal, policy.RUN_WITHDRAW)
    run = policy.run_get(principal, run_id)
    form = WithdrawForm(request.POST)
    if form.is_valid():
        try:
            submission_withdraw(submission=run, reason=form.cleaned_data["reason"], actor=signed_in_user(request))
            messages.success(request, f"Run {run.pk} is withdrawn. It stays in the registry, marked withdrawn.")
        except RegistryError as exc:
            messages.error(request, exc.message)
    else:
        messages.error(request, "A withdrawal needs a reason.")
    return redirect("run", run_id=run.pk)


MAX_SWEEPS = 4  # sweeps set side by side on one page
MAX_SWEEP_ID = 100  # characters, as protocol 1.2 bounds scenario.sweep.id


@login_required
@require_GET
def sweep_compare_page(request: HttpRequest) -> HttpResponse:
    """/sweeps/compare/?sweep=<id>&sweep=<id>&per_user=50: stored sweeps side by side, their frontiers and, at the
    stated interactivity, the first against each other in words. A sweep is every level of it, so this page reads
    the sweeps themselves; whether two of them measured the same thing (model, request shape, arrival, precision)
    the comparability contract decides, and where it refuses the page says why instead of giving a ratio."""
    policy.require(policy.for_request(request), policy.RUN_READ)
    per_user, error = per_user_param(request)
    asked = [s.strip() for s in request.GET.getlist("sweep") if s.strip()][: MAX_SWEEPS + 1]
    problems = [f"sweep: at most {MAX_SWEEPS} sweeps"] if len(asked) > MAX_SWEEPS else []
    problems += [f"sweep {s[:40]!r}: at most {MAX_SWEEP_ID} characters" for s in asked if len(s) > MAX_SWEEP_ID]
    arms = []
    for sweep_id in asked[:MAX_SWEEPS] if not problems else []:
        runs = sweep_runs(sweep_id=sweep_id)
        if not runs:
            problems.append(f"sweep {sweep_id!r}: no stored run names this sweep")
            continue
        refs = [{"id": r.pk, "digest": r.digest, "url": f"/runs/{r.pk}/"} for r in runs]
        label = f"{serving.configuration_label(runs[0].document)} ({sweep_id})"
        arms.append((label, [r.document for r in runs], refs))
    view = comparison_view(arms, per_user) if not problems else None
    if not problems and view is None and asked:
        problems.append("sweep: name two sweeps, each measured at two loads or more")
    status = 400 if problems or error else 200
    known = [(sweep_id, serving.configuration_label(run.document)) for sweep_id, run in recent_sweeps()]
    slots = [*asked, "", ""][: max(2, len(asked))]  # two boxes at least, one per sweep asked
    context = {"sweeps": view, "slots": slots, "problems": problems, "per_user": per_user, "per_user_error": error,
               "known": known}  # fmt: skip
    return render(request, "registry/sweep_compare.html", context, status=status)
