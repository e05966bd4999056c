"""A witness's signing key on disk, as `benchreg witness` reads it: for the witnessed-log tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from protocol.cosignature import cosigner_key, parse_cosigner_key
from verifier.witness import write_private_key_file


def new_key(directory: Path, name: str) -> tuple[Path, str]:
    """A fresh cosigner key for witness `name`, written under `directory`; returns its path and verifier key."""
    text = cosigner_key(name, Ed25519PrivateKey.generate())
    path = directory / f"{name.replace('/', '_')}.key"
    write_private_key_file(path, text)
    return path, parse_cosigner_key(text).public.vkey
