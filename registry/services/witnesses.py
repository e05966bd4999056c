"""Asking witnesses to cosign the audit log's checkpoints (C2SP tlog-witness), and keeping what they answer.

Each configured witness (settings.BENCHREG_WITNESSES, "URL VKEY" pairs) gets every new checkpoint with a consistency
proof from the size it last cosigned (the latest cosignature stored for it, else 0). A 409 answer names the size
the witness holds; the request is made once more from that size. A cosignature is kept only if it verifies with the
witness's configured key. Called by the Celery task registry.tasks.audit.request_cosignatures (with retries) after
each checkpoint commits, and synchronously for a report's checkpoint so the report names a cosigned checkpoint.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError

from protocol.cosignature import Cosigner, parse_cosigner_verifier_key, verify_cosignatures
from protocol.signed_note import NoteError
from registry.exceptions import RegistryError
from registry.models import Checkpoint, Cosignature
from registry.selectors.audit import audit_consistency

log = logging.getLogger(__name__)


class WitnessRefused(RegistryError):
    """A witness answered, and did not cosign: `status` and its words say why (a fork, a bad proof, ...)."""

    status = 502
    code = "witness-refused"


class WitnessUnreachable(RegistryError):
    """No answer from a witness (network, timeout): worth retrying."""

    status = 503
    code = "witness-unreachable"


@dataclass(frozen=True)
class WitnessConfig:
    url: str
    cosigner: Cosigner

    @property
    def vkey(self) -> str:
        return self.cosigner.vkey


def witnesses_configured() -> list[WitnessConfig]:
    """The witnesses in settings. Raises ImproperlyConfigured naming a malformed entry."""
    out = []
    for item in settings.BENCHREG_WITNESSES:
        url, _, vkey = item.strip().partition(" ")
        if vkey.strip().startswith("@"):  # "URL @FILE": the key the witness published (docker-compose.yml)
            try:
                vkey = Path(vkey.strip()[1:]).read_text().strip()
            except OSError as exc:
                raise ImproperlyConfigured(f"BENCHREG_WITNESSES entry {item!r}: {exc.strerror}") from None
        try:
            out.append(WitnessConfig(url.rstrip("/"), parse_cosigner_verifier_key(vkey.strip())))
        except NoteError as exc:
            raise ImproperlyConfigured(f"BENCHREG_WITNESSES entry {item!r}: {exc} (expected 'URL VKEY')") from None
    return out


def _last_size(witness: WitnessConfig) -> int:
    size = (
        Cosignature.objects.filter(vkey=witness.vkey)
        .order_by("-checkpoint__size")
        .values_list("checkpoint__size", flat=True)
        .first()
    )
    return size or 0


def _request_body(checkpoint: Checkpoint, old_size: int) -> bytes:
    proof = [] if old_size == 0 else audit_consistency(first=old_size, second=checkpoint.size).proof
    lines = [f"old {old_size}", *(base64.b64encode(h).decode() for h in proof)]
    return ("\n".join(lines) + "\n\n").encode() + checkpoint.note.encode()


def cosignature_request(
    *, checkpoint: Checkpoint, witness: WitnessConfig, client: httpx.Client | None = None
) -> Cosignature | None:
    """Ask one witness to cosign; store and return its cosignature. None if it already holds a larger checkpoint
    (this one is stale for it). Raises WitnessRefused or WitnessUnreachable."""
    existing: Cosignature | None = Cosignature.objects.filter(checkpoint=checkpoint, vkey=witness.vkey).first()
    if existing is not None:
        return existing
    old_size = _last_size(witness)
    own = client is None
    http = client or httpx.Client(timeout=settings.BENCHREG_WITNESS_TIMEOUT_S)
    try:
        return _ask(http, checkpoint, witness, old_size)
    finally:
        if own:
            http.close()


def _ask(http: httpx.Client, checkpoint: Checkpoint, witness: WitnessConfig, old_size: int) -> Cosignature | None:
    for _ in range(2):  # a 409 tells us the witness's size: one more try from there
        if old_size > checkpoint.size:
            return None
        try:
            answer = http.post(f"{witness.url}/add-checkpoint", content=_request_body(checkpoint, old_size))
        except httpx.HTTPError as exc:
            raise WitnessUnreachable(f"witness {witness.url}: {exc}") from None
        held = _held_size(answer, checkpoint, witness, old_size)
        if held is not None:
            old_size = held
            continue
        if answer.status_code != 200:
            raise WitnessRefused(
                f"witness {witness.cosigner.name} refused checkpoint {checkpoint.pk} "
                f"(size {checkpoint.size}): {answer.status_code} {answer.text.strip()[:300]}"
            )
        return _store(checkpoint, witness, answer.text)
    raise WitnessRefused(f"witness {witness.cosigner.name} keeps answering 409 for checkpoint {checkpoint.pk}")


def _held_size(answer: httpx.Response, checkpoint: Checkpoint, witness: WitnessConfig, old_size: int) -> int | None:
    """The size the witness holds, from a 409 that tells it (None for any other answer)."""
    if answer.status_code == 409 and answer.headers.get("content-type", "").startswith("text/x.tlog.size"):
        held = answer.text.strip()
        if not held.isdigit() or int(held) == old_size:
            raise WitnessRefused(
                f"witness {witness.cosigner.name} refused checkpoint {checkpoint.pk} (size "
                f"{checkpoint.size}): it holds another root at size {held}"
            )
        return int(held)
    return None


def _store(checkpoint: Checkpoint, witness: WitnessConfig, body: str) -> Cosignature:
    for line in body.splitlines():
        found = verify_cosignatures((checkpoint.note + line + "\n").encode(), [witness.cosigner])
        if witness.vkey in found:
            try:
                return Cosignature.objects.create(
                    checkpoint=checkpoint,
                    witness=witness.cosigner.name,
                    vkey=witness.vkey,
                    line=line,
                    timestamp=found[witness.vkey],
                    created_at=datetime.now(UTC),
                )
            except IntegrityError:  # a concurrent request stored it first
                return Cosignature.objects.get(checkpoint=checkpoint, vkey=witness.vkey)
    raise WitnessRefused(f"witness {witness.cosigner.name} answered without a cosignature by its configured key")


def checkpoint_cosign(*, checkpoint: Checkpoint) -> tuple[int, list[str]]:
    """Ask every configured witness; return (cosignatures the checkpoint now has, what went wrong per witness)."""
    problems = []
    with httpx.Client(timeout=settings.BENCHREG_WITNESS_TIMEOUT_S) as client:
        for witness in witnesses_configured():
            try:
                cosignature_request(checkpoint=checkpoint, witness=witness, client=client)
            except RegistryError as exc:
                log.warning("cosignature: %s", exc.message)
                problems.append(exc.message)
    return Cosignature.objects.filter(checkpoint=checkpoint).count(), problems
