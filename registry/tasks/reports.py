"""Report tasks: render, sign and issue a queued decision report."""

from __future__ import annotations

import logging

from celery import shared_task

from registry.services.reports import report_render
from registry.services.reports import reports_sweep as _reports_sweep

log = logging.getLogger(__name__)


@shared_task(name="registry.tasks.reports.render_report", ignore_result=True)
def render_report(report_id: int) -> str | None:
    """Render report `report_id`. A missing report is a logged no-op; a claimed or finished one is left alone.

    Returns the report's status afterwards. Failures are recorded on the report (status failed, last_error).
    """
    report = report_render(report_id=report_id)
    if report is None:
        log.warning("report %s does not exist; nothing to render", report_id)
        return None
    return str(report.status)


@shared_task(name="registry.tasks.reports.reports_sweep", ignore_result=True)
def reports_sweep() -> dict[str, int]:
    """Celery beat: re-queue reports whose renderer was lost, fail those lost too often (with the reason)."""
    return _reports_sweep()
