"""A short per-process memory of authenticated tokens, so a client's requests do not each pay a round trip to
PostgreSQL to look their token up (issue 42: the lookup was a tenth of a submission).

What is remembered is the token row with its user, agent and the user's group names, as `token_for_key_hash` read
them, for at most BENCHREG_TOKEN_CACHE_S seconds (default 2; 0 turns the memory off). Revocation stays prompt:
* in the process that makes the change (revoking or expiring a token, deactivating or demoting its owner, retiring
  an agent, through the services, the admin or the ORM), the memory is emptied at once, by the model signals below;
* in every other process (another gunicorn worker, a Celery worker) the change takes effect within
  BENCHREG_TOKEN_CACHE_S seconds, the bound docs/security.md states.
Each request gets its own copies of the rows, so nothing one request sets on them is seen by the next.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db.models.signals import m2m_changed, post_delete, post_save

from registry.models import Agent, ApiToken
from registry.selectors.tokens import token_for_key_hash

_lock = threading.Lock()
_remembered: dict[str, tuple[float, ApiToken]] = {}
_MAX_ENTRIES = 10_000  # a bound on memory: emptied when reached (a flood of distinct keys is refused before this)


def token_lookup(key_hash: str) -> ApiToken | None:
    """The token whose key hashes to `key_hash` (as `token_for_key_hash`), from memory when it was read less than
    BENCHREG_TOKEN_CACHE_S seconds ago. Only a person's token that was found is
    remembered: an unknown key, and an agent's token, are asked every time."""
    ttl = settings.BENCHREG_TOKEN_CACHE_S
    if ttl <= 0:
        return token_for_key_hash(key_hash)
    now = time.monotonic()
    with _lock:
        hit = _remembered.get(key_hash)
    if hit is not None and now - hit[0] < ttl:
        return _copy(hit[1])
    token = token_for_key_hash(key_hash)
    if token is not None and _person_token(token):
        with _lock:
            if len(_remembered) >= _MAX_ENTRIES:
                _remembered.clear()
            _remembered[key_hash] = (now, _copy(token))
    return token


def token_used(token: ApiToken) -> None:
    """The token's `last_used_at` was written: the remembered row follows, so the next request does not write it
    again within LAST_USED_RESOLUTION."""
    with _lock:
        hit = _remembered.get(token.key_hash)
        if hit is not None:
            hit[1].last_used_at = token.last_used_at


def _person_token(token: ApiToken) -> bool:
    """Only a person's token is remembered: an agent's requests (heartbeats, claims) write its row and read it back,
    and are few next to submissions."""
    return token._state.fields_cache.get("agent") is None


def forget_tokens(**_: Any) -> None:
    """Empty the memory (a token, user, group or agent changed in this process)."""
    with _lock:
        _remembered.clear()


def _copy(token: ApiToken) -> ApiToken:
    """A copy of the token with its own copies of its user and agent (copy.copy of a model copies its field cache's
    dict, not the related rows in it)."""
    token = copy.copy(token)
    cache = token._state.fields_cache
    for name in ("user", "agent"):
        if cache.get(name) is not None:
            cache[name] = copy.copy(cache[name])
    user = cache.get("user")
    if user is not None:
        user.__dict__.pop("_benchreg_roles", None)  # roles are re-derived from group_names per request
    return token


for _model in (ApiToken, User, Group, Agent):
    post_save.connect(forget_tokens, sender=_model, dispatch_uid=f"token-cache-save-{_model.__name__}")
    post_delete.connect(forget_tokens, sender=_model, dispatch_uid=f"token-cache-delete-{_model.__name__}")
m2m_changed.connect(forget_tokens, sender=User.groups.through, dispatch_uid="token-cache-groups")
m2m_changed.connect(forget_tokens, sender=Group.permissions.through, dispatch_uid="token-cache-group-perms")
