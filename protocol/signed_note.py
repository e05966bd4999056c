"""Signed checkpoints of the audit log, in the C2SP signed-note and tlog-checkpoint formats.

A checkpoint body commits to the log's tree head (https://c2sp.org/tlog-checkpoint):

    <origin>\\n<tree size, decimal>\\n<base64 root hash>\\n[<extension line>\\n ...]

A signed note (https://c2sp.org/signed-note) is a body, a blank line, then one line per signature:

    — <key name> <base64(4-byte key ID || Ed25519 signature over the body)>\\n

Keys are exchanged as strings in the format of Go's golang.org/x/mod/sumdb/note, so that Go tooling (and any other
witness or verifier of that ecosystem) can check our checkpoints:

    verifier key:  <name>+<8 hex digits key ID>+<base64(0x01 || 32-byte Ed25519 public key)>
    signer key:    PRIVATE+KEY+<name>+<8 hex digits key ID>+<base64(0x01 || 32-byte Ed25519 seed)>
    key ID:        SHA-256(<name> || "\\n" || 0x01 || public key)[:4], big-endian

Verification follows the spec: signatures by unknown keys are ignored, a known key whose signature fails rejects the
whole note, and a note with no verified signature is rejected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "AmbiguousKeyError",
    "Checkpoint",
    "InvalidSignatureError",
    "MalformedKeyError",
    "MalformedNoteError",
    "NoteError",
    "SignerKey",
    "UnknownKeyError",
    "VerifierKey",
    "key_id",
    "open_note",
    "parse_signer_key",
    "parse_verifier_key",
    "sign_note",
    "signer_key",
    "verifier_key",
    "verify_note",
]

ALG_ED25519 = 0x01
HASH_SIZE = 32
# Go's note.Open gives up past 100 signatures; the spec asks verifiers to accept at least 16.
MAX_SIGNATURES = 100
_SIG_PREFIX = "— "  # em dash U+2014, then a space
_HEX_ID = re.compile(r"[0-9a-fA-F]{8}")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_MAX_SIZE = 2**64 - 1


class NoteError(Exception):
    """Base of every error this module raises about notes, checkpoints and keys."""


class MalformedNoteError(NoteError):
    """The note or checkpoint body does not follow the format (nothing about its signatures was decided)."""


class MalformedKeyError(NoteError, ValueError):
    """A verifier or signer key string is not well formed, or its key ID does not match its key."""


class InvalidSignatureError(NoteError):
    """A signature by a known key does not verify: the note must be rejected as a whole."""

    def __init__(self, name: str, key_id: int) -> None:
        self.name, self.key_id = name, key_id
        super().__init__(f"invalid signature for key {name}+{key_id:08x}")


class UnknownKeyError(NoteError):
    """No signature on the note is by a known key. `signers` lists (name, key ID) of the signatures found."""

    def __init__(self, signers: list[tuple[str, int]]) -> None:
        self.signers = signers
        found = ", ".join(f"{name}+{kid:08x}" for name, kid in signers) or "none"
        super().__init__(f"note has no signature by a known key (signed by: {found})")


class AmbiguousKeyError(NoteError):
    """Two verifier keys given share a name and key ID, and a signature names that pair."""

    def __init__(self, name: str, key_id: int) -> None:
        self.name, self.key_id = name, key_id
        super().__init__(f"ambiguous key {name}+{key_id:08x}")


# ---------------------------------------------------------------------------------------------------------------
# Keys


def _is_valid_name(name: str) -> bool:
    """Key names are non-empty with no Unicode space and no '+' (it separates the fields of key strings)."""
    return bool(name) and "+" not in name and not any(ch.isspace() for ch in name)


def _b64decode(text: str) -> bytes | None:
    """Strict standard base64 (RFC 4648 §4, padded); None unless `text` is the canonical encoding."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if base64.b64encode(raw).decode("ascii") == text else None


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _public_raw(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes_raw()


def key_id(name: str, public_key: Ed25519PublicKey) -> int:
    """The 32-bit key ID of an Ed25519 key: SHA-256(name || 0x0A || 0x01 || public key), first 4 bytes big-endian."""
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([ALG_ED25519]) + _public_raw(public_key)).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True)
class VerifierKey:
    """A parsed verifier key: the name signatures carry, the key ID and the Ed25519 public key."""

    name: str
    key_id: int
    public_key: Ed25519PublicKey

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True iff `signature` is this key's Ed25519 signature of `message`."""
        try:
            self.public_key.verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class SignerKey:
    """A parsed signer key: the name, the key ID and the Ed25519 private key. Keep it secret."""

    name: str
    key_id: int
    private_key: Ed25519PrivateKey


def verifier_key(name: str, public_key: Ed25519PublicKey) -> str:
    """Encode a verifier key string `<name>+<hex id>+<base64(0x01 || public key)>`. Raises MalformedKeyError."""
    _check_name(name)
    encoded = _b64(bytes([ALG_ED25519]) + _public_raw(public_key))
    return f"{name}+{key_id(name, public_key):08x}+{encoded}"


