"""A run's artifacts: the files its document names in `provenance.artifacts` (a serving level's per-request export,
from which its figures can be recomputed), uploaded after the run and kept by the registry.

An upload is kept only if the run's document names its sha256, and the bytes received hash to it and have the
length it names. The body is streamed to a temporary file (never held in memory), at most MAX_ARTIFACT_BYTES; only
once it is checked are the bytes put in the `artifacts` storage under their sha256 (runs naming the same file share
one copy) and the row and its `artifact.stored` audit entry written, in one transaction. A refused or failed upload
leaves no row, and no file that no row names. Sending the same bytes again answers the row already kept.

A download streams the stored bytes and checks them on the way out (`checked_chunks`): bytes that no longer hash
to the row's sha256 end the response short of its Content-Length, so no client takes them for the file.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files import File
from django.db import IntegrityError, transaction
from django.utils import timezone

from registry.choices import AuditKind
from registry.exceptions import RegistryError
from registry.models import ApiToken, RunArtifact, Submission
from registry.models.artifacts import storage_name
from registry.selectors.artifacts import named_artifact, named_artifacts
from registry.services.audit import audit_append
from registry.storage import artifacts_storage

log = logging.getLogger(__name__)
CHUNK = 1024 * 1024


class ArtifactNotNamed(RegistryError):
    """The run's document names no artifact with this sha256: the registry keeps only what a document names."""

    status = 409
    code = "artifact-not-named"


class ArtifactMismatch(RegistryError):
    """The bytes received are not the file the document names (another sha256 or length)."""

    status = 422
    code = "artifact-mismatch"


class ArtifactTooLarge(RegistryError):
    status = 413
    code = "artifact-too-large"


class ArtifactCorrupt(Exception):
    """Stored bytes that no longer hash to their row's sha256 (found while serving them)."""


def as_sha256(text: str) -> str:
    """`sha256:<hex>` from the path's 64 lower-case hex digits; RegistryError (400) otherwise."""
    hexdigest = text
    if len(hexdigest) != 64 or any(c not in "0123456789abcdef" for c in hexdigest):
        raise RegistryError(
            f"{text[:80]!r} is not a sha256: give the 64 lower-case hex digits the document names",
            code="invalid-sha256",
        )
    return "sha256:" + hexdigest


@dataclass(frozen=True)
class Received:
    file: IO[bytes]
    sha256: str
    size: int


def _receive(stream: Any, limit: int, into: IO[bytes]) -> Received:
    digest, size = hashlib.sha256(), 0
    while stream is not None:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise ArtifactTooLarge(f"the body is larger than this registry's limit of {limit:,} bytes for an artifact")
        digest.update(chunk)
        into.write(chunk)
    into.seek(0)
    return Received(into, "sha256:" + digest.hexdigest(), size)


def artifact_store(
    *,
    run: Submission,
    sha256: str,
    stream: Any,
    declared_length: int | None,
    uploaded_by: User,
    token: ApiToken | None = None,
) -> tuple[RunArtifact, bool]:
    """Keep the bytes read from `stream` as the run's artifact `sha256`: (row, True) when stored now, (row, False)
    when these bytes were already kept for this run. Refuses (RegistryError, nothing stored) what the document does
    not name, bytes that are not the named file, and more than settings.MAX_ARTIFACT_BYTES."""
    named = named_artifact(run, sha256)
    if named is None:
        names = ", ".join(f"{a.get('name')} ({a['sha256']})" for a in named_artifacts(run.document)) or "none"
        raise ArtifactNotNamed(
            f"run {run.pk}'s document names no artifact with {sha256} in provenance.artifacts (it names: {names}); "
            "the registry keeps only the files a run's document names"
        )
    limit = settings.MAX_ARTIFACT_BYTES
    stated = named.get("bytes")
    if isinstance(stated, int) and stated > limit:
        raise ArtifactTooLarge(
            f"the document names {named.get('name')} as {stated:,} bytes; this registry keeps artifacts of at most "
            f"{limit:,} bytes (BENCHREG_MAX_ARTIFACT_BYTES)"
        )
    if declared_length is not None and declared_length > limit:
        raise ArtifactTooLarge(f"the body is {declared_length:,} bytes; the limit for an artifact is {limit:,} bytes")
    if isinstance(stated, int) and declared_length is not None and declared_length != stated:
        raise ArtifactMismatch(
            f"the body is {declared_length:,} bytes; the document names {named.get('name')} as {stated:,} bytes"
        )
    with tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR) as tmp:
        received = _receive(stream, limit, tmp)
        if isinstance(stated, int) and received.size != stated:
            raise ArtifactMismatch(
                f"received {received.size:,} bytes; the document names {named.get('name')} as {stated:,} bytes"
            )
        if received.sha256 != sha256:
            raise ArtifactMismatch(
                f"the bytes received hash to {received.sha256}, not to {sha256} as the document names "
                f"{named.get('name')}: nothing was stored"
            )
        existing = RunArtifact.objects.filter(run=run, sha256=sha256).first()
        if existing is not None:
            return existing, False
        try:
            wrote = _put(received)
        except (OSError, BotoCoreError, ClientError) as exc:
            log.warning("artifact %s of run %s cannot be written: %s", sha256, run.pk, exc)
            raise RegistryError(
                f"the artifacts storage cannot take {sha256} now; nothing was stored, try again",
                status=503,
                code="storage-unavailable",
            ) from None
        try:
            return _record(run, named, received, uploaded_by, token), True
        except IntegrityError:  # the same upload, concurrently, recorded it first
            _drop_unnamed(sha256, wrote)
            return RunArtifact.objects.get(run=run, sha256=sha256), False
        except BaseException:
            _drop_unnamed(sha256, wrote)
            raise


