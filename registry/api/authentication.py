"""Token authentication against hashed, scoped, revocable tokens (`Authorization: Token <token>`)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from registry import policy
from registry.api.token_cache import token_lookup, token_used
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
        token = token_lookup(hash_token(header[1].decode(errors="replace")))
        if token is None or not token.is_active or not token.user.is_active:
            raise exceptions.AuthenticationFailed("invalid, expired or revoked token")
        names = getattr(token, "group_names", None)  # read with the token on PostgreSQL: no second query
        if names is not None:
            policy.remember_groups(token.user, names)
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
            token_used(token)
        return token.user, token

    def authenticate_header(self, request) -> str:  # type: ignore[no-untyped-def]
        return 'Token realm="benchreg"'


# drf-spectacular registers each extension in an unannotated __init_subclass__.
class TokenAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """Documents the token in the OpenAPI description (and Swagger UI's Authorize button)."""

    target_class = "registry.api.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <token>`. What a token may do is its scopes ∩ its owner's rights now "
            "(docs/security.md); 401 without one, 403 without the right, 404 for what the "
            "caller may not see.",
        }
