"""Decision task: recompute the decisions a stored run marked stale, once per question key, after the commit."""

from __future__ import annotations

from celery import shared_task

from registry.services.decisions import decisions_recompute_stale


@shared_task(name="registry.tasks.decisions.decisions_recompute", ignore_result=True)
def decisions_recompute(workload: str, scenario: str) -> dict[str, int]:
    """Each decision's failure is recorded on it (recompute_error), so this task does not retry: a later run on
    the question or a reader recomputes it again."""
    return decisions_recompute_stale(workload=workload, scenario=scenario)
