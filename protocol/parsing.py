"""Strict JSON parsing: duplicate keys and NaN/Infinity are errors with pointers, not silent surprises."""

from __future__ import annotations

import json
import math
from functools import partial
from typing import Any

import rfc8785

from .errors import Error, Invalid, pointer


class _NonFinite:
    """Placeholder for NaN/Infinity found while parsing, so the check can report where it was."""

    def __init__(self, literal: str) -> None:
        self.literal = literal


class _InexactInteger:
    """Placeholder for an integer literal that no IEEE double holds exactly (RFC 8785 numbers are doubles)."""

    def __init__(self, literal: str) -> None:
        self.literal = literal


MAX_EXACT_INTEGER = 2**53 - 1  # Number.MAX_SAFE_INTEGER: what rfc8785 writes as an integer


def _parse_int(found: list[object], literal: str) -> int | float | _InexactInteger:
    """Integers beyond ±2**53 are kept only as the double whose canonical text they are.

    RFC 8785 writes a large integral double as an integer literal (7.08e16 → 70800000000000000), so such a
    literal reads back as that double and a document keeps its identity across parse → canonicalise →
    parse. Any other large literal (e.g. 2**53 + 1) names a number no double holds, and is refused (a
    placeholder, noted in `found`).
    """
    value = int(literal)
    if abs(value) <= MAX_EXACT_INTEGER:
        return value
    as_float = float(value)
    if math.isfinite(as_float) and rfc8785.dumps(as_float).decode() == literal.lstrip("+"):
        return as_float
    found.append(literal)
    return _InexactInteger(literal)


def _non_finite(found: list[object], literal: str) -> _NonFinite:
    found.append(literal)
    return _NonFinite(literal)


class _DuplicateKeys(dict):  # type: ignore[type-arg]
    """An object that had repeated keys; the repeats are reported once the path is known."""

    duplicates: list[str]


def _object_hook(found: list[object], pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object, or a marked one (noted in `found`) if it repeats a key."""
    seen: dict[str, Any] = {}
    duplicates = []
    for key, value in pairs:
        if key in seen:
            duplicates.append(key)
        seen[key] = value
    if duplicates:
        found.append(duplicates)
        marked = _DuplicateKeys(seen)
        marked.duplicates = duplicates
        return marked
    return seen


def _find_parse_problems(value: Any, path: tuple[str | int, ...], out: list[Error]) -> Any:
    """Walk the parsed value, collecting problems and returning a plain copy (NaN/Inf become None)."""
    if isinstance(value, _InexactInteger):
        out.append(Error(pointer(path), "integer-out-of-range",
                         f"{value.literal} cannot be held exactly by a JSON number (an IEEE double)"))
        return None
    if isinstance(value, _NonFinite):
        out.append(Error(pointer(path), "non-finite-number",
                         f"{value.literal} is not a number JSON allows; use null for 'not measured'"))
        return None
    if isinstance(value, dict):
        for key in getattr(value, "duplicates", []):
            out.append(Error(pointer((*path, key)), "duplicate-key",
                             f"the key '{key}' appears more than once in this object"))
        return {k: _find_parse_problems(v, (*path, k), out) for k, v in value.items()}
    if isinstance(value, list):
        return [_find_parse_problems(v, (*path, i), out) for i, v in enumerate(value)]
    return value


def parse_json(raw: bytes | str) -> Any:
    """Parse JSON text strictly. Raises Invalid listing every duplicate key and non-finite number."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Invalid([Error("", "invalid-encoding",
                                 f"the body is not UTF-8 (byte {exc.start} cannot be decoded)")]) from None
    # The hooks note in `found` when they make a placeholder or a marked object, so a document with neither
    # (nearly all) is not walked again.
    found: list[object] = []
    try:
        value = json.loads(raw, object_pairs_hook=partial(_object_hook, found),
                           parse_constant=partial(_non_finite, found), parse_int=partial(_parse_int, found))
    except json.JSONDecodeError as exc:
        raise Invalid([Error("", "malformed-json",
                             f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")]) from None
    except RecursionError:
        raise Invalid([Error("", "malformed-json", "JSON nested too deeply")]) from None
    if not found:
        return value  # plain already: only the hooks make placeholders or marked objects
    problems: list[Error] = []
    plain = _find_parse_problems(value, (), problems)
    if problems:
        raise Invalid(problems)
    return plain
