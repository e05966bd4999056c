"""Identity of a run: RFC 8785 canonical form and its SHA-256 digest."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


def canonicalize(document: Any) -> bytes:
    """The RFC 8785 (JCS) canonical UTF-8 bytes of a JSON value."""
    return rfc8785.dumps(document)


def digest_of(canonical: bytes) -> str:
    """'sha256:<hex>' of canonical bytes: the run's identity."""
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def digest(document: Any) -> str:
    """Digest of a JSON value's canonical form."""
    return digest_of(canonicalize(document))
