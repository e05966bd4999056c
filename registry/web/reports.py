"""Decision reports requested from a comparison's page: the request, its status (polled) and the signed PDF."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from registry import policy
from registry.exceptions import RegistryError
from registry.web.comparisons import comparison_context
from registry.web.context import signed_in_user
from registry.web.forms import ReportRequestForm


@login_required
@require_POST
def report_create(request: HttpRequest, comparison_id: int) -> HttpResponse:
    comparison = policy.comparison_get(policy.for_request(request), comparison_id)
    form = ReportRequestForm(request.POST)
    # Imported on first use: registry.services.reports loads the PDF stack (WeasyPrint, pyHanko), which takes
    # seconds and memory that no other page needs.
    from registry.services.reports import report_request

    if not form.is_valid():
        return render(request, "registry/comparison.html", comparison_context(request, comparison, form), status=400)
    try:
        report = report_request(
            comparison=comparison,
            title=form.cleaned_data["title"],
            decision=form.cleaned_data["decision"],
            requested_by=signed_in_user(request),
            prices=form.cleaned_data["prices"],
        )
    except RegistryError as exc:
        form.add_error(None, exc.message)
        return render(request, "registry/comparison.html", comparison_context(request, comparison, form), status=400)
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
    report = policy.report_get(policy.for_request(request), report_id)
    response = JsonResponse(_report_status(report))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
def report_pdf(request: HttpRequest, report_id: int) -> HttpResponse | FileResponse:
    """The signed PDF, through the permission getter; 404 until it is ready."""
    report = policy.report_get(policy.for_request(request), report_id)
    from registry.services.reports import report_open  # the PDF stack: see report_create

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
