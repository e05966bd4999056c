"""Browsing pages. They call selectors, permission getters and services only; rules live in services.

Every page needs a signed-in user (login_required); registry.policy decides everything else, and what a role may
not see answers 404 (through registry.permissions' getters or policy.require).
Forms POST with CSRF tokens; a refused comparison re-renders the builder with status 422 and every blocking field.
"""

from __future__ import annotations

import sys
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from protocol import comparability
from registry import exports, policy
from registry.api.exception_handlers import api_not_found, api_server_error, database_unavailable, unavailable_headers
from registry.choices import JobStatus
from registry.exceptions import RegistryError
from registry.forms import CatalogueForm, CompareForm, ReportRequestForm, TokenCreateForm, WithdrawForm
from registry.permissions import (
    comparison_for_user,
    report_for_user,
    reports_for_user,
    require_read,
    roles_of,
    run_for_user,
    token_for_user,
)
from registry.presentation import charts
from registry.presentation.sentences import ratio_sentences
from registry.selectors.agents import agent_list, job_list
from registry.selectors.catalogue import (
    FACETS,
    SORTS,
    catalogue_facets,
    catalogue_search,
    data_version,
    root_cause_order,
)
from registry.selectors.comparisons import runs_by_reference
from registry.selectors.matrix import catalogue_matrix
from registry.selectors.run_page import run_detail
from registry.selectors.standing import comparison_conclusion, comparison_members
from registry.selectors.submissions import submission_list
from registry.selectors.tokens import token_list_for
from registry.services.comparisons import NotComparable, comparison_create
from registry.services.jobs import job_cancel
from registry.services.submissions import submission_withdraw
from registry.services.tokens import token_mint, token_revoke

