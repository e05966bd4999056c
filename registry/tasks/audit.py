"""Audit-log tasks: the periodic checkpoint (Celery beat, settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

from registry.choices import CheckpointReason
from registry.services.audit import checkpoint_sign


@shared_task(name="registry.tasks.audit.sign_checkpoint", ignore_result=True)
def sign_checkpoint() -> int:
    """Sign the current head; a no-op when the latest checkpoint already covers it. Returns the checkpoint id.

    Safe to run twice or late: it always signs what the log holds when it runs.
    """
    return checkpoint_sign(reason=CheckpointReason.PERIODIC).pk
