"""The API's door to registry.policy: a view declares `required_scope` (default "read") or `policy_action`.

`required_scope = None` means open to anyone. The scope is checked against the principal's *effective* rights
(token scopes ∩ the owner's rights now; an agent's token: agent and submit), never the token's stored scopes.
A caller with no credential gets 401; a known caller without the right gets 403. Object-level decisions
(whose job, whose report) are made by the policy getters, which answer 404.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission

from registry import policy


class HasScope(BasePermission):
    message = "this credential does not have the scope this operation needs"

    def has_permission(self, request: Any, view: Any) -> bool:
        principal = policy.for_request(request)
        action = getattr(view, "policy_action", None)
        if action is not None:
            return policy.can(principal, action)
        scope = getattr(view, "required_scope", "read")
        return scope is None or principal.has(scope)
