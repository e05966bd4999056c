"""Outgoing signed webhooks: recorded, then delivered by a Celery task with bounded retries.

Signing follows Standard Webhooks (the `standardwebhooks` library): headers webhook-id, webhook-timestamp and
webhook-signature = "v1," + base64(HMAC-SHA256(secret, f"{id}.{timestamp}.{body}")). The receiver verifies
with the same library and the secret it was given ("whsec_" + base64 key).
"""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from registry.choices import AuditKind
from registry.models import WebhookDelivery
from registry.services.audit import audit_append

MAX_ATTEMPTS = 5
TIMEOUT_S = 10.0


def webhook_secret_new() -> str:
    """A fresh Standard Webhooks secret: 'whsec_' + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def webhook_enqueue(*, url: str, secret: str, event: str, body: dict[str, Any]) -> WebhookDelivery:
    """Record one delivery and queue it once the caller's transaction commits. Returns the record."""
    delivery = WebhookDelivery.objects.create(message_id=f"msg_{uuid.uuid4().hex}", url=url, secret=secret,
                                              event=event, body=body, created_at=timezone.now())
    from registry.tasks.webhooks import deliver_webhook

    transaction.on_commit(lambda: deliver_webhook.delay(delivery.pk))
    return delivery


def webhook_signed(delivery: WebhookDelivery, *, at: datetime | None = None) -> tuple[bytes, dict[str, str]]:
    """The exact body bytes and the signed headers for one attempt."""
    when = at or datetime.now(UTC)
    payload = json.dumps({"type": delivery.event, "timestamp": when.isoformat().replace("+00:00", "Z"),
                          "data": delivery.body}, separators=(",", ":"), sort_keys=True)
    signature = Webhook(delivery.secret).sign(delivery.message_id, when, payload)
    headers = {"webhook-id": delivery.message_id, "webhook-timestamp": str(int(when.timestamp())),
               "webhook-signature": signature, "content-type": "application/json"}
    return payload.encode(), headers


def webhook_attempt(*, delivery_id: int) -> tuple[WebhookDelivery, bool]:
    """One delivery attempt. Returns (delivery, retry?): retry on network errors, 408, 429 and 5xx only,
    while attempts remain; the final state (delivered or failed) is recorded and audited."""
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    if delivery.state != "pending":
        return delivery, False
    body, headers = webhook_signed(delivery)
    status, error = None, ""
    try:
        response = httpx.post(delivery.url, content=body, headers=headers, timeout=TIMEOUT_S)
        status = response.status_code
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"
    delivery.attempts += 1
    delivery.last_status, delivery.last_error = status, error
    transient = status is None or status in (408, 429) or status >= 500
    if status is not None and 200 <= status < 300:
        delivery.state = "delivered"
    elif not transient or delivery.attempts >= MAX_ATTEMPTS:
        delivery.state = "failed"
        if not error:
            delivery.last_error = f"answered HTTP {status}"
    retry = delivery.state == "pending"
    with transaction.atomic():
        if not retry:
            delivery.finished_at = timezone.now()
            audit_append(kind=AuditKind.WEBHOOK_FINISHED, actor="registry", subject=delivery.message_id,
                         payload={"event": delivery.event, "url": delivery.url, "state": delivery.state,
                                  "attempts": delivery.attempts, "status": status})
        delivery.save()
    return delivery, retry