CHART_SECONDS = 24 * 3600


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return api_not_found(request, exception)
    return render(request, "registry/error.html", {"status": 404, "message": "There is nothing here."}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 handler; it runs inside the `except` that caught the error, so sys.exc_info() is that error."""
    if request.path.startswith("/api/"):
        return api_server_error(request)
    if database_unavailable(sys.exc_info()[1]):
        # No template: rendering the site's layout reads the session, which needs the database that is down.
        return HttpResponse(
            "<!doctype html><title>503 Service unavailable</title><h1>Service unavailable</h1>"
            "<p>The registry cannot reach its database right now. Try again in a moment.</p>",
            status=503,
            headers=unavailable_headers(),
        )
    return render(
        request,
        "registry/error.html",
        {"status": 500, "message": "The registry failed to answer. The error is logged."},
        status=500,
    )


def _chart(name: str, digest: str, *args: Any) -> str | None:
    """A chart from registry.charts: the same SVG the PDF report prints, with every label drawn as paths.

    Charts are drawn from immutable evidence (a run or a comparison, named by its digest), so the SVG is cached
    under that digest: drawing takes tens of milliseconds, and a page is viewed many times.
    """
    svg = cache.get_or_set(f"chart:{name}:{digest}", lambda: getattr(charts, name)(*args) or "", CHART_SECONDS)
    return mark_safe(svg) if svg else None  # noqa: S308


def _page(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    """render() with the user's roles, which the navigation shows or hides links by."""
    return render(request, template, {**context, "roles": roles_of(request.user)}, status=status)


# ------------------------------------------------------------------------------------------ catalogue


def _export_format(request: HttpRequest) -> str | None:
    fmt = request.GET.get("format", "")
    return fmt if fmt in exports.FORMATS else None


def _export_links(request: HttpRequest) -> dict[str, str]:
    """Links to the CSV and JSON of the page as it is (its filters kept, the page number dropped)."""
    params = {k: v for k, v in request.GET.items() if k not in ("page", "format") and v}
    return {fmt: "?" + urlencode({**params, "format": fmt}) for fmt in exports.FORMATS}


@login_required
@require_GET
def catalogue(request: HttpRequest) -> HttpResponse:
    require_read(request.user)
    form = CatalogueForm(request.GET)
    query = form.to_query()
    fmt = _export_format(request)
    if fmt:
        rows, cut = exports.catalogue_export(query, request.build_absolute_uri)
        return exports.respond(
            fmt,
            "benchreg-catalogue",
            rows=rows,
            columns=exports.RUN_COLUMNS,
            document={"runs": rows, "complete": not cut, "limit": exports.EXPORT_LIMIT},
            cut=cut,
        )
    page = catalogue_search(query)
    params = {k: v for k, v in request.GET.items() if k != "page" and v}
    sort_links = {name: "?" + urlencode({**params, "sort": name}) for name in SORTS}
    return _page(
        request,
        "registry/catalogue.html",
        {
            "page": page,
            "form": form,
            "query": query,
            "sorts": [(k, v[0]) for k, v in SORTS.items()],
            "sort_links": sort_links,
            "facet_names": list(FACETS),
            "prev_link": "?" + urlencode({**params, "page": page.page - 1}) if page.page > 1 else None,
            "next_link": "?" + urlencode({**params, "page": page.page + 1}) if page.page < page.pages else None,
            "axes": comparability.contract().axes,
            "active_filters": _active_filters(page, params),
            "exports": _export_links(request),
            "matrix_link": reverse("matrix") + _filters_only(params),
        },
    )


def _filters_only(params: dict[str, str]) -> str:
    """The facet filters of `params` as a query string ("" when none): what the catalogue and the matrix share."""
    kept = {k: v for k, v in params.items() if k in FACETS or k == "withdrawn"}
    return "?" + urlencode(kept) if kept else ""


@login_required
@require_GET
def matrix(request: HttpRequest) -> HttpResponse:
    """The overview: comparable sets by configuration and by workload × scenario, with the catalogue's facets."""
    require_read(request.user)
    form = CatalogueForm(request.GET)
    query = form.to_query()
    query = type(query)(filters=query.filters, include_withdrawn=query.include_withdrawn)  # no search, set or page
    version = data_version()
    grid = catalogue_matrix(query, version=version)
    fmt = _export_format(request)
    if fmt:
        cells, cut = exports.matrix_export(grid, query, request.build_absolute_uri)
        lines = [{**{k: v for k, v in c.items() if k != "runs"}, **r} for c in cells for r in (c["runs"] or [{}])]
        return exports.respond(
            fmt,
            "benchreg-matrix",
            rows=lines,
            columns=(*exports.MATRIX_COLUMNS, "run", "digest", "url"),
            document={"cells": cells, "complete": not cut},
            cut=cut,
        )
    params = {k: v for k, v in request.GET.items() if v}
    return _page(
        request,
        "registry/matrix.html",
        {
            "matrix": grid,
            "form": form,
            "query": query,
            "facets": catalogue_facets(query, version=version),
            "total": grid.total,
            "exports": _export_links(request),
            "catalogue_link": reverse("home") + _filters_only(params),
            "active_filters": [
                (label, value, "?" + urlencode({k: v for k, v in params.items() if k != name}))
                for name, (_, label) in FACETS.items()
                if (value := params.get(name))
            ],
        },
    )


def _active_filters(page: Any, params: dict[str, str]) -> list[tuple[str, str, str]]:
    """(label, value, link that removes it) for each filter in force."""
    out = []
    labels = {name: label for name, (_, label) in FACETS.items()} | {"q": "Search", "set": "Comparable set"}
    for name, value in params.items():
        if name in labels:
            shown = page.selected_set.question if name == "set" and page.selected_set else value
            if name == "software":
                shown = next((v.label for f in page.facets if f.name == name for v in f.values if v.selected), value)
            rest = {k: v for k, v in params.items() if k != name}
            out.append((labels[name], shown, "?" + urlencode(rest)))
    return out


# ------------------------------------------------------------------------------------------ runs


@login_required
@require_GET
def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_for_user(request.user, run_id)
    detail = run_detail(run=run)
    return _page(
        request,
        "registry/run.html",
        {
            "detail": detail,
            "run": run,
            "distribution_chart": _chart("latency_distribution_chart", run.digest, run.document),
            "is_admin": policy.can(policy.for_user(request.user), policy.RUN_WITHDRAW),
            "withdraw_form": WithdrawForm(),
            "distribution_fields": detail.distribution_fields,
            "history_link": _history_link(run.pk),
        },
    )


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
    policy.require(policy.for_user(request.user), policy.RUN_WITHDRAW)
    run = run_for_user(request.user, run_id)
    form = WithdrawForm(request.POST)
    if form.is_valid():
        try:
            submission_withdraw(submission=run, reason=form.cleaned_data["reason"], actor=request.user)
            messages.success(request, f"Run {run.pk} is withdrawn. It stays in the registry, marked withdrawn.")
        except RegistryError as exc:
            messages.error(request, exc.message)
    else:
        messages.error(request, "A withdrawal needs a reason.")
    return redirect("run", run_id=run.pk)


# ------------------------------------------------------------------------------------------ comparisons


@login_required
@require_http_methods(["GET", "POST"])
def compare(request: HttpRequest) -> HttpResponse:
    require_read(request.user)
    if request.method == "GET":
        initial = {
            "runs": ", ".join(request.GET.getlist("run") + request.GET.getlist("runs")),
            "axis": request.GET.get("axis", "system"),
            "baseline": request.GET.get("baseline"),
        }
        return _page(request, "registry/compare.html", {"form": CompareForm(initial=initial)})
    form = CompareForm(request.POST, checked=request.POST.getlist("run"))
    if not form.is_valid():
        return _page(request, "registry/compare.html", {"form": form}, status=400)
    ids, axis = form.cleaned_data["run_ids"], form.cleaned_data["axis"]
    baseline = form.cleaned_data.get("baseline")
    try:
        runs = runs_by_reference(refs=ids)
        # The requester's baseline (a run of the comparison): its configuration is what ratios are stated against.
        comparison, _ = comparison_create(runs=runs, axis=axis, created_by=request.user, baseline=baseline)
    except NotComparable as exc:
        errors = _refusal_order(exc.errors or [])
        return _page(
            request,
            "registry/compare.html",
            {
                "form": CompareForm(initial={"runs": ", ".join(map(str, ids)), "axis": axis, "baseline": baseline}),
                "refusal": exc,
                "errors": errors,
                "root_causes": [e for e in errors if e.get("root_cause")],
                "runs": runs,
                "axis": axis,
                "run_ids": ids,
                "other_axes": _axes_that_accept(runs, axis) if exc.code == "not-comparable" else [],
            },
            status=422,
        )
    except RegistryError as exc:
        return _page(
            request,
            "registry/compare.html",
            {
                "form": CompareForm(initial={"runs": ", ".join(map(str, ids)), "axis": axis, "baseline": baseline}),
                "problem": exc,
            },
            status=exc.status if exc.status in (400, 404, 409) else 400,
        )
    return redirect("comparison", comparison_id=comparison.pk)


def _refusal_order(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Blocking fields with what makes the question different first (phase, workload, scenario, quality target),
    then fields every run states, then those some run leaves "not stated"; each marked root_cause or not."""
    from registry.selectors.catalogue import ROOT_CAUSE_PREFIXES

    def root(e: dict[str, Any]) -> bool:
        pointer = str(e.get("pointer", ""))
        return any(pointer == p or pointer.startswith(p + "/") for p in ROOT_CAUSE_PREFIXES)

    ordered = root_cause_order([e for e in errors if "pointer" in e])
    ordered.sort(key=lambda e: (not root(e), "not stated" in (e.get("values") or [])))
    return [{**e, "root_cause": root(e)} for e in ordered]


def _axes_that_accept(runs: list[Any], axis: str) -> list[str]:
    """Other axes along which these very runs are comparable: the only hint worth giving after a refusal."""
    documents = [r.document for r in runs]
    return [
        other
        for other in comparability.contract().axes
        if other != axis and comparability.check(documents, other).comparable
    ]


@login_required
@require_GET
def comparison_page(request: HttpRequest, comparison_id: int) -> HttpResponse:
    comparison = comparison_for_user(request.user, comparison_id)
    fmt = _export_format(request)
    if fmt:
        document = exports.comparison_export(comparison, comparison_members(comparison), request.build_absolute_uri)
        return exports.respond(
            fmt,
            f"benchreg-comparison-{comparison.pk}",
            rows=document["runs"],
            columns=exports.COMPARISON_COLUMNS,
            document=document,
        )
    return _page(request, "registry/comparison.html", _comparison_context(request, comparison))


# URL name -> (title, registry.charts function, drawn from the comparison's result or its runs' documents)
COMPARISON_CHARTS = {
    "headline": ("Headline metric per configuration, with 95% intervals", "throughput_chart", "result"),
    "latency": ("Latency percentiles per configuration", "latency_percentiles_chart", "both"),
    "load": ("Latency against load", "latency_vs_load_chart", "documents"),
    "derived": ("Derived figures", "derived_chart", "result"),
}


def _comparison_context(request: HttpRequest, comparison: Any, report_form: Any = None) -> dict[str, Any]:
    result = comparison.result
    runs = comparison_members(comparison)
    documents = [r.document for r in runs]
    arms = [{**arm, "run_ids": [runs[i].pk for i in arm["runs"]]} for arm in result.get("arms", [])]
    drawn = charts.comparison_charts(result, documents)
    return {
        "comparison": comparison,
        "result": result,
        "runs": runs,
        "arms": arms,
        "conclusion": comparison_conclusion(comparison, runs),
        "run_rows": [{"run": runs[i], **row} for i, row in enumerate(result.get("runs", []))],
        "derived": [{"arm": arm["label"], **d} for arm in result.get("arms", []) for d in arm.get("derived", [])],
        # Links, not drawings: each chart is its own request (comparison_chart), so drawing them never holds up
        # the page, and the browser fetches them in parallel.
        "charts": [
            (title, reverse("comparison-chart", args=[comparison.pk, name]))
            for name, (title, function, _) in COMPARISON_CHARTS.items()
            if function in drawn
        ],
        "report_form": report_form
        or ReportRequestForm(initial={"title": f"Decision report: comparison {comparison.pk}"}),
        "reports": reports_for_user(request.user, comparison),
        "sentences": ratio_sentences(result),
        "baseline_arm": (arms[(result.get("conclusion") or {}).get("baseline", 0)] if arms else None),
        "exports": _export_links(request),
    }


@login_required
@require_GET
def comparison_chart(request: HttpRequest, comparison_id: int, name: str) -> HttpResponse:
    """One chart of a comparison as an SVG image, drawn once per comparison digest (comparisons never change)."""
    comparison = comparison_for_user(request.user, comparison_id)
    if name not in COMPARISON_CHARTS:
        raise Http404(f"no chart {name!r}")
    _, function, source = COMPARISON_CHARTS[name]
    documents = [r.document for r in comparison_members(comparison)] if source != "result" else []
    args = {"result": (comparison.result,), "documents": (documents,), "both": (documents, comparison.result)}[source]
    svg = _chart(function, comparison.digest, *args)
    if svg is None:
        raise Http404(f"comparison {comparison.pk} has nothing to plot in {name!r}")
    response = HttpResponse(svg, content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=86400"
    # Shown through <img> (where scripts never run); opened directly, it may not run any or load anything either.
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return response


@login_required
@require_POST
def report_create(request: HttpRequest, comparison_id: int) -> HttpResponse:
    comparison = comparison_for_user(request.user, comparison_id)
    form = ReportRequestForm(request.POST)
    from registry.services.reports import report_request  # the PDF stack is heavy: imported on first use

    if not form.is_valid():
        return _page(request, "registry/comparison.html", _comparison_context(request, comparison, form), status=400)
    try:
        report = report_request(
            comparison=comparison,
            title=form.cleaned_data["title"],
            decision=form.cleaned_data["decision"],
            requested_by=request.user,
            prices=form.cleaned_data["prices"],
        )
    except RegistryError as exc:
        form.add_error(None, exc.message)
        return _page(request, "registry/comparison.html", _comparison_context(request, comparison, form), status=400)
    messages.success(request, "Report requested. This page shows its status until the PDF can be downloaded.")
    # With new prices the report is about a new comparison of the same runs: show that one.
    return redirect(reverse("comparison", args=[report.comparison_id]) + f"#report-{report.pk}")


def _report_status(report: Any) -> dict[str, Any]:
    ready = report.status == "ready"
    return {
        "id": report.pk,
        "status": report.status,
        "ready": ready,
        "failed": report.status == "failed",
        "error": getattr(report, "last_error", "") or "",
        "download_url": reverse("report-pdf", args=[report.pk]) if ready else None,
    }


@login_required
@require_GET
def report_status(request: HttpRequest, report_id: int) -> JsonResponse:
    """Polled by static/registry/report-status.js until the report is ready or failed."""
    report = report_for_user(request.user, report_id)
    response = JsonResponse(_report_status(report))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
def report_pdf(request: HttpRequest, report_id: int) -> HttpResponse:
    """The signed PDF, through the permission getter; 404 until it is ready."""
    report = report_for_user(request.user, report_id)
    from registry.services.reports import report_open  # the PDF stack is heavy: imported on first use

    try:
        pdf = report_open(report)
    except RegistryError as exc:
        if exc.status == 503:
            return HttpResponse(
                exc.message, status=503, content_type="text/plain; charset=utf-8", headers={"Retry-After": "30"}
            )
        raise Http404(f"report {report.pk} is not ready") from None
    return FileResponse(
        pdf, as_attachment=True, filename=f"benchreg-report-{report.pk}.pdf", content_type="application/pdf"
    )


# ------------------------------------------------------------------------------------------ admins, submitters


@login_required
@require_GET
def agents_page(request: HttpRequest) -> HttpResponse:
    policy.require(policy.for_user(request.user), policy.AGENT_LIST)
    from django.db.models import Count, Q

    agents = agent_list().annotate(
        running=Count("jobs", filter=Q(jobs__status__in=JobStatus.active())),
        finished=Count("jobs", filter=Q(jobs__status=JobStatus.SUBMITTED)),
        failed=Count("jobs", filter=Q(jobs__status__in=[JobStatus.FAILED, JobStatus.TIMED_OUT])),
    )
    return _page(request, "registry/agents.html", {"agents": agents})


@login_required
@require_GET
def jobs_page(request: HttpRequest) -> HttpResponse:
    """Jobs the user may see: an admin's, every job; a submitter's, their own plans' jobs (as the API lists)."""
    principal = policy.for_user(request.user)
    policy.require(principal, policy.JOB_LIST)
    status = request.GET.get("status", "")
    status = status if status in JobStatus.values else ""
    jobs = policy.visible_jobs(principal, job_list(status=status or None)).defer("spec")
    page = Paginator(jobs, 50).get_page(request.GET.get("page"))
    return _page(
        request,
        "registry/jobs.html",
        {"page": page, "status": status, "statuses": JobStatus.choices, "active": JobStatus.active()},
    )


@login_required
@require_POST
def job_cancel_view(request: HttpRequest, job_id: int) -> HttpResponse:
    """Cancel a job from the jobs page: the plan's owner and admins, as `POST /api/v1/jobs/<id>/cancel`."""
    try:
        job = policy.job_get(policy.for_user(request.user), job_id, policy.JOB_CANCEL)
    except policy.Refused as exc:
        raise PermissionDenied(exc.message) from None
    try:
        job_cancel(job=job, actor=request.user.get_username())
        messages.success(request, f"Job {job.pk} is cancelled.")
    except RegistryError as exc:
        messages.error(request, exc.message)
    return redirect("jobs")


@login_required
@require_http_methods(["GET", "POST"])
def tokens_page(request: HttpRequest) -> HttpResponse:
    """The user's tokens; the form offers only the scopes the user may use (policy.mintable_scopes)."""
    principal = policy.for_user(request.user)
    policy.require(principal, policy.TOKEN_MANAGE)
    mintable = policy.mintable_scopes(principal)
    form, plain = TokenCreateForm(mintable=mintable), None
    if request.method == "POST":
        form = TokenCreateForm(request.POST, mintable=mintable)
        if form.is_valid():
            try:
                _, plain = token_mint(
                    principal=principal, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
                )
                form = TokenCreateForm(mintable=mintable)
            except RegistryError as exc:
                form.add_error("scopes", exc.message)
    tokens = token_list_for(user=request.user).order_by("-id")
    return _page(
        request,
        "registry/tokens.html",
        {
            "form": form,
            "plain": plain,
            "tokens": tokens,
            "submissions": submission_list().filter(submitted_by=request.user)[:20],
        },
    )


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    token = token_for_user(request.user, token_id)
    token_revoke(token=token, actor=request.user.get_username())
    messages.success(request, f"Token {token.prefix}… is revoked.")
    return redirect("tokens")


# ------------------------------------------------------------------------------------------ sign-in lock-out


def axes_username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """The name django-axes records a failed sign-in under (AXES_USERNAME_CALLABLE): cut to its column's 255
    characters. No account has a longer name (usernames are at most 150), and Django's sign-in form does not
    enforce that length, so a 20,000-character guess reached the INSERT (a 500 on PostgreSQL)."""
    raw = credentials.get("username") if credentials else request.POST.get("username")
    return None if raw is None else str(raw)[:255]


def login_locked_out(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    """django-axes' answer once an account or an address has too many failed sign-ins: the sign-in page again,
    with a message that says why and for how long, status 429 and Retry-After. The right password does not
    help until the cool-off ends."""
    from axes.helpers import get_cool_off
    from django.conf import settings
    from django.contrib.auth.forms import AuthenticationForm

    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    response = render(
        request,
        "registration/login.html",
        {
            "form": AuthenticationForm(request),
            "next": request.POST.get("next", ""),
            "locked_out": True,
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "cooloff_minutes": minutes,
        },
        status=429,
    )
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
