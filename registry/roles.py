"""Roles are Django groups: viewer, submitter, admin. Superusers and staff count as admin."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

VIEWER, SUBMITTER, ADMIN = "viewer", "submitter", "admin"
ROLE_SCOPES = {VIEWER: {"read"}, SUBMITTER: {"read", "submit"}, ADMIN: {"read", "submit", "admin"}}


def user_roles(user: AbstractBaseUser) -> set[str]:
    if not user.is_authenticated:
        return set()
    if user.is_superuser or user.is_staff:
        return {VIEWER, SUBMITTER, ADMIN}
    cached = getattr(user, "_benchreg_roles", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True)) & set(ROLE_SCOPES)  # type: ignore[attr-defined]
        user._benchreg_roles = cached  # type: ignore[attr-defined]
    return cached


def user_scopes(user: AbstractBaseUser) -> set[str]:
    """Scopes a signed-in (session) user has. Any signed-in user may read."""
    scopes = {"read"} if user.is_authenticated else set()
    for role in user_roles(user):
        scopes |= ROLE_SCOPES[role]
    return scopes
