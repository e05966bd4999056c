"""People of each role and API clients acting as them, for the hostile probes."""

from __future__ import annotations

import time
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from registry.services.tokens import token_create


def person(role: str = "submitter") -> Any:
    """A new user in one role group (viewer, submitter, admin)."""
    user = get_user_model().objects.create_user(f"{role}-{time.monotonic_ns()}", password="x")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def signed_in(user: Any) -> APIClient:
    """An API client with the user's session rights."""
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    return client


def with_token(user: Any, scopes: str) -> APIClient:
    """An API client holding a new token of the user's with these scopes ("read", "read,admin", ...)."""
    client = APIClient(SERVER_NAME="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user, name='t', scopes=scopes)[1]}")
    return client
