"""Identity of a run: RFC 8785 canonical form and its SHA-256 digest."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import rfc8785

# Floats orjson prints exactly as RFC 8785 does: not integral, and in [1e-4, 1e16), where it prints the shortest
# round-trip digits (as Python's repr and ECMAScript do) in plain notation, as RFC 8785 does from 1e-7 to 1e21.
_PLAIN_LOW, _PLAIN_HIGH = 1e-4, 1e16
_SAFE_INT = 2**53 - 1  # RFC 8785 refuses integers beyond (I-JSON)


def _encode(value: Any) -> bytes:
    """Compact UTF-8 JSON with keys sorted: orjson, ~10x the standard library's C encoder with sort_keys (6.6 ms of
    a decision answer's 11 ms digest went there). Its escapes are RFC 8785's: the two-character forms for backspace,
    form feed, newline, carriage return, tab, quote and backslash, a lower-case u00xx escape for the other control
    characters, everything else as UTF-8."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class NotPlain(Exception):
    """The value holds something only the reference implementation may decide (see _plain)."""


def _plain(value: Any) -> Any:
    """`value` as `_encode` would print canonically, or NotPlain.

    The encoder matches RFC 8785 for strings (the same escapes), booleans, null, integers within ±(2^53-1), lists,
    and objects whose keys are ASCII (byte order is UTF-16 order there). Integral floats become ints
    ("2", not "2.0"); other floats must lie where both print plain decimals. Anything else goes to rfc8785.
    """
    kind = type(value)  # the exact types of parsed JSON first (bool is an int: never tested as one below)
    if kind is str or value is None or kind is bool:
        return value
    if kind is dict:
        return _plain_object(value)
    if kind is list:
        return [_plain(child) for child in value]
    if kind is float:
        return _plain_float(value)
    if kind is int and -_SAFE_INT <= value <= _SAFE_INT:
        return value
    if isinstance(value, str | bool):  # subclasses of both
        return value
    if isinstance(value, int):
        if -_SAFE_INT <= value <= _SAFE_INT:
            return value
        raise NotPlain
    if isinstance(value, float):
        return _plain_float(value)
    if isinstance(value, dict):
        return _plain_object(value)
    if isinstance(value, list | tuple):
        return [_plain(child) for child in value]
    raise NotPlain


def _plain_object(value: dict[Any, Any]) -> dict[str, Any]:
    out = {}
    for key, child in value.items():
        if not isinstance(key, str) or not key.isascii():
            raise NotPlain
        out[key] = _plain(child)
    return out


def _plain_float(value: float) -> float | int:
    magnitude = abs(value)
    if magnitude.is_integer():
        if magnitude <= _SAFE_INT:
            return int(value)  # 2.0 and -0.0 print as 2 and 0
        raise NotPlain
    if _PLAIN_LOW <= magnitude < _PLAIN_HIGH:  # (every float from 2^53 up is integral)
        return value
    raise NotPlain


def canonicalize(document: Any) -> bytes:
    """The RFC 8785 (JCS) canonical UTF-8 bytes of a JSON value.

    The reference implementation (rfc8785, pure Python) costs ~0.3 ms for a run's document and a submission needs
    it several times; most values go through orjson instead, on a proven-equal subset (`_plain`;
    tests/protocol/test_canonical_fast.py checks the two agree on generated values). Everything else, errors
    included, is rfc8785's.
    """
    try:
        return _encode(_plain(document))
    except (NotPlain, orjson.JSONEncodeError):  # outside the subset; lone surrogates; nested deeper than orjson goes
        return rfc8785.dumps(document)


def canonicalize_plain(document: Any) -> bytes:
    """`canonicalize(document)` where the fast subset decides it; NotPlain (or orjson.JSONEncodeError, for a lone
    surrogate) where only the reference implementation may. For checks that have another way to decide those."""
    return _encode(_plain(document))


def digest_of(canonical: bytes) -> str:
    """'sha256:<hex>' of canonical bytes: the run's identity."""
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def digest(document: Any) -> str:
    """Digest of a JSON value's canonical form."""
    return digest_of(canonicalize(document))


def plain(value: Any) -> Any:
    """`value` as the canonical form prints it (integral floats as ints), or NotPlain where only the reference
    implementation may decide. For callers that build a larger value from many small ones already made plain:
    `digest_of_plain` of it then equals `digest` of the original, without walking it again."""
    return _plain(value)


def digest_of_plain(value: Any) -> str:
    """`digest` of a value whose scalars come from `plain` and whose object keys are ASCII strings; raises
    orjson.JSONEncodeError where `digest` would take the reference implementation (a lone surrogate)."""
    return digest_of(_encode(value))
