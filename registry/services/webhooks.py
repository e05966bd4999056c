"""Outgoing signed webhooks: recorded, then delivered by a Celery task with bounded retries.

Signing follows Standard Webhooks (the `standardwebhooks` library): headers webhook-id, webhook-timestamp and
webhook-signature = "v1," + base64(HMAC-SHA256(secret, f"{id}.{timestamp}.{body}")). The receiver verifies
with the same library and the secret it was given ("whsec_" + base64 key).

Where a delivery may go (docs/security.md, "Webhooks"): an http(s) URL without credentials, whose host resolves
only to global addresses, or to networks the operator allows in BENCHREG_WEBHOOK_ALLOWED_NETWORKS.
`webhook_url_problem` says so when an address is registered; the connection itself enforces it again (the name
is resolved once, every address checked, and the socket goes to a checked address, so a name that resolves
elsewhere by then, DNS rebinding, gains nothing). Redirects are not followed. One attempt has a total deadline
and reads a bounded number of bytes (the status line and headers; the body is never read).
"""

from __future__ import annotations

import base64
import concurrent.futures
import ipaddress
import json
import logging
import secrets
import socket
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import SplitResult, urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from registry import dispatch
from registry.choices import AuditKind
from registry.models import WebhookDelivery
from registry.services.audit import audit_append

logger = logging.getLogger(__name__)

DELIVER_TASK = "registry.tasks.webhooks.deliver_webhook"  # routed to BENCHREG_WEBHOOK_QUEUE by settings
BACKOFF_S = 2.0
# NAT64 (RFC 6052) embeds an IPv4 address that a translating gateway would reach.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Name resolution may hang (an unreachable resolver); it runs here so the attempt's deadline still holds.
_resolver = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="webhook-dns")


def webhook_secret_new() -> str:
    """A fresh Standard Webhooks secret: 'whsec_' + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


# --- where a delivery may go ----------------------------------------------------------------------------------


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(cidr, strict=False) for cidr in settings.BENCHREG_WEBHOOK_ALLOWED_NETWORKS]


def address_problem(address: str) -> str | None:
    """Why a delivery may not connect to this IP address (None: it may): it must be global, and so must any IPv4
    address it embeds (IPv4-mapped, 6to4, NAT64), unless an allowed network holds it."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if any(ip in net for net in _allowed_networks()):
        return None
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = [ip.ipv4_mapped, ip.sixtofour, ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None]
        candidates += [e for e in embedded if e is not None]
    for candidate in candidates:
        if not candidate.is_global or candidate.is_multicast:
            return (
                f"{address} is not a global address (loopback, private, link-local, reserved or unspecified); "
                "an operator allows internal receivers with BENCHREG_WEBHOOK_ALLOWED_NETWORKS"
            )
    return None


def _resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (an IP literal: itself), in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _resolve_within(host: str, port: int, seconds: float) -> list[str]:
    future = _resolver.submit(_resolve, host, port)
    try:
        return future.result(timeout=max(seconds, 0.001))
    except concurrent.futures.TimeoutError:
        raise TimeoutError(f"resolving {host} took over {seconds:.1f} s") from None