def signer_key(name: str, private_key: Ed25519PrivateKey) -> str:
    """Encode a signer key string `PRIVATE+KEY+<name>+<hex id>+<base64(0x01 || seed)>`. Raises MalformedKeyError."""
    _check_name(name)
    kid = key_id(name, private_key.public_key())
    return f"PRIVATE+KEY+{name}+{kid:08x}+{_b64(bytes([ALG_ED25519]) + private_key.private_bytes_raw())}"


def _check_name(name: str) -> None:
    if not _is_valid_name(name):
        raise MalformedKeyError(f"invalid key name {name!r}: it must be non-empty, with no spaces and no '+'")


def _split_key(text: str) -> tuple[str, int, bytes]:
    """Split `<name>+<hex id>+<base64 key>` into its checked parts; the key bytes must be 0x01 || 32 bytes."""
    name, _, rest = text.partition("+")
    hex_id, _, encoded = rest.partition("+")
    raw = _b64decode(encoded)
    if not _is_valid_name(name) or not _HEX_ID.fullmatch(hex_id) or not raw:
        raise MalformedKeyError("malformed key: expected <name>+<8 hex digits>+<base64 key>")
    if raw[0] != ALG_ED25519:
        raise MalformedKeyError(f"unknown key algorithm {raw[0]:#04x}: only Ed25519 (0x01) is supported")
    if len(raw) != 1 + 32:
        raise MalformedKeyError(f"an Ed25519 key is 32 bytes, got {len(raw) - 1}")
    return name, int(hex_id, 16), raw[1:]


def parse_verifier_key(vkey: str) -> VerifierKey:
    """Parse a verifier key string. Raises MalformedKeyError if malformed or if its key ID does not match."""
    name, kid, raw = _split_key(vkey)
    try:
        public_key = Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise MalformedKeyError(f"not an Ed25519 public key: {vkey}") from None
    if key_id(name, public_key) != kid:
        raise MalformedKeyError(f"key ID {kid:08x} does not match the key of {name}")
    return VerifierKey(name, kid, public_key)


def parse_signer_key(skey: str) -> SignerKey:
    """Parse a signer key string. Raises MalformedKeyError if malformed or if its key ID does not match."""
    private, _, rest = skey.partition("+")
    key, _, rest = rest.partition("+")
    if (private, key) != ("PRIVATE", "KEY"):
        raise MalformedKeyError("malformed signer key: it must start with PRIVATE+KEY+")
    name, kid, seed = _split_key(rest)
    private_key = Ed25519PrivateKey.from_private_bytes(seed)
    # The ID is of the public key, so it can only be checked after deriving it from the seed.
    if key_id(name, private_key.public_key()) != kid:
        raise MalformedKeyError(f"key ID {kid:08x} does not match the key of {name}")
    return SignerKey(name, kid, private_key)


# ---------------------------------------------------------------------------------------------------------------
# Notes


