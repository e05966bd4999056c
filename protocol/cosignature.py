"""C2SP tlog-cosignature (https://c2sp.org/tlog-cosignature): a witness's timestamped signature on a checkpoint.

A cosignature is a signed-note signature line `— <witness name> base64(key ID || timestamp || signature)` where

    key ID     SHA-256(<name> || "\\n" || 0x04 || Ed25519 public key)[:4]   (0x04: cosignature/v1)
    timestamp  seconds since the UNIX epoch, 8 bytes big-endian
    signature  Ed25519 over "cosignature/v1\\ntime <timestamp>\\n" || the checkpoint body

and the witness's verifier key string is `<name>+<hex key ID>+<base64(0x04 || public key)>`. It states that, at that
time, the checkpoint was the largest consistent one the witness had seen for the log.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from protocol.signed_note import MalformedKeyError, MalformedNoteError

__all__ = [
    "ALG_COSIGNATURE_V1",
    "Cosigner",
    "CosignerKey",
    "cosign",
    "cosigner_key",
    "cosigner_verifier_key",
    "parse_cosigner_key",
    "parse_cosigner_verifier_key",
    "verify_cosignatures",
]

ALG_COSIGNATURE_V1 = 0x04
_SIG_PREFIX = "— "
_PRIVATE_PREFIX = "PRIVATE+KEY+"


def _key_id(name: str, public_key: Ed25519PublicKey) -> bytes:
    raw = bytes([ALG_COSIGNATURE_V1]) + public_key.public_bytes_raw()
    return hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]


def _check_name(name: str) -> None:
    if not name or "+" in name or any(ch.isspace() for ch in name):
        raise MalformedKeyError(f"invalid key name {name!r}: it must be non-empty, with no spaces and no '+'")


@dataclass(frozen=True)
class Cosigner:
    """A witness's public identity: the name its cosignatures carry and its Ed25519 public key."""

    name: str
    public_key: Ed25519PublicKey

    @property
    def key_id(self) -> bytes:
        return _key_id(self.name, self.public_key)

    @property
    def vkey(self) -> str:
        return cosigner_verifier_key(self.name, self.public_key)


@dataclass(frozen=True)
class CosignerKey:
    """A witness's signing key (keep it secret) with its name."""

    name: str
    private_key: Ed25519PrivateKey

    @property
    def public(self) -> Cosigner:
        return Cosigner(self.name, self.private_key.public_key())


def cosigner_verifier_key(name: str, public_key: Ed25519PublicKey) -> str:
    """`<name>+<hex key ID>+<base64(0x04 || public key)>`."""
    _check_name(name)
    raw = bytes([ALG_COSIGNATURE_V1]) + public_key.public_bytes_raw()
    return f"{name}+{_key_id(name, public_key).hex()}+{base64.b64encode(raw).decode()}"


def cosigner_key(name: str, private_key: Ed25519PrivateKey) -> str:
    """The signer key string `PRIVATE+KEY+<name>+<hex key ID>+<base64(0x04 || seed)>` to store in a key file."""
    _check_name(name)
    raw = bytes([ALG_COSIGNATURE_V1]) + private_key.private_bytes_raw()
    return f"{_PRIVATE_PREFIX}{name}+{_key_id(name, private_key.public_key()).hex()}+{base64.b64encode(raw).decode()}"


def _split(text: str) -> tuple[str, str, bytes]:
    name, _, rest = text.strip().partition("+")
    hex_id, _, encoded = rest.partition("+")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedKeyError("malformed key: the key is not base64") from None
    _check_name(name)
    if len(hex_id) != 8 or len(raw) != 33 or raw[0] != ALG_COSIGNATURE_V1:
        raise MalformedKeyError("malformed cosignature/v1 key: expected <name>+<8 hex digits>+<base64(0x04 || key)>")
    return name, hex_id.lower(), raw[1:]


def parse_cosigner_verifier_key(vkey: str) -> Cosigner:
    """Parse a witness's verifier key string. Raises MalformedKeyError (also when the key ID does not match)."""
    name, hex_id, raw = _split(vkey)
    cosigner = Cosigner(name, Ed25519PublicKey.from_public_bytes(raw))
    if cosigner.key_id.hex() != hex_id:
        raise MalformedKeyError(f"key ID {hex_id} does not match the key of {name}")
    return cosigner


def parse_cosigner_key(skey: str) -> CosignerKey:
    """Parse a witness's signer key string. Raises MalformedKeyError."""
    if not skey.strip().startswith(_PRIVATE_PREFIX):
        raise MalformedKeyError("malformed signer key: it must start with PRIVATE+KEY+")
    name, hex_id, raw = _split(skey.strip()[len(_PRIVATE_PREFIX) :])
    key = CosignerKey(name, Ed25519PrivateKey.from_private_bytes(raw))
    if key.public.key_id.hex() != hex_id:
        raise MalformedKeyError(f"key ID {hex_id} does not match the key of {name}")
    return key


def _message(body: bytes, timestamp: int) -> bytes:
    return f"cosignature/v1\ntime {timestamp}\n".encode() + body


def cosign(body: bytes, key: CosignerKey, timestamp: int) -> str:
    """The cosignature line (ending in a newline) on a checkpoint body (the note text, not the signed note)."""
    if not body.endswith(b"\n"):
        raise MalformedNoteError("a checkpoint body ends with a newline")
    signature = key.private_key.sign(_message(body, timestamp))
    blob = key.public.key_id + timestamp.to_bytes(8, "big") + signature
    return f"{_SIG_PREFIX}{key.name} {base64.b64encode(blob).decode()}\n"


def verify_cosignatures(note: bytes, witnesses: Sequence[Cosigner | str]) -> dict[str, int]:
    """The witnesses (by verifier key string) whose valid cosignature the signed note carries, with its timestamp.

    Lines by other keys are ignored (the log's own signature among them); a line by a known witness that does not
    verify is ignored too and so counts for nothing. Raises MalformedNoteError if the note has no signature block.
    """
    known: dict[tuple[str, bytes], Cosigner] = {}
    for given in witnesses:
        parsed = parse_cosigner_verifier_key(given) if isinstance(given, str) else given
        known[(parsed.name, parsed.key_id)] = parsed
    text = note.decode("utf-8", errors="strict")
    split = text.rfind("\n\n")
    if split < 0 or not text.endswith("\n"):
        raise MalformedNoteError("a signed note is a text, a blank line, then signature lines")
    body = text[: split + 1].encode()
    found: dict[str, int] = {}
    for line in text[split + 2 : -1].split("\n"):
        if (signed := _cosignature(line, known, body)) is not None:
            found[signed[0]] = signed[1]
    return found


def _cosignature(line: str, known: Mapping[tuple[str, bytes], Cosigner], body: bytes) -> tuple[str, int] | None:
    """(witness's verifier key, timestamp) of a signature line by a known witness that verifies; None otherwise."""
    if not line.startswith(_SIG_PREFIX):
        return None
    name, _, encoded = line[len(_SIG_PREFIX) :].partition(" ")
    try:
        blob = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    witness = known.get((name, blob[:4]))
    if witness is None or len(blob) != 4 + 8 + 64:
        return None
    timestamp = int.from_bytes(blob[4:12], "big")
    try:
        witness.public_key.verify(blob[12:], _message(body, timestamp))
    except InvalidSignature:
        return None
    return witness.vkey, timestamp
