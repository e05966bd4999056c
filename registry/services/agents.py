"""Enrolment tokens and agents: create a single-use token, enrol a machine with it, heartbeat, revoke.

An agent acts through an ordinary ApiToken (scopes agent + submit) owned by a user of its own, so every run it
submits names the machine in `submitted_by` and `token`, exactly like a lab machine's submission.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from registry.choices import AuditKind, Scope
from registry.exceptions import RegistryError
from registry.models import Agent, ApiToken, EnrolmentToken
from registry.services.audit import audit_append
from registry.services.jobs import jobs_cancel_for_agent
from registry.services.tokens import hash_token, token_create, token_revoke, user_for_token

ENROLMENT_PREFIX = "bre_"
MAX_ENROLMENT_LIFETIME = timedelta(days=30)
AGENT_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,59}$")
EMBEDDED_AGENT_NAME = "local"


class EnrolmentRefused(RegistryError):
    """The enrolment token is unknown, used or expired. One message for all three: no oracle."""

    status = 403
    code = "enrolment-refused"


@transaction.atomic
def enrolment_token_create(
    *, created_by: User | None, expires_in: timedelta, note: str = "", actor: str | None = None
) -> tuple[EnrolmentToken, str]:
    """Create a single-use enrolment token; returns (row, plain token). The plain token is shown once."""
    if not timedelta(0) < expires_in <= MAX_ENROLMENT_LIFETIME:
        raise RegistryError(
            f"an enrolment token lives between 1 s and {MAX_ENROLMENT_LIFETIME.days} days", code="invalid-expiry"
        )
    plain = ENROLMENT_PREFIX + secrets.token_urlsafe(32)
    name = actor or (created_by.get_username() if created_by is not None else "cli")
    row = EnrolmentToken.objects.create(
        prefix=plain[:12],
        key_hash=hash_token(plain),
        note=note,
        created_by=created_by,
        created_by_name=name,
        expires_at=timezone.now() + expires_in,
    )
    _audit_enrolment(row, name)
    return row, plain


def _audit_enrolment(row: EnrolmentToken, actor: str) -> None:
    audit_append(
        kind=AuditKind.ENROLMENT_CREATED,
        actor=actor,
        subject=f"enrolment:{row.pk}",
        payload={"prefix": row.prefix, "expires_at": row.expires_at.isoformat(), "note": row.note},
    )


def _new_queue(name: str) -> str:
    # Random suffix: a re-enrolled machine never reads messages meant for its revoked predecessor.
    return f"benchreg.agent.{name}.{secrets.token_hex(4)}"


def _create_agent(
    *, name: str, inventory: dict[str, Any], enrolment: EnrolmentToken | None, embedded: bool, actor: str
) -> tuple[Agent, str]:
    if not AGENT_NAME.match(name):
        raise RegistryError("an agent name is 1-60 characters of a-z, 0-9, '.', '_' and '-'", code="invalid-agent-name")
    if Agent.objects.filter(name=name).exists():
        raise _name_taken(name)
    user = user_for_token(username=f"agent-{name}")
    token, plain = token_create(user=user, name=f"agent {name}", scopes=[Scope.AGENT, Scope.SUBMIT], actor=actor)
    agent = _insert_agent(name, user, token, enrolment=enrolment, embedded=embedded, inventory=inventory)
    _audit_enrolled(agent, token, enrolment, actor)
    return agent, plain


def _audit_enrolled(agent: Agent, token: ApiToken, enrolment: EnrolmentToken | None, actor: str) -> None:
    audit_append(
        kind=AuditKind.AGENT_ENROLLED,
        actor=actor,
        subject=f"agent:{agent.pk}",
        payload={
            "name": agent.name,
            "queue": agent.queue,
            "token": token.prefix,
            "embedded": agent.embedded,
            "enrolment": enrolment.prefix if enrolment else None,
            "system": (agent.inventory.get("system") or {}).get("name"),
        },
    )


def _name_taken(name: str) -> RegistryError:
    return RegistryError(
        f"an agent named {name!r} is already enrolled; choose another name", status=409, code="agent-name-taken"
    )


def _insert_agent(name: str, user: User, token: ApiToken, **fields: Any) -> Agent:
    """The agent's row (`fields`: enrolment, embedded, inventory), in a savepoint: on a name taken meanwhile the
    caller's transaction stays usable to answer."""
    try:
        with transaction.atomic():
            return Agent.objects.create(name=name, queue=_new_queue(name), user=user, token=token, **fields)
    except IntegrityError:
        # A concurrent enrolment took the name after the caller's check: answer as that check does. The caller's
        # transaction then rolls back, so the enrolment token is not spent and the user and token go too.
        if Agent.objects.filter(name=name).exists():
            raise _name_taken(name) from None
        raise


