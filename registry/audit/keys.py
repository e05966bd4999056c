"""The Ed25519 key that signs audit-log checkpoints, and the log's origin name.

Where the key comes from, first match wins:
  * settings.BENCHREG_CHECKPOINT_KEY: a C2SP signer key string (`PRIVATE+KEY+<name>+<id>+<base64>`), or the path
    of a file holding one or an Ed25519 private key in PEM (PKCS#8, unencrypted), e.g. outside the data directory
    on a secrets volume; a file the group or others may read is refused;
  * `<DATA_DIR>/keys/checkpoint.key`, a signer key string generated on first use (mode 0600).

The key's name is the log origin (settings.BENCHREG_LOG_ORIGIN) for generated and PEM keys, and whatever a supplied
signer key string says otherwise. Public keys of earlier keys stay trusted for verification through
settings.BENCHREG_CHECKPOINT_TRUSTED_KEYS (verifier key strings), which is how a key is rotated.

A second, symmetric key commits who did what in each entry without publishing it (`commitment_key`, entry format 3,
protocol/audit_entries.py): settings.BENCHREG_AUDIT_COMMITMENT_KEY names a file holding it, else it is generated on
first use into `<DATA_DIR>/keys/audit-commitment.key` (32 random bytes, hex, mode 0600).
"""

from __future__ import annotations

import base64
import functools
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from protocol.audit_entries import CommitmentKey
from protocol.signed_note import (
    MalformedKeyError,
    SignerKey,
    VerifierKey,
    parse_signer_key,
    parse_verifier_key,
    signer_key,
    verifier_key,
)
from registry.keyfiles import check_private, create_once

DEFAULT_ORIGIN = "benchreg.local/audit"
SIGNER_PREFIX = "PRIVATE+KEY+"


@dataclass(frozen=True)
class CheckpointKey:
    """The signing key with the strings third parties need: the verifier key and the raw public key."""

    origin: str
    signer: SignerKey

    @property
    def name(self) -> str:
        return self.signer.name

    @property
    def vkey(self) -> str:
        """The C2SP verifier key string `<name>+<key id>+<base64(0x01 || public key)>`."""
        return verifier_key(self.signer.name, self.signer.private_key.public_key())

    @property
    def public_key_b64(self) -> str:
        """The raw 32-byte Ed25519 public key, base64."""
        return base64.b64encode(self.signer.private_key.public_key().public_bytes_raw()).decode("ascii")


def log_origin() -> str:
    """The origin line of this log's checkpoints (it names the log; keep it stable)."""
    return getattr(settings, "BENCHREG_LOG_ORIGIN", "") or DEFAULT_ORIGIN


def checkpoint_key() -> CheckpointKey:
    """The checkpoint signing key, generated on first use. Raises ImproperlyConfigured for an unusable setting."""
    supplied = getattr(settings, "BENCHREG_CHECKPOINT_KEY", "") or ""
    return load_key_file(supplied, Path(settings.DATA_DIR), log_origin())


def trusted_verifier_keys() -> list[VerifierKey]:
    """The current key's verifier key and those of earlier keys still trusted (for checkpoints they signed)."""
    extra = getattr(settings, "BENCHREG_CHECKPOINT_TRUSTED_KEYS", []) or []
    try:
        return [parse_verifier_key(checkpoint_key().vkey), *(parse_verifier_key(k) for k in extra)]
    except MalformedKeyError as exc:
        raise ImproperlyConfigured(f"BENCHREG_CHECKPOINT_TRUSTED_KEYS: {exc}") from None


@functools.lru_cache(maxsize=8)
def load_key_file(supplied: str, data_dir: Path, origin: str) -> CheckpointKey:
    # Cached per (setting, data dir, origin): tests that override settings get their own key.
    if supplied.startswith(SIGNER_PREFIX):
        return CheckpointKey(origin, _parse(supplied, "BENCHREG_CHECKPOINT_KEY"))
    if supplied:
        return CheckpointKey(origin, _read_file(Path(supplied), origin))
    return CheckpointKey(origin, _read_file(generated(data_dir / "keys" / "checkpoint.key", origin), origin))


def commitment_key() -> CommitmentKey:
    """The key that commits each entry's actor (HMAC-SHA256), generated on first use. Raises ImproperlyConfigured
    for an unreadable, public or malformed key file."""
    supplied = getattr(settings, "BENCHREG_AUDIT_COMMITMENT_KEY", "") or ""
    return _load_commitment(supplied, Path(settings.DATA_DIR))


@functools.lru_cache(maxsize=8)
def _load_commitment(supplied: str, data_dir: Path) -> CommitmentKey:
    path = (
        Path(supplied)
        if supplied
        else create_once(data_dir / "keys" / "audit-commitment.key", lambda: (secrets.token_hex(32) + "\n").encode())
    )
    check_private(path, "audit commitment key")
    try:
        text = path.read_text(encoding="ascii").strip()
        secret = bytes.fromhex(text)
    except OSError as exc:
        raise ImproperlyConfigured(f"cannot read the audit commitment key {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, ValueError):
        raise ImproperlyConfigured(f"{path}: an audit commitment key is hex (e.g. `openssl rand -hex 32`)") from None
    if len(secret) < 16:
        raise ImproperlyConfigured(f"{path}: an audit commitment key has at least 16 bytes (32 hex digits)")
    return CommitmentKey(secret)


def _parse(text: str, where: str) -> SignerKey:
    try:
        return parse_signer_key(text.strip())
    except MalformedKeyError as exc:
        raise ImproperlyConfigured(f"{where}: {exc}") from None


def _read_file(path: Path, origin: str) -> SignerKey:
    check_private(path, "checkpoint key")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImproperlyConfigured(f"cannot read the checkpoint key {path}: {exc.strerror}") from None
    if raw.startswith(SIGNER_PREFIX.encode()):
        return _parse(raw.decode("ascii", errors="replace"), str(path))
    try:
        private = load_pem_private_key(raw, password=None)
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(f"{path} is neither a signer key string nor an unencrypted PEM key: {exc}") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise ImproperlyConfigured(f"{path} holds a {type(private).__name__}; checkpoints need an Ed25519 key")
    return parse_signer_key(signer_key(origin, private))


def generated(path: Path, origin: str) -> Path:
    """Create the key file once; of two racing processes the first one's key wins and both use it."""
    return create_once(path, lambda: (signer_key(origin, Ed25519PrivateKey.generate()) + "\n").encode())
