"""Series pages: a run configuration's history, and the alerts list."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from protocol import changepoints
from registry import policy
from registry.presentation import charts_series
from registry.selectors.series import alert_list, run_history
from registry.services.series import alert_body


@login_required
@require_GET
def run_history_page(request: HttpRequest, run_id: int) -> HttpResponse:
    """Headline over submission time and over software versions, intervals and change points marked."""
    run = policy.run_get(policy.for_request(request), run_id)
    history = run_history(run=run)
    data = history.as_dict()
    time_chart = charts_series.history_time_chart(data)
    software_chart = charts_series.history_software_chart(data)
    return render(
        request,
        "registry/history.html",
        {
            "run": run,
            "history": history,
            "points": list(reversed(history.points)),
            "time_chart": mark_safe(time_chart) if time_chart else None,  # noqa: S308 - our own SVG, text as paths
            "software_chart": mark_safe(software_chart) if software_chart else None,  # noqa: S308
            "alerts": [alert_body(a) for a in history.alerts],
            "method": changepoints.METHOD,
        },
    )


@login_required
@require_GET
def alerts_page(request: HttpRequest) -> HttpResponse:
    policy.require(policy.for_request(request), policy.SERIES_READ)
    page = Paginator(alert_list(), 50).get_page(request.GET.get("page"))
    return render(request, "registry/alerts.html", {"page": page, "alerts": [alert_body(a) for a in page]})
