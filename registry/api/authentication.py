"""Token authentication against hashed, scoped, revocable tokens (`Authorization: Token <token>`)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import OuterRef
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from registry import policy
from registry.models import ApiToken
from registry.services.tokens import hash_token

LAST_USED_RESOLUTION = timedelta(minutes=1)  # write last_used_at at most once a minute per token


class TokenAuthentication(authentication.BaseAuthentication):
    keywords = ("token", "bearer")

    def authenticate(self, request):  # type: ignore[no-untyped-def]
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("the Authorization header must be 'Token <token>'")
        plain = header[1].decode(errors="replace")
        tokens = ApiToken.objects.select_related("user", "agent").filter(key_hash=hash_token(plain))
        if connection.vendor == "postgresql":  # the user's groups in the same round trip (the policy needs them)
            from django.contrib.postgres.expressions import ArraySubquery

            tokens = tokens.annotate(group_names=ArraySubquery(
                Group.objects.filter(user=OuterRef("user_id")).values("name")))
        token = tokens.first()
        if token is None or not token.is_active or not token.user.is_active:
            raise exceptions.AuthenticationFailed("invalid, expired or revoked token")
        if hasattr(token, "group_names"):
            policy.remember_groups(token.user, token.group_names)
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request) -> str:  # type: ignore[no-untyped-def]
        return 'Token realm="benchreg"'


class TokenAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[misc]
    """Documents the token in the OpenAPI description (and Swagger UI's Authorize button)."""

    target_class = "registry.api.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token <token>`. What a token may do is its scopes ∩ its owner's rights now "
                               "(docs/security.md); 401 without one, 403 without the right, 404 for what the "
                               "caller may not see."}
