"""protocol.canonicalize takes the standard library's C encoder on a subset of JSON values (protocol/canonical.py);
it must print every value byte for byte as the reference implementation, rfc8785, does, and fail where it fails."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import rfc8785
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from protocol.canonical import canonicalize
from tests.conftest import load_example
from tests.protocol.strategies import mutated_documents

# Floats where the two notations part (1e-7, 1e-4, 1e16, 1e21, 2^53) and their neighbours, with everything else.
EDGES = [1e-7, 1e-4, 1e16, 1e21, 2.0**53, 2.0**53 + 2, 9007199254740991.0, 0.1, 123.456, 5e-324, 1.7976931348623157e308]
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(EDGES).flatmap(
    lambda f: st.sampled_from([f, -f, math.nextafter(f, 0), math.nextafter(f, math.inf)])
)
keys = st.text(max_size=6) | st.sampled_from(["a", "\ue000", "\U0001f600", "é", "A", "_", "\x7f"])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | floats
    | st.text(st.characters(codec="utf-8"), max_size=8)
    | st.text(max_size=4)
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=12
)


def reference(value: Any) -> bytes | type[Exception]:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        return type(exc)


def ours(value: Any) -> bytes | type[Exception]:
    try:
        return canonicalize(value)
    except rfc8785.CanonicalizationError as exc:
        return type(exc)


@settings(max_examples=3000, deadline=None)
@given(values)
def test_same_bytes_or_same_error_as_rfc8785(value: Any) -> None:
    assert ours(value) == reference(value)


@settings(max_examples=300, deadline=None)
@given(mutated_documents())
def test_same_bytes_for_mutated_documents(body: bytes) -> None:
    try:
        value = json.loads(body)
    except ValueError:
        reject()  # a mutation that is not JSON any more
    assert ours(value) == reference(value)


@pytest.mark.parametrize("name", ["inference-server-h100-bf16", "inference-offline-cpu-int8", "training-h100-bf16"])
def test_examples(name: str) -> None:
    document = load_example(name)
    assert canonicalize(document) == rfc8785.dumps(document)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**53, -(2**53), {1: "x"}, "\ud800", {"k": {1, 2}}])
def test_refusals_are_rfc8785s(value: Any) -> None:
    assert ours(value) == reference(value)
    assert isinstance(ours(value), type)
