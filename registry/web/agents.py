"""Lab work: the agents and their job counts, the jobs a user may see, and cancelling one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from registry import policy
from registry.choices import JobStatus
from registry.exceptions import RegistryError
from registry.selectors.agents import agent_list, job_list
from registry.services.jobs import job_cancel


@login_required
@require_GET
def agents_page(request: HttpRequest) -> HttpResponse:
    policy.require(policy.for_request(request), policy.AGENT_LIST)
    agents = agent_list().annotate(
        running=Count("jobs", filter=Q(jobs__status__in=JobStatus.active())),
        finished=Count("jobs", filter=Q(jobs__status=JobStatus.SUBMITTED)),
        failed=Count("jobs", filter=Q(jobs__status__in=[JobStatus.FAILED, JobStatus.TIMED_OUT])),
    )
    return render(request, "registry/agents.html", {"agents": agents})


@login_required
@require_GET
def jobs_page(request: HttpRequest) -> HttpResponse:
    """Jobs the user may see: an admin's, every job; a submitter's, their own plans' jobs (as the API lists)."""
    principal = policy.for_request(request)
    policy.require(principal, policy.JOB_LIST)
    status = request.GET.get("status", "")
    status = status if status in JobStatus.values else ""
    jobs = policy.visible_jobs(principal, job_list(status=status or None)).defer("spec")
    page = Paginator(jobs, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "registry/jobs.html",
        {"page": page, "status": status, "statuses": JobStatus.choices, "active": JobStatus.active()},
    )


@login_required
@require_POST
def job_cancel_view(request: HttpRequest, job_id: int) -> HttpResponse:
    """Cancel a job from the jobs page: the plan's owner and admins, as `POST /api/v1/jobs/<id>/cancel`."""
    try:
        job = policy.job_get(policy.for_request(request), job_id, policy.JOB_CANCEL)
    except policy.Refused as exc:
        raise PermissionDenied(exc.message) from None
    try:
        job_cancel(job=job, actor=request.user.get_username())
        messages.success(request, f"Job {job.pk} is cancelled.")
    except RegistryError as exc:
        messages.error(request, exc.message)
    return redirect("jobs")
