"""Webhook delivery tasks, on their own queue (settings.BENCHREG_WEBHOOK_QUEUE): bounded retries with exponential
backoff, the final state recorded on the delivery; a periodic sweep so that nothing stays pending unseen."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from registry.services.webhooks import webhook_attempt, webhook_backoff
from registry.services.webhooks import webhooks_sweep as sweep

# One attempt ends at its own deadline; the soft limit only backs that up (a hung resolver thread, say).
_LIMIT_S = settings.BENCHREG_WEBHOOK_DEADLINE_S + 30


@shared_task(
    name="registry.tasks.webhooks.deliver_webhook",
    bind=True,
    ignore_result=True,
    max_retries=None,
    soft_time_limit=_LIMIT_S,
    time_limit=_LIMIT_S + 30,
)
def deliver_webhook(self, delivery_id: int) -> str:  # type: ignore[no-untyped-def]
    delivery, retry = webhook_attempt(delivery_id=delivery_id)
    if delivery is None:
        return "nothing to do"
    if retry and not self.request.is_eager:
        raise self.retry(countdown=webhook_backoff(delivery.attempts))
    # In-process (no broker) the caller must not wait for backoffs: the delivery stays pending with its next
    # attempt's time, and the sweep queues it again.
    return str(delivery.state)


@shared_task(name="registry.tasks.webhooks.webhooks_sweep", ignore_result=True)
def webhooks_sweep() -> dict[str, int]:
    return sweep()