def webhook_url_problem(url: str, *, resolve: bool = True) -> str | None:
    """Why `url` may not receive webhooks (None: it may). The one check for every webhook address.

    http or https, a host, no credentials (user:password@ would be sent as Basic auth to whoever answers), and a
    host that is a global address or, with `resolve`, a name resolving only to global addresses (or to networks
    BENCHREG_WEBHOOK_ALLOWED_NETWORKS allows). A name that does not resolve now is accepted: each delivery
    checks the addresses it connects to anyway.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    problem = _form_problem(parts)
    if problem:
        return problem
    host = parts.hostname or ""  # not empty: _form_problem says so
    if _is_ip_literal(host):
        return address_problem(host)
    if host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost"):  # RFC 6761: always loopback
        return address_problem("127.0.0.1")
    if not resolve:
        return None
    return _resolved_problem(host, port or (443 if parts.scheme == "https" else 80))


def _form_problem(parts: SplitResult) -> str | None:
    if parts.scheme not in ("http", "https"):
        return "the scheme must be http or https"
    if "@" in parts.netloc:
        return "a webhook address may not carry credentials (user:password@); the signature authenticates us"
    if not parts.hostname:
        return "the address names no host"
    return None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _resolved_problem(host: str, port: int) -> str | None:
    """Why `host` may not receive webhooks by the addresses it resolves to now (None: it may, or it does not
    resolve now)."""
    try:
        addresses = _resolve_within(host, port, float(settings.BENCHREG_WEBHOOK_DEADLINE_S))
    except (OSError, ValueError):  # UnicodeError is a ValueError; TimeoutError (past the deadline) an OSError
        return None
    for address in addresses:
        problem = address_problem(address)
        if problem:
            return f"{host} resolves to {problem}"
    return None


def webhook_post(url: str, *, content: bytes, headers: dict[str, str]) -> int:
    """POST `content` to `url` under every rule above; returns the answer's status. Raises RefusedDestination
    (wrapped in httpx.ConnectError) where the destination is not allowed, httpx.HTTPError on other failures."""
    from registry.services.webhook_transport import post, refuse  # httpx and httpcore (~0.06 s): deliveries only

    problem = webhook_url_problem(url, resolve=False)
    if problem:
        refuse(problem)
    return post(url, content=content, headers=headers, check=address_problem, resolve=_resolve_within)


# --- deliveries -----------------------------------------------------------------------------------------------


def webhook_enqueue(*, url: str, secret: str, event: str, body: dict[str, Any]) -> WebhookDelivery:
    """Record one delivery and queue it once the caller's transaction commits. Returns the record.

    Whatever happens to the delivery later (no broker, a receiver that fails), the caller's work stands: queueing
    errors are logged, and the sweep re-queues what was never attempted."""
    delivery = WebhookDelivery.objects.create(
        message_id=f"msg_{uuid.uuid4().hex}",
        url=url,
        secret=secret,
        event=event,
        body=body,
        created_at=timezone.now(),
        next_attempt_at=timezone.now(),
    )
    dispatch.after_commit(DELIVER_TASK, delivery.pk)
    return delivery


def webhook_signed(delivery: WebhookDelivery, *, at: datetime | None = None) -> tuple[bytes, dict[str, str]]:
    """The exact body bytes and the signed headers for one attempt."""
    when = at or datetime.now(UTC)
    payload = json.dumps(
        {"type": delivery.event, "timestamp": when.isoformat().replace("+00:00", "Z"), "data": delivery.body},
        separators=(",", ":"),
        sort_keys=True,
    )
    signature = Webhook(delivery.secret).sign(delivery.message_id, when, payload)
    headers = {
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(int(when.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }
    return payload.encode(), headers


def _claim(delivery_id: int) -> WebhookDelivery | None:
    """The pending delivery, its next attempt moved past this one's deadline so that no other worker (a sweep's
    re-queue) sends the same attempt meanwhile; None when it is finished or another worker holds it."""
    delivery = WebhookDelivery.objects.filter(pk=delivery_id).first()
    now = timezone.now()
    if delivery is None or delivery.state != "pending":
        return None
    if delivery.next_attempt_at is not None and delivery.next_attempt_at > now + timedelta(seconds=1):
        return None  # not due: a duplicate message (a sweep's re-queue) arriving before the retry's own
    hold = now + timedelta(seconds=float(settings.BENCHREG_WEBHOOK_DEADLINE_S) + 60)
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, state="pending", next_attempt_at=delivery.next_attempt_at
    ).update(next_attempt_at=hold)
    if not claimed:
        return None
    delivery.next_attempt_at = hold
    return delivery


def _finish(delivery: WebhookDelivery) -> None:
    """Save a delivery that ended, with its audit entry: which event's delivery ended, nothing more. Its state,
    status, attempts and address stay on the row (a public log of them would tell open ports from closed ones)."""
    with transaction.atomic():
        delivery.finished_at = timezone.now()
        delivery.next_attempt_at = None
        audit_append(
            kind=AuditKind.WEBHOOK_FINISHED,
            actor="registry",
            subject=delivery.message_id,
            payload={"event": delivery.event},
        )
        delivery.save()
    if delivery.state == "failed":
        logger.warning(
            "webhook %s (%s) failed after %d attempt(s): %s",
            delivery.message_id,
            delivery.event,
            delivery.attempts,
            delivery.last_error,
        )


def webhook_attempt(*, delivery_id: int) -> tuple[WebhookDelivery | None, bool]:
    """One delivery attempt. Returns (delivery, retry?): retry on network errors, 408, 429 and 5xx only,
    while attempts remain; a refused destination, a missing secret or any other answer ends it. The final state
    (delivered or failed) is recorded and audited. (None, False) when there was nothing to attempt."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return None, False
    status, error, permanent = _send(delivery)
    delivery.attempts += 1
    delivery.last_status, delivery.last_error = status, error[:2000]
    _judge(delivery, status, error, permanent=permanent)
    if delivery.state == "pending":
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=webhook_backoff(delivery.attempts))
        delivery.save(update_fields=["attempts", "last_status", "last_error", "next_attempt_at"])
        return delivery, True
    _finish(delivery)
    return delivery, False


