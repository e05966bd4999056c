"""Celery tasks: thin wrappers that take ids, re-fetch rows and call one service. One module per area."""

# Imported here so that importing registry.tasks registers every task module: a worker's autodiscovery does, and the
# app does when its task registry is first read in any other process (registry/celery.py).
from registry.tasks import audit, decisions, jobs, reports, series, webhooks

__all__ = ["audit", "decisions", "jobs", "reports", "series", "webhooks"]
