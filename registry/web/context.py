"""What every page's template may ask of the policy: `can_*` flags for whoever is signed in, never role names."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from django.http import HttpRequest

from registry import policy

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Flag -> the action the navigation's link leads to (the page itself asks policy again).
FLAGS = {
    "can_manage_tokens": policy.TOKEN_MANAGE,
    "can_list_agents": policy.AGENT_LIST,
    "can_list_jobs": policy.JOB_LIST,
}


def permissions(request: HttpRequest) -> dict[str, Callable[[], bool]]:
    """Context processor. Templates call each flag only when they test it, so a page that never does (the
    admin's, the API description's) asks nothing of the policy."""
    return {name: partial(_may, request, action) for name, action in FLAGS.items()}


def _may(request: HttpRequest, action: str) -> bool:
    return policy.can(policy.for_request(request), action)


def signed_in_user(request: HttpRequest) -> User:
    """`request.user`, typed as the user it is in a `login_required` view (which never meets AnonymousUser)."""
    return cast("User", request.user)