@transaction.atomic
def agent_enroll(*, enrolment_token: str, name: str, inventory: dict[str, Any]) -> tuple[Agent, str]:
    """Spend an enrolment token and register the machine. Returns (agent, plain agent token), shown once.

    The token is spent by a conditional update, so two machines racing with one token cannot both enrol.
    """
    now = timezone.now()
    row = EnrolmentToken.objects.filter(key_hash=hash_token(enrolment_token)).first()
    spent = (
        row is not None
        and EnrolmentToken.objects.filter(pk=row.pk, used_at__isnull=True, expires_at__gt=now).update(used_at=now) == 1
    )
    if row is None or not spent:
        raise EnrolmentRefused("the enrolment token is unknown, already used or expired")
    return _create_agent(name=name, inventory=inventory, enrolment=row, embedded=False, actor=f"enrolment:{row.prefix}")


@transaction.atomic
def agent_embedded_get_or_create(*, inventory: dict[str, Any]) -> Agent:
    """The registry's own agent, whose jobs run in-process when no broker is configured (embedded default)."""
    agent = Agent.objects.filter(name=EMBEDDED_AGENT_NAME, embedded=True, revoked_at__isnull=True).first()
    if agent is None:
        agent, _ = _create_agent(
            name=EMBEDDED_AGENT_NAME, inventory=inventory, enrolment=None, embedded=True, actor="registry"
        )
    return agent


def agent_heartbeat(*, agent: Agent, inventory: dict[str, Any] | None = None) -> Agent:
    """Record that the agent is alive (no audit entry: heartbeats are not evidence)."""
    now = timezone.now()
    fields: dict[str, Any] = {"last_heartbeat_at": now, "online": True}
    if inventory:
        fields["inventory"] = inventory
    Agent.objects.filter(pk=agent.pk, revoked_at__isnull=True).update(**fields)
    for key, value in fields.items():
        setattr(agent, key, value)
    return agent


@transaction.atomic
def agent_revoke(*, agent: Agent, actor: str) -> Agent:
    """Revoke an agent and its token (idempotent): it can no longer authenticate, claim or submit.

    Its queued and running jobs are cancelled, so nothing waits on a machine that will never answer.
    """
    if agent.revoked_at is None:
        agent.revoked_at = timezone.now()
        agent.online = False
        agent.save(update_fields=["revoked_at", "online"])
        token_revoke(token=agent.token, actor=actor)
        jobs_cancel_for_agent(agent=agent, actor=actor, reason="agent revoked")
        audit_append(
            kind=AuditKind.AGENT_REVOKED,
            actor=actor,
            subject=f"agent:{agent.pk}",
            payload={"name": agent.name, "token": agent.token.prefix},
        )
    return agent


def agents_mark_offline(*, now: datetime | None = None) -> int:
    """Mark agents offline whose last heartbeat is older than BENCHREG_AGENT_OFFLINE_AFTER. Returns how many."""
    stale = (now or timezone.now()) - timedelta(seconds=settings.BENCHREG_AGENT_OFFLINE_AFTER)
    return Agent.objects.filter(online=True, last_heartbeat_at__lt=stale).update(online=False)
