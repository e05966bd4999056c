"""Outgoing signed webhooks and their delivery state."""

from __future__ import annotations

from django.db import models

from .fields import JSONField


class WebhookDelivery(models.Model):
    """One event to one URL, signed Standard Webhooks style; delivered by a Celery task with bounded retries.

    `state` ends as "delivered" (a 2xx answer) or "failed" (retries exhausted, a permanent refusal, a destination
    that is not a global address, no signing secret, or no worker took it in time). `next_attempt_at` is when a
    pending delivery is due again; an attempt claims the row by moving it (so two workers never send one attempt
    twice), and the sweep re-queues one overdue. Status, attempts and errors stay on this row, seen by admins only:
    the audit log never publishes them (they would tell open ports from closed ones).
    """

    STATES = [("pending", "pending"), ("delivered", "delivered"), ("failed", "failed")]

    message_id = models.CharField(max_length=64, unique=True)
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=100)
    event = models.CharField(max_length=100)
    body = JSONField()
    state = models.CharField(max_length=20, choices=STATES, default="pending")
    attempts = models.PositiveIntegerField(default=0)
    last_status = models.IntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="webhook_pending_due")]

    def __str__(self) -> str:
        return f"webhook {self.event} to {self.url}: {self.state}"
