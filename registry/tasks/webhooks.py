"""Webhook delivery task: bounded retries with exponential backoff, the final state recorded on the delivery."""

from __future__ import annotations

from celery import shared_task

from registry.services.webhooks import MAX_ATTEMPTS, webhook_attempt

BACKOFF_S = 2.0


@shared_task(name="registry.tasks.webhooks.deliver_webhook", bind=True, ignore_result=True,
             max_retries=MAX_ATTEMPTS - 1)
def deliver_webhook(self, delivery_id: int) -> str:  # type: ignore[no-untyped-def]
    delivery, retry = webhook_attempt(delivery_id=delivery_id)
    if retry:
        raise self.retry(countdown=BACKOFF_S * 2 ** (delivery.attempts - 1))
    return str(delivery.state)