def _check_text(data: bytes) -> str:
    """Decode a note: valid UTF-8 with no ASCII control character but newline. Raises MalformedNoteError."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedNoteError("a note must be valid UTF-8") from None
    if any(ch < " " and ch != "\n" for ch in text):
        raise MalformedNoteError("a note must not contain control characters other than newline")
    return text


def sign_note(body: bytes, name: str, private_key: Ed25519PrivateKey) -> bytes:
    """Sign `body` (the note text, ending in a newline) as key `name`: body + blank line + one signature line.

    Ed25519 is deterministic, so the same inputs always give the same note. Raises MalformedNoteError for a body
    that is not a valid note text and MalformedKeyError for an invalid name.
    """
    _check_name(name)
    _check_text(body)
    if not body.endswith(b"\n"):
        raise MalformedNoteError("a note text must end with a newline")
    kid = key_id(name, private_key.public_key())
    signature = kid.to_bytes(4, "big") + private_key.sign(body)
    return body + b"\n" + f"{_SIG_PREFIX}{name} {_b64(signature)}\n".encode()


def _split_note(note: bytes) -> tuple[bytes, list[tuple[str, int, bytes]]]:
    """Split a signed note into its text and its (name, key ID, signature) lines. Raises MalformedNoteError."""
    text = _check_text(note)
    # The text ends at the last blank line; everything after it must be signature lines.
    split = text.rfind("\n\n")
    if split < 0 or not text.endswith("\n") or split + 2 == len(text):
        raise MalformedNoteError("a signed note is a text, a blank line, then signature lines")
    lines = text[split + 2 : -1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise MalformedNoteError(f"more than {MAX_SIGNATURES} signatures")
    return text[: split + 1].encode(), [_parse_signature_line(line) for line in lines]


def _parse_signature_line(line: str) -> tuple[str, int, bytes]:
    if not line.startswith(_SIG_PREFIX):
        raise MalformedNoteError(f"not a signature line: {line[:40]!r}")
    name, _, encoded = line[len(_SIG_PREFIX) :].partition(" ")
    raw = _b64decode(encoded)
    if not _is_valid_name(name) or raw is None or len(raw) < 5:
        raise MalformedNoteError(f"malformed signature line: {line[:40]!r}")
    return name, int.from_bytes(raw[:4], "big"), raw[4:]


def _index_keys(verifier_keys: Sequence[str | VerifierKey]) -> dict[tuple[str, int], list[VerifierKey]]:
    index: dict[tuple[str, int], list[VerifierKey]] = {}
    for key in verifier_keys:
        parsed = parse_verifier_key(key) if isinstance(key, str) else key
        index.setdefault((parsed.name, parsed.key_id), []).append(parsed)
    return index


def verify_note(note: bytes, verifier_keys: Sequence[str | VerifierKey]) -> tuple[bytes, list[str]]:
    """Check a signed note against trusted keys; return (text, names of the keys whose signatures verified).

    Signatures by keys not in `verifier_keys` are ignored (they may be witnesses' cosignatures); a repeated
    signature by one key counts once. Raises MalformedNoteError for a bad format, InvalidSignatureError if a
    known key's signature fails, UnknownKeyError if no known key signed, AmbiguousKeyError if two given keys
    share a name and ID that a signature uses, and MalformedKeyError for a malformed verifier key string.
    """
    text, signatures = _split_note(note)
    known = _index_keys(verifier_keys)
    verified: list[str] = []
    seen: set[tuple[str, int]] = set()
    for name, kid, signature in signatures:
        candidates = known.get((name, kid))
        if not candidates or (name, kid) in seen:
            continue
        if len(candidates) > 1:
            raise AmbiguousKeyError(name, kid)
        seen.add((name, kid))
        if not candidates[0].verify(text, signature):
            raise InvalidSignatureError(name, kid)
        verified.append(name)
    if not verified:
        raise UnknownKeyError(list(dict.fromkeys((name, kid) for name, kid, _ in signatures)))
    return text, verified


# ---------------------------------------------------------------------------------------------------------------
# Checkpoints


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head as a C2SP checkpoint body: origin, tree size, RFC 6962 root hash, extension lines.

    Construction checks the fields (raising MalformedNoteError), so every Checkpoint has a well-formed body.
    """

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.origin or "\n" in self.origin:
            raise MalformedNoteError("the origin must be a non-empty single line")
        if not 0 <= self.size <= _MAX_SIZE:
            raise MalformedNoteError(f"tree size {self.size} out of range")
        if len(self.root_hash) != HASH_SIZE:
            raise MalformedNoteError(f"the root hash must be {HASH_SIZE} bytes, got {len(self.root_hash)}")
        if any(not line or "\n" in line for line in self.extensions):
            raise MalformedNoteError("extension lines must be non-empty single lines")
        _check_text(self.body())

    def body(self) -> bytes:
        """The note text: origin, size and base64 root hash lines, then any extension lines, each ending in \\n."""
        lines = [self.origin, str(self.size), _b64(self.root_hash), *self.extensions]
        return "".join(line + "\n" for line in lines).encode()

    @classmethod
    def parse(cls, body: bytes) -> Checkpoint:
        """Parse a checkpoint body (the note text, not a signed note). Raises MalformedNoteError.

        Stricter than transparency-dev/formats: the size must have no leading zeros (as the C2SP spec says) and
        the root hash must be the canonical base64 of 32 bytes.
        """
        text = _check_text(body)
        if not text.endswith("\n"):
            raise MalformedNoteError("a checkpoint body must end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise MalformedNoteError("a checkpoint body has at least three lines: origin, size, root hash")
        origin, size, encoded, *extensions = lines
        # The length cap keeps int() cheap and under Python's digit limit; 2**64 - 1 has 20 digits.
        if len(size) > 20 or not _DECIMAL.fullmatch(size):
            raise MalformedNoteError(f"tree size {size[:30]!r} is not a decimal number without leading zeros")
        root_hash = _b64decode(encoded)
        if root_hash is None:
            raise MalformedNoteError("the root hash is not canonical standard base64")
        return cls(origin, int(size), root_hash, tuple(extensions))


def open_note(note: bytes, verifier_keys: Sequence[str | VerifierKey]) -> tuple[Checkpoint, list[str]]:
    """Verify a signed checkpoint and parse it: (checkpoint, names of the keys whose signatures verified).

    Raises what `verify_note` raises, and MalformedNoteError if the signed text is not a checkpoint body. The
    caller still decides whether the checkpoint's origin is the log it expects.
    """
    text, names = verify_note(note, verifier_keys)
    return Checkpoint.parse(text), names
