"""Reading tokens, always through the owner: another user's token is 'not found', never 'forbidden'."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from registry.exceptions import NotFound
from registry.models import ApiToken


def token_list_for(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def token_get_for(*, user: AbstractBaseUser, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(user=user, pk=token_id).select_related("user").first()
    if token is None:
        raise NotFound(f"no token {token_id} of yours")
    return token
