"""Strict JSON parsing: duplicate keys and NaN/Infinity are errors with pointers, not silent surprises."""

from __future__ import annotations

import json
import math
import re
import sys
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
# RFC 8785 writes integral doubles below 1e21 as integer literals and larger ones with an exponent, so no literal
# longer than this can be a double's canonical text. Longer ones are refused without converting them: Python's
# int() costs quadratic time in the digits and raises ValueError beyond 4,300 of them.
_LONGEST_CANONICAL_INTEGER = 21
MAX_DEPTH = 64  # arrays and objects nested in one another; a run's document needs fewer than 10


def _parse_int(found: list[object], literal: str) -> int | float | _InexactInteger:
    """Integers beyond ±2**53 are kept only as the double whose canonical text they are.

    RFC 8785 writes a large integral double as an integer literal (7.08e16 → 70800000000000000), so such a
    literal reads back as that double and a document keeps its identity across parse → canonicalise →
    parse. Any other large literal (e.g. 2**53 + 1) names a number no double holds, and is refused (a
    placeholder, noted in `found`).
    """
    if len(literal) - literal.startswith("-") <= _LONGEST_CANONICAL_INTEGER:
        value = int(literal)
        if abs(value) <= MAX_EXACT_INTEGER:
            return value
        as_float = float(value)
        if rfc8785.dumps(as_float).decode() == literal:
            return as_float
    found.append(literal)
    return _InexactInteger(literal if len(literal) <= 40 else f"{literal[:20]}… ({len(literal)} characters)")


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


def _text_problem(text: str) -> str | None:
    """Why no registry can keep `text` (None for nearly every string: ASCII without NUL is checked in C)."""
    if text.isascii():
        return "a NUL character (U+0000), which no text column can store" if "\x00" in text else None
    if "\x00" in text:
        return "a NUL character (U+0000), which no text column can store"
    if _SURROGATE.search(text):
        return "an unpaired UTF-16 surrogate: not text, and the canonical form (RFC 8785) cannot hold it"
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")
_NUMBER_PROBLEMS = {
    "non-finite-number": "beyond the largest JSON number (an IEEE double), or NaN/Infinity",
    "number-out-of-range": "beyond the largest JSON number (an IEEE double)",
}


def plain_json(value: Any, *, max_depth: int = MAX_DEPTH) -> bool:
    """Whether `value` holds only JSON's own types (dict, list, str, int, float, bool, None; no subclass, tuple or
    Decimal) and nothing `value_errors` would report: what a document parsed from JSON text nearly always is."""
    return _plainly_fine(value, max_depth, False)


def _plainly_fine(value: Any, max_depth: int, numbers: bool) -> bool:
    """Whether value_errors finds nothing, for nearly every document: one level at a time, each level's strings
    and keys tested together in C, and no path kept (~4x faster than the walk that names pointers)."""
    level, depth = [value], 0
    while level:
        below: list[Any] = []
        texts: list[Any] = []
        if not _sort_level(level, depth >= max_depth, numbers, below, texts) or not _texts_fine(texts):
            return False
        level, depth = below, depth + 1
    return True


def _sort_level(level: list[Any], at_limit: bool, numbers: bool, below: list[Any], texts: list[Any]) -> bool:
    """Puts one level's strings and keys in `texts` and its children in `below`; False at anything the fast path
    does not clear (nesting at the limit, a bad number, a placeholder, a marked object, a tuple)."""
    for item in level:
        kind = type(item)
        if kind is str:
            texts.append(item)
        elif kind is dict or kind is list:
            if at_limit:
                return False
            if kind is dict:
                texts.extend(item)
                below.extend(item.values())
            else:
                below.extend(item)
        elif kind is int or kind is float:
            if numbers and _number_problem(item) is not None:
                return False
        elif kind is not bool and item is not None:
            return False  # a placeholder, a marked object, a tuple, a key that is no string: the full walk
    return True


def _texts_fine(texts: list[Any]) -> bool:
    if not texts:
        return True
    try:
        joined = "".join(texts)
    except TypeError:
        return False
    return not ("\x00" in joined or not (joined.isascii() or _SURROGATE.search(joined) is None))


_LARGEST_DOUBLE = int(sys.float_info.max)


def _number_problem(number: int | float) -> str | None:
    """For `numbers`: a float that is not finite, or an integer beyond every double (float() would overflow)."""
    if isinstance(number, float):
        return None if math.isfinite(number) else "non-finite-number"
    return "number-out-of-range" if abs(number) > _LARGEST_DOUBLE else None


