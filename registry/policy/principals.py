"""Who is asking: a Principal built from a request, a session user or an API token, with the rights in force now.

* a session user: the rights of their roles;
* an API token: the token's scopes ∩ its owner's rights *now*, so a demoted owner's old token loses what the
  owner lost, and a token never carries more than its owner may do;
* an enrolled agent (a live Agent's own token): its scopes ∩ {agent, submit}: it works on its own jobs and
  submits their runs and uploads the files those runs name, nothing else;
* anonymous: no rights.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ObjectDoesNotExist

from registry.models import ApiToken
from registry.policy.rules import AGENT, AGENT_RIGHTS, ROLES, Principal, rights_of, roles_from_groups

ANONYMOUS = Principal(user=AnonymousUser(), rights=frozenset())


def user_roles(user: Any) -> frozenset[str]:
    """The user's roles with what they imply: an admin is also a submitter and a viewer."""
    if user is None or not user.is_authenticated or not user.is_active:
        return frozenset()
    if user.is_superuser or user.is_staff:
        return frozenset(ROLES)
    cached = getattr(user, "_benchreg_roles", None)
    if cached is None:
        cached = remember_groups(user, user.groups.values_list("name", flat=True))
    return cached


def remember_groups(user: Any, names: Iterable[str]) -> frozenset[str]:
    """Keep the roles that the user's group `names` give on the user object, for the rest of the request (token
    authentication reads the names with the token, in one query)."""
    roles = roles_from_groups(names)
    user._benchreg_roles = roles
    return roles


def user_rights(user: Any) -> frozenset[str]:
    """What a user may do through any credential: the union of their roles' rights."""
    return rights_of(user_roles(user))


def for_user(user: Any) -> Principal:
    """A session user (web pages, the admin) or a user acting at the shell."""
    if user is None or not user.is_authenticated:
        return ANONYMOUS
    return Principal(user=user, rights=user_rights(user))


def token_agent(token: Any) -> Any:
    """The live agent acting through this token, or None (no token, a person's token, a revoked agent)."""
    if token is None:
        return None
    try:
        agent = token.agent  # fetched with the token by TokenAuthentication (select_related)
    except ObjectDoesNotExist:
        return None
    return agent if agent.revoked_at is None else None


def for_token(token: Any) -> Principal:
    """A request authenticated by an API token: rights evaluated now, never more than the owner's."""
    agent = token_agent(token)
    scopes = frozenset(token.scopes)
    if agent is not None:
        return Principal(user=token.user, rights=scopes & AGENT_RIGHTS, token=token, agent=agent)
    owner = user_rights(token.user)
    return Principal(user=token.user, rights=(scopes & owner) - {AGENT}, token=token)


def for_request(request: Any) -> Principal:
    """The principal of a Django or DRF request, computed once per request."""
    raw = getattr(request, "_request", request)  # the Django request under a DRF one
    cached = getattr(raw, "_benchreg_principal", None)
    auth = getattr(request, "auth", None)
    if cached is not None and cached.token is (auth if isinstance(auth, ApiToken) else None):
        return cached  # type: ignore[no-any-return]
    principal = for_token(auth) if isinstance(auth, ApiToken) else for_user(getattr(request, "user", None))
    raw._benchreg_principal = principal
    return principal
