"""Roles are defined once, in registry.policy; these names stay for callers that import them from here."""

from __future__ import annotations

from typing import Any

from registry.policy import ADMIN, ROLE_RIGHTS, ROLES, SUBMITTER, VIEWER, user_rights
from registry.policy import user_roles as user_roles

ROLE_SCOPES = {role: set(rights) for role, rights in ROLE_RIGHTS.items()}

__all__ = ["ADMIN", "ROLES", "ROLE_SCOPES", "SUBMITTER", "VIEWER", "user_roles", "user_scopes"]


def user_scopes(user: Any) -> set[str]:
    """What a signed-in (session) user may do: registry.policy.user_rights."""
    return set(user_rights(user))
