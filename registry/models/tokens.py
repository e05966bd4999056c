"""API tokens: stored as SHA-256 hashes, scoped, revocable. The plain token is shown once at creation."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from .fields import JSONField


class ApiToken(models.Model):
    """A bearer credential for scripts, lab machines and agents. Only its hash is kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True, help_text="first characters, to recognise it")
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user}, {','.join(self.scopes)})"

    @property
    def is_active(self) -> bool:
        now = timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes
