"""Reading tokens, always through the owner: another user's token is 'not found', never 'forbidden'."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import connection
from django.db.models import OuterRef, QuerySet

from registry.exceptions import NotFound
from registry.models import ApiToken


def token_list_for(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def token_get_for(*, user: User, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(user=user, pk=token_id).select_related("user").first()
    if token is None:
        raise NotFound(f"no token {token_id} of yours")
    return token


def token_for_key_hash(key_hash: str) -> ApiToken | None:
    """The token whose key hashes to `key_hash`, with its user and agent (live or not), or None. On PostgreSQL
    the names of the user's groups come in the same round trip, as `token.group_names`."""
    tokens = ApiToken.objects.select_related("user", "agent").filter(key_hash=key_hash)
    if connection.vendor == "postgresql":
        # django.contrib.postgres imports its form fields and psycopg's ranges (~0.1 s): only where it is used
        from django.contrib.postgres.expressions import ArraySubquery

        tokens = tokens.annotate(
            group_names=ArraySubquery(Group.objects.filter(user=OuterRef("user_id")).values("name"))
        )
    return tokens.first()
