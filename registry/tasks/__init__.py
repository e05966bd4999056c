"""Celery tasks: thin wrappers that take ids, re-fetch rows and call one service. One module per area."""

# Imported here so that autodiscovery (which imports registry.tasks) registers every task module.
from registry.tasks import audit, decisions, jobs, reports, series, webhooks

__all__ = ["audit", "decisions", "jobs", "reports", "series", "webhooks"]