def _send(delivery: WebhookDelivery) -> tuple[int | None, str, bool]:
    """Sign and post the delivery: (status, error, permanent?)."""
    import httpx  # loaded by the first delivery (registry/services/webhook_transport.py)

    from registry.services.webhook_transport import RefusedDestination

    try:
        body, headers = webhook_signed(delivery)
    except Exception as exc:  # an unusable secret: no attempt can ever be signed
        return None, f"cannot sign: no usable secret ({type(exc).__name__})", True
    try:
        return webhook_post(delivery.url, content=body, headers=headers), "", False
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}", isinstance(exc.__cause__, RefusedDestination)
    except Exception as exc:  # whatever the receiver does, the delivery ends recorded
        return None, f"{type(exc).__name__}: {exc}", True


def _judge(delivery: WebhookDelivery, status: int | None, error: str, *, permanent: bool) -> None:
    """Delivered on a 2xx; failed when the attempt cannot be retried or attempts ran out; else still pending."""
    transient = not permanent and (status is None or status in (408, 429) or status >= 500)
    if status is not None and 200 <= status < 300:
        delivery.state = "delivered"
    elif not transient or delivery.attempts >= settings.BENCHREG_WEBHOOK_MAX_ATTEMPTS:
        delivery.state = "failed"
        if not error:
            delivery.last_error = f"answered HTTP {status}"


def webhook_backoff(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones: 2, 4, 8, 16..."""
    seconds: float = BACKOFF_S * 2 ** (attempts - 1)  # int ** int is typed Any (a negative power is a float)
    return seconds


def webhooks_sweep() -> dict[str, int]:
    """Nothing stays pending unseen: a delivery pending past BENCHREG_WEBHOOK_GIVE_UP_AFTER_S is marked failed
    (and logged); one overdue (its message lost, or no worker ran when it was made) is queued again."""
    now = timezone.now()
    pending = WebhookDelivery.objects.filter(state="pending")
    old = pending.filter(created_at__lt=now - timedelta(seconds=settings.BENCHREG_WEBHOOK_GIVE_UP_AFTER_S))
    # not one a worker holds right now
    given_up = sum(_give_up(delivery) for delivery in old.exclude(next_attempt_at__gt=now)[:1000])
    grace = timedelta(seconds=float(settings.BENCHREG_WEBHOOK_DEADLINE_S) + 60)
    queued = 0
    for pk, due in pending.filter(next_attempt_at__lt=now - grace).values_list("pk", "next_attempt_at")[:1000]:
        # Marked due now, so the next sweep waits another grace period before queueing it again.
        if WebhookDelivery.objects.filter(pk=pk, state="pending", next_attempt_at=due).update(next_attempt_at=now):
            dispatch.send(DELIVER_TASK, pk)
            queued += 1
    return {"failed": given_up, "queued": queued}


def _give_up(delivery: WebhookDelivery) -> bool:
    """Mark a delivery pending too long failed (and finish it), unless it changed meanwhile."""
    error = (
        f"not delivered within {settings.BENCHREG_WEBHOOK_GIVE_UP_AFTER_S} s ({delivery.attempts} "
        f"attempt(s); does a worker consume the {settings.BENCHREG_WEBHOOK_QUEUE!r} queue?) "
        f"{delivery.last_error}"
    )[:2000]
    with transaction.atomic():
        if not WebhookDelivery.objects.filter(
            pk=delivery.pk, state="pending", next_attempt_at=delivery.next_attempt_at
        ).update(state="failed"):
            return False
        delivery.state, delivery.last_error = "failed", error
        _finish(delivery)
    return True
