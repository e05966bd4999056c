"""The API's door to registry.policy: every view names the policy action it performs, and nothing else.

`policy_action` is an action (registry.policy.actions), or a mapping from HTTP method to action where methods do
different things; a method the mapping does not name (HEAD, OPTIONS, one the view does not answer) is asked as
"GET". The policy decides from the action what the caller needs (`policy.admits`), against the principal's
*effective* rights (token scopes ∩ the owner's rights now; an agent's token: agent and submit), never the token's
stored scopes. A caller with no credential gets 401; a known caller without the right gets 403. Object-level
decisions (whose job, whose report) are made by the policy getters, which answer 404.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from registry import policy


def view_action(view: Any, method: str) -> str:
    """The policy action `view` performs for a request with this HTTP method."""
    action = getattr(view, "policy_action", None)
    if isinstance(action, Mapping):
        action = action.get(method, action.get("GET"))
    if action is None:
        raise ImproperlyConfigured(f"{type(view).__name__} names no policy_action for {method}")
    return str(action)


def signed_in_user(request: Request) -> User:
    """`request.user`, typed as the user it is in a view whose action needs a credential (ActionAllowed answers 401
    to a caller without one, so such a view never meets AnonymousUser)."""
    return cast(User, request.user)


class ActionAllowed(BasePermission):
    message = "this credential does not have the scope this operation needs"

    def has_permission(self, request: Any, view: Any) -> bool:
        return policy.admits(policy.for_request(request), view_action(view, request.method))
