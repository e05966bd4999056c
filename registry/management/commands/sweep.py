"""`benchreg sweep`: what Celery beat runs every minute, once, by hand or from cron (docs/operations.md).

Re-queues reports whose renderer was lost and fails those lost too often; times out jobs past their deadline
and marks silent agents offline; queues overdue webhook deliveries again (in-process here, as without a broker)
and fails those pending too long. Prints what it changed.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from registry.services.agents import agents_mark_offline
from registry.services.job_groups import groups_expire
from registry.services.jobs import jobs_time_out
from registry.services.reports import reports_sweep
from registry.services.webhooks import webhooks_sweep


class Command(BaseCommand):
    help = "Run the periodic sweeps once: stuck reports, jobs past their deadline, silent agents, webhooks."

    def handle(self, *args: Any, **options: Any) -> None:
        reports = reports_sweep()
        self.stdout.write(
            f"reports: {reports['failed']} failed for good, {reports['requeued']} re-queued, "
            f"{reports['redispatched']} re-dispatched"
        )
        self.stdout.write(f"jobs: {jobs_time_out()} timed out; job groups: {groups_expire()} failed")
        self.stdout.write(f"agents: {agents_mark_offline()} marked offline")
        webhooks = webhooks_sweep()
        self.stdout.write(f"webhooks: {webhooks['failed']} failed for good, {webhooks['queued']} queued again")
