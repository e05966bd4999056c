"""The examples validate unchanged; parsing is strict; the digest is the RFC 8785 identity."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import protocol
from tests.conftest import EXAMPLES, SHARED


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_the_examples_validate_unchanged(path) -> None:
    checked = protocol.check(path.read_bytes())
    assert checked.document == json.loads(path.read_text())


def test_the_project_examples_are_the_shared_ones() -> None:
    shared = SHARED / "protocol" / "examples"
    if not shared.exists():
        pytest.skip("../shared is not beside this checkout")
    for path in shared.glob("*.json"):
        assert (EXAMPLES / path.name).read_bytes() == path.read_bytes()


def test_the_digest_is_sha256_of_the_canonical_form(server_example) -> None:
    checked = protocol.check(server_example)
    assert checked.digest == "sha256:" + hashlib.sha256(checked.canonical).hexdigest()


def test_key_order_and_whitespace_do_not_change_identity(server_example) -> None:
    shuffled = json.dumps(dict(reversed(list(server_example.items()))), indent=4).encode()
    assert protocol.check(shuffled).digest == protocol.check(server_example).digest


def test_the_canonical_form_follows_rfc_8785() -> None:
    assert protocol.canonicalize({"b": 1.0, "a": [1e21, 1e-7, "é"]}) == '{"a":[1e+21,1e-7,"é"],"b":1}'.encode()


@pytest.mark.parametrize(("raw", "code"), [
    (b"{", "malformed-json"),
    (b"", "malformed-json"),
    (b'{"a": NaN}', "non-finite-number"),
    (b'{"a": [Infinity]}', "non-finite-number"),
    (b'{"a": 1, "a": 2}', "duplicate-key"),
    (b"\xff\xfe", "invalid-encoding"),
])
def test_strict_parsing_refuses_what_json_libraries_let_through(raw: bytes, code: str) -> None:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(raw)
    assert refused.value.errors[0].code == code


def test_non_finite_numbers_are_located() -> None:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.parse_json(b'{"metrics": {"x": [1, -Infinity]}}')
    assert refused.value.errors[0].pointer == "/metrics/x/1"


def test_a_document_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(b"[1, 2]")
    assert refused.value.errors[0].code == "wrong-type"


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                 max_size=3), max_leaves=10))
def test_any_json_value_gets_errors_not_exceptions(value) -> None:
    try:
        protocol.check(value)
    except protocol.Invalid as exc:
        assert exc.errors