def _put(received: Received) -> bool:
    """Put the checked bytes in the storage under their sha256; whether this call wrote them (False: already there)."""
    storage, name = artifacts_storage(), storage_name(received.sha256)
    if storage.exists(name):
        return False
    saved = storage.save(name, File(received.file, name=name))
    if saved != name:  # written meanwhile by another upload of the same bytes: keep one copy
        storage.delete(saved)
        return False
    return True


def _drop_unnamed(sha256: str, wrote: bool) -> None:
    if wrote and not RunArtifact.objects.filter(sha256=sha256).exists():
        artifacts_storage().delete(storage_name(sha256))


def _record(
    run: Submission, named: dict[str, Any], received: Received, user: User, token: ApiToken | None
) -> RunArtifact:
    with transaction.atomic():
        row = RunArtifact.objects.create(
            run=run,
            name=str(named.get("name") or "")[:200],
            sha256=received.sha256,
            bytes=received.size,
            format=str(named.get("format") or "")[:100],
            media_type=str(named.get("media_type") or "")[:100],
            stored_at=timezone.now(),
            uploaded_by=user,
            uploaded_by_name=user.get_username(),
        )
        audit_append(
            kind=AuditKind.ARTIFACT_STORED,
            actor=user.get_username(),
            actor_user=user.pk,
            actor_token=token.pk if token is not None else None,
            subject=run.digest,
            time=row.stored_at,
            payload={"run": run.pk, "sha256": row.sha256, "bytes": row.bytes},
        )
    return row


def artifact_stream(artifact: RunArtifact) -> Iterator[bytes]:
    """The stored bytes, opened now (RegistryError 503 when the storage cannot give them), read in chunks as the
    response is sent and checked on the way out (`checked_chunks`)."""
    try:
        f = artifacts_storage().open(artifact.storage_name, "rb")
    except (OSError, BotoCoreError, ClientError) as exc:
        log.warning("artifact %s of run %s cannot be read: %s", artifact.sha256, artifact.run_id, exc)
        raise RegistryError(
            f"the bytes of {artifact.sha256} cannot be read from storage now; try again",
            status=503,
            code="storage-unavailable",
        ) from None
    return checked_chunks(artifact, f)


def checked_chunks(artifact: RunArtifact, f: IO[bytes]) -> Iterator[bytes]:
    """The bytes of `f` in chunks, the last one held back until they are known to hash to the row's sha256 and have
    its length: otherwise ArtifactCorrupt is raised instead, and the response ends short of its Content-Length."""
    digest, size, held = hashlib.sha256(), 0, b""
    with f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            if held:
                yield held
            held = chunk
    if size != artifact.bytes or "sha256:" + digest.hexdigest() != artifact.sha256:
        log.error("artifact %s of run %s: the stored bytes no longer hash to it", artifact.sha256, artifact.run_id)
        raise ArtifactCorrupt(f"the stored bytes of {artifact.sha256} no longer hash to it")
    if held:
        yield held