def value_errors(value: Any, *, max_depth: int = MAX_DEPTH, numbers: bool = False) -> list[Error]:
    """What no check should meet in a parsed JSON value, each with its pointer: arrays and objects nested more
    than `max_depth` deep (what follows, schema checks included, may recurse), strings or keys holding NUL or an
    unpaired surrogate (code "unstorable-text"), and what parse_json marked (duplicate keys, NaN/Infinity,
    integers no double holds exactly). With `numbers`, also floats that are not finite (1e400 parses as
    Infinity) and integers beyond the largest double, which no code can take as a number.

    A stack, not recursion: the value may be nested deeper than Python's recursion limit. Pointers are built only
    for problems.
    """
    if _plainly_fine(value, max_depth, numbers):
        return []
    out: list[Error] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        kind = type(item)
        if kind is str:
            if (why := _text_problem(item)) is not None:
                out.append(Error(pointer(path), "unstorable-text", f"the string holds {why}"))
        elif isinstance(item, dict | list | tuple):
            _open_container(item, path, max_depth, out, stack)
        elif kind is _InexactInteger:
            out.append(Error(pointer(path), "integer-out-of-range", f"{item.literal} {_INEXACT}"))
        elif kind is _NonFinite:
            out.append(Error(pointer(path), "non-finite-number", f"{item.literal} {_NOT_ALLOWED}"))
        elif numbers and (kind is float or kind is int) and (code := _number_problem(item)) is not None:
            out.append(Error(pointer(path), code, _NUMBER_PROBLEMS[code]))
    return out


_INEXACT = "cannot be held exactly by a JSON number (an IEEE double)"
_NOT_ALLOWED = "is not a number JSON allows; use null for 'not measured'"
_Stack = list[tuple[Any, tuple[str | int, ...]]]


def _open_container(item: Any, path: tuple[str | int, ...], max_depth: int, out: list[Error], stack: _Stack) -> None:
    """value_errors' step into an array or object: too deep, or its problems noted and its children stacked."""
    if len(path) >= max_depth:
        message = f"arrays and objects are nested more than {max_depth} levels deep here"
        out.append(Error(pointer(path), "too-deep", message))
    elif isinstance(item, dict):
        for key in getattr(item, "duplicates", ()):
            message = f"the key '{key}' appears more than once in this object"
            out.append(Error(pointer((*path, key)), "duplicate-key", message))
        for key, child in item.items():
            if isinstance(key, str) and (why := _text_problem(key)) is not None:
                out.append(Error(pointer((*path, key)), "unstorable-text", f"the key holds {why}"))
            else:
                stack.append((child, (*path, key)))
    else:
        stack.extend((child, (*path, i)) for i, child in enumerate(item))


def parse_json(raw: bytes | str, *, max_depth: int = MAX_DEPTH, keep_marks: bool = False) -> Any:
    """Parse JSON text strictly. Raises Invalid listing every duplicate key, non-finite number, integer no double
    holds, string no store can keep and nesting deeper than `max_depth` (value_errors), each with its pointer.

    With `keep_marks`, text that is JSON (however strict) is returned with its duplicate keys, non-finite numbers and
    inexact integers still marked, for `protocol.check` to report with every other error of the document (one NaN
    does not hide the rest); Invalid is raised only for text that is not JSON, not UTF-8 or nested too deep to read.
    """
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Invalid(
                [Error("", "invalid-encoding", f"the body is not UTF-8 (byte {exc.start} cannot be decoded)")]
            ) from None
    value = _loads(raw, max_depth)
    if keep_marks:
        return value
    problems = value_errors(value, max_depth=max_depth)
    if problems:
        raise Invalid(problems)
    return value  # plain: the hooks' placeholders and marked objects are always problems


MARK_CODES = frozenset({"duplicate-key", "non-finite-number", "integer-out-of-range"})


def unmarked(value: Any) -> Any:
    """`value` with parse_json's marks taken out, for the checks that follow (the marks themselves are reported by
    value_errors): a non-finite number or an inexact integer becomes null, an object with repeated keys a plain
    object (its last value of each key, as JSON parsers keep). Call it on a value no deeper than MAX_DEPTH."""
    kind = type(value)
    if kind is _NonFinite or kind is _InexactInteger:
        return None
    if isinstance(value, dict):
        return {key: unmarked(child) for key, child in value.items()}
    if isinstance(value, list):
        return [unmarked(child) for child in value]
    return value


def _loads(raw: str, max_depth: int) -> Any:
    """json.loads with the hooks that mark duplicate keys, non-finite numbers and inexact integers."""
    found: list[object] = []
    try:
        return json.loads(
            raw,
            object_pairs_hook=partial(_object_hook, found),
            parse_constant=partial(_non_finite, found),
            parse_int=partial(_parse_int, found),
        )
    except json.JSONDecodeError as exc:
        raise Invalid(
            [Error("", "malformed-json", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")]
        ) from None
    except RecursionError:  # the C scanner recurses once per level: far deeper than max_depth, no pointer to give
        raise Invalid(
            [Error("", "too-deep", f"arrays and objects are nested more than {max_depth} levels deep")]
        ) from None
