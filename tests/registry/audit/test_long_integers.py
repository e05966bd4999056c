"""audit verify walks a run's parsed text (turning integers beyond 2**53 - 1 into the doubles they were written from)
only when `holds_long_integer` says the text may hold one: it must never say no to a text that does."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as hs

from protocol import canonicalize
from protocol.parsing import MAX_EXACT_INTEGER
from registry.audit.verify.runs import holds_long_integer

LONG = hs.integers(min_value=MAX_EXACT_INTEGER + 1, max_value=10**40) | hs.integers(
    max_value=-MAX_EXACT_INTEGER - 1, min_value=-(10**40)
)
SCALARS = (
    hs.integers(min_value=-MAX_EXACT_INTEGER, max_value=MAX_EXACT_INTEGER)
    | hs.floats(allow_nan=False, allow_infinity=False)
    | hs.text(max_size=20)
    | hs.booleans()
    | hs.none()
)


def _values(leaves: Any) -> Any:
    return hs.recursive(
        leaves, lambda inner: hs.lists(inner, max_size=4) | hs.dictionaries(hs.text(max_size=5), inner, max_size=4)
    )


def _has_long(value: Any, beyond: int = MAX_EXACT_INTEGER) -> bool:
    """Whether the parsed JSON value holds an integer whose magnitude is beyond `beyond`."""
    if isinstance(value, dict):
        return any(_has_long(child, beyond) for child in value.values())
    if isinstance(value, list):
        return any(_has_long(child, beyond) for child in value)
    return type(value) is int and abs(value) > beyond


@settings(max_examples=400, deadline=None)
@given(value=_values(SCALARS | LONG))
def test_every_text_holding_a_long_integer_is_walked(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=1), json.dumps(value, separators=(",", ":"))):
        if _has_long(json.loads(text)):
            assert holds_long_integer(text), text


NUMBERS = (
    hs.integers(min_value=-MAX_EXACT_INTEGER, max_value=MAX_EXACT_INTEGER)
    | hs.floats(allow_nan=False, allow_infinity=False)
    | hs.floats(min_value=1e15, max_value=1e22)  # ES6 writes these as integer literals from 1e21 down
    | hs.booleans()
)


@settings(max_examples=300, deadline=None)
@given(value=hs.recursive(NUMBERS, lambda inner: hs.lists(inner, max_size=4) | hs.dictionaries(hs.text("ab"), inner)))
def test_a_canonical_text_is_walked_when_it_holds_an_integer_of_16_digits_or_more(value: Any) -> None:
    """Without strings that could hold digits, the answer is exact up to 16-digit integers (which it walks, for
    nothing, below 2**53): long fractions and exponents (0.30000000000000004, 1.2345678901234568e+25) are not
    integer literals; 123456789012345680 is."""
    text = canonicalize(value).decode()
    assert holds_long_integer(text) == _has_long(json.loads(text), 10**15 - 1), text


def test_integer_literals_are_told_from_fractions_exponents_and_strings() -> None:
    assert holds_long_integer('{"a":123456789012345680}')
    assert holds_long_integer("[-12345678901234567890123]")
    assert holds_long_integer("[9007199254740992 ]")
    assert not holds_long_integer("[0.30000000000000004]")
    assert not holds_long_integer("[1234567890123456.5]")
    assert not holds_long_integer("[1234567890123456e3]")
    assert not holds_long_integer('{"id":"run-123456789"}')
