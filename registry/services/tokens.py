"""Creating and revoking API tokens. Plain tokens are returned once and never stored."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from registry import policy
from registry.choices import AuditKind, Scope
from registry.exceptions import RegistryError
from registry.models import ApiToken
from registry.policy import Principal
from registry.services.audit import audit_append

TOKEN_PREFIX = "brt_"  # noqa: S105 (a recognisable prefix, not a secret)


def hash_token(plain: str) -> str:
    """Tokens carry 256 random bits, so an unsalted SHA-256 is enough to make a leaked table useless."""
    return hashlib.sha256(plain.encode()).hexdigest()


def parse_scopes(scopes: Iterable[str] | str) -> list[str]:
    items = scopes.split(",") if isinstance(scopes, str) else list(scopes)
    cleaned = sorted({s.strip() for s in items if s.strip()})
    unknown = [s for s in cleaned if s not in Scope.values]
    if unknown or not cleaned:
        raise RegistryError(
            f"unknown or missing scopes {unknown or cleaned}; choose from {', '.join(Scope.values)}",
            code="invalid-scopes",
        )
    return cleaned


@transaction.atomic
def token_create(
    *,
    user: User,
    name: str,
    scopes: Iterable[str] | str,
    expires_at: datetime | None = None,
    actor: str | None = None,
) -> tuple[ApiToken, str]:
    """Create a token; returns (row, plain token). The plain token cannot be recovered later."""
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=plain[:12],
        key_hash=hash_token(plain),
        scopes=parse_scopes(scopes),
        expires_at=expires_at,
    )
    _audit_created(token, user, actor)
    return token, plain


def _audit_created(token: ApiToken, user: User, actor: str | None) -> None:
    audit_append(
        kind=AuditKind.TOKEN_CREATED,
        actor=actor or user.get_username(),
        subject=f"token:{token.pk}",
        payload={"user": user.get_username(), "name": token.name, "scopes": token.scopes, "prefix": token.prefix},
    )


def token_mint(
    *, principal: Principal, name: str, scopes: Iterable[str] | str, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """A token the caller makes for themselves: never with a scope the caller may not use itself (policy)."""
    wanted = parse_scopes(scopes)
    if not policy.can(principal, policy.TOKEN_MINT, wanted):
        allowed = sorted(policy.mintable_scopes(principal))
        raise policy.Refused(
            f"this credential may create tokens with at most the scopes {allowed}, not {wanted}",
            code="scope-exceeds-rights",
            errors=[
                {
                    "pointer": "/scopes",
                    "code": "scope-exceeds-rights",
                    "message": f"not allowed: {sorted(set(wanted) - set(allowed))}",
                }
            ],
        )
    return token_create(
        user=principal.user, name=name, scopes=wanted, expires_at=expires_at, actor=principal.user.get_username()
    )


@transaction.atomic
def token_revoke(*, token: ApiToken, actor: str) -> ApiToken:
    """Revoke a token (idempotent). Runs it submitted stay; it can do nothing more."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_append(
            kind=AuditKind.TOKEN_REVOKED,
            actor=actor,
            subject=f"token:{token.pk}",
            payload={"user": token.user.get_username(), "prefix": token.prefix},
        )
    return token


def user_for_token(*, username: str) -> User:
    """The named user, created (without a usable password) if needed: scripts and lab machines."""
    user, _ = get_user_model().objects.get_or_create(username=username)
    return user
