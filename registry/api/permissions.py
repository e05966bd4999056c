"""Scope checks. Token callers need the view's scope; signed-in users get scopes from their role."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from registry.models import ApiToken
from registry.roles import user_scopes


class HasScope(BasePermission):
    """A view declares `required_scope` (default "read"); `None` means open to anyone."""

    message = "this credential does not have the scope this operation needs"

    def has_permission(self, request, view) -> bool:  # type: ignore[no-untyped-def]
        scope = getattr(view, "required_scope", "read")
        if scope is None:
            return True
        if isinstance(request.auth, ApiToken):
            return request.auth.has_scope(scope)
        user = request.user
        return bool(user and user.is_authenticated and scope in user_scopes(user))
