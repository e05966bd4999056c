"""Audit-log tasks: the periodic checkpoint (Celery beat, settings.CELERY_BEAT_SCHEDULE) and witnesses' cosignatures."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task

from registry.audit.sequencer import audit_integrate
from registry.choices import CheckpointReason
from registry.models import Checkpoint, Cosignature
from registry.services.audit import checkpoint_sign
from registry.services.witnesses import WitnessRefused, WitnessUnreachable, cosignature_request, witnesses_configured

log = logging.getLogger(__name__)


@shared_task(name="registry.tasks.audit.sign_checkpoint", ignore_result=True)
def sign_checkpoint() -> int:
    """Sign the current head; a no-op when the latest checkpoint already covers it. Returns the checkpoint id.

    Safe to run twice or late: it always signs what the log holds when it runs.
    """
    return checkpoint_sign(reason=CheckpointReason.PERIODIC).pk


@shared_task(name="registry.tasks.audit.integrate", ignore_result=True)
def integrate() -> int:
    """Sequence queued audit entries (beat, every BENCHREG_AUDIT_INTEGRATE_INTERVAL_S). Returns how many.

    The safety net behind integration on commit, and the only sequencer with BENCHREG_AUDIT_SEQUENCING=worker.
    Waits for a sequencer at work, so every entry committed before it started is integrated when it returns.
    """
    return audit_integrate()


@shared_task(name="registry.tasks.audit.request_cosignatures", bind=True, max_retries=6, ignore_result=True)
def request_cosignatures(self: Task[Any, Any], checkpoint_id: int) -> int:
    """Ask every configured witness to cosign checkpoint `checkpoint_id` ). An unreachable witness is
    asked again later (exponential backoff, 6 retries); a refusal (a fork, a bad proof) is logged, not retried.
    Returns how many cosignatures the checkpoint has."""
    checkpoint = Checkpoint.objects.filter(pk=checkpoint_id).first()
    if checkpoint is None:
        return 0
    unreachable = []
    for witness in witnesses_configured():
        try:
            cosignature_request(checkpoint=checkpoint, witness=witness)
        except WitnessUnreachable as exc:
            unreachable.append(exc)
        except WitnessRefused as exc:
            log.error("cosignature refused: %s", exc.message)
    if unreachable and not self.request.is_eager:
        raise self.retry(exc=unreachable[0], countdown=2**self.request.retries)
    return Cosignature.objects.filter(checkpoint=checkpoint).count()
