"""The examples validate unchanged; parsing is strict; the digest is the RFC 8785 identity."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol
from tests.conftest import EXAMPLES, SHARED
from tests.protocol.strategies import mutated_documents


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


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{", "malformed-json"),
        (b"", "malformed-json"),
        (b'{"a": NaN}', "non-finite-number"),
        (b'{"a": [Infinity]}', "non-finite-number"),
        (b'{"a": 1, "a": 2}', "duplicate-key"),
        (b"\xff\xfe", "invalid-encoding"),
    ],
)
def test_strict_parsing_refuses_what_json_libraries_let_through(raw: bytes, code: str) -> None:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(raw)
    assert code in {e.code for e in refused.value.errors}  # with the document's other errors (unknown field "a")


def _example_text() -> str:
    return (Path(protocol.__file__).parent / "examples" / "inference-server-h100-bf16.json").read_text()


def test_a_nan_is_one_error_among_all_the_others_each_with_its_pointer() -> None:
    """A NaN used to hide every other error of its document: now it is one of them, and the checks read it as null
    (no second error about the same value)."""
    document = json.loads(_example_text())
    document["phase"] = "serving"
    text = json.dumps(document).replace('"system": {', '"system": {"name": "twice", ', 1)
    text = re.sub(r'("throughput": \{[^}]*"value": )[-0-9.e]+', r"\1NaN", text, count=1)
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(text.encode())
    found = {(e.pointer, e.code) for e in refused.value.errors}
    assert found == {
        ("/metrics/throughput/value", "non-finite-number"),
        ("/phase", "not-allowed-value"),
        ("/system/name", "duplicate-key"),
    }


def test_a_nan_alone_is_the_only_error_of_an_otherwise_valid_document() -> None:
    text = re.sub(r'("throughput": \{[^}]*"value": )[-0-9.e]+', r"\1Infinity", _example_text(), count=1)
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(text)
    assert [(e.pointer, e.code) for e in refused.value.errors] == [("/metrics/throughput/value", "non-finite-number")]


def test_non_finite_numbers_are_located() -> None:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.parse_json(b'{"metrics": {"x": [1, -Infinity]}}')
    assert refused.value.errors[0].pointer == "/metrics/x/1"


def test_a_document_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(b"[1, 2]")
    assert refused.value.errors[0].code == "wrong-type"


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=10,
    )
)
def test_any_json_value_gets_errors_not_exceptions(value) -> None:
    try:
        protocol.check(value)
    except protocol.Invalid as exc:
        assert exc.errors


@settings(max_examples=300, deadline=None)
@given(body=mutated_documents())
def test_the_fast_validator_and_jsonschema_agree(body: bytes) -> None:
    """The fast path may only say 'valid' where the reference validator finds no error (it may refuse what the
    reference accepts, e.g. a hash with a final newline that Python's `$` lets through: the reference then decides)."""
    from jsonschema import Draft202012Validator, FormatChecker

    from protocol.schema import fast_validator

    try:
        document = protocol.parse_json(body)
    except protocol.Invalid:
        return
    reference = Draft202012Validator(protocol.submission_schema(), format_checker=FormatChecker())
    reference_valid = not any(True for _ in reference.iter_errors(document))
    assert reference_valid or not fast_validator()(document)


@pytest.mark.parametrize(
    "when",
    [
        "2026-11-20T10:00:00",
        "2026-11-20 10:00:00Z",
        "2026-11-20T10:00:00.5+02:00",
        "2026-13-20T10:00:00Z",
        "2026-11-20T25:00:00Z",
        "20261120T100000Z",
        "2026-11-20t10:00:00z",
        "2026-02-30T10:00:00Z",
        "2026-11-20T23:59:60Z",
        "0000-01-01T10:00:00Z",
    ],
)
def test_both_validators_agree_on_timestamps(server_example, when: str) -> None:
    from jsonschema import Draft202012Validator, FormatChecker

    from protocol.schema import fast_validator

    server_example["provenance"]["started_at"] = when
    reference = not any(
        True
        for _ in Draft202012Validator(protocol.submission_schema(), format_checker=FormatChecker()).iter_errors(
            server_example
        )
    )
    assert fast_validator()(server_example) == reference, when


def test_a_large_integral_float_keeps_its_identity_through_the_canonical_form(server_example) -> None:
    """Found by hypothesis: 7.08e16 is written as 70800000000000000 and must read back as the same number."""
    server_example["system"]["accelerators"][0]["power_limit_w"] = 7.08e16
    first = protocol.check(server_example)
    again = protocol.check(first.canonical)
    assert again.digest == first.digest


def test_an_integer_literal_no_double_holds_is_refused_with_its_pointer() -> None:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.parse_json(b'{"a": [9007199254740993]}')
    assert (refused.value.errors[0].pointer, refused.value.errors[0].code) == ("/a/0", "integer-out-of-range")


# ---------------------------------------------------------------------- a document agrees with itself


def _with_latency_samples(document: dict, reps: list[list[float]], primary: str) -> dict:
    import numpy as np

    pooled = np.concatenate([np.asarray(r) for r in reps])
    document["samples"] = {"latency_ms": {"unit": "ms", "repetitions": reps}}
    document["metrics"]["latency_ms"].update(
        count=int(pooled.size),
        method="nearest-rank",
        mean=float(pooled.mean()),
        min=float(pooled.min()),
        max=float(pooled.max()),
        **{
            k: float(np.quantile(pooled, q, method="inverted_cdf"))
            for k, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))
        },
    )
    document["metrics"]["primary"] = primary
    return document


def _codes(document: dict) -> dict[str, str]:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(document)
    return {e.pointer: e.message for e in refused.value.errors if e.code == "headline-disagrees-with-samples"}


def test_a_tail_headline_that_follows_from_its_samples_by_the_declared_method_is_accepted(server_example) -> None:
    reps = [[float(x) for x in range(1, 701)]] * 3
    protocol.check(_with_latency_samples(server_example, reps, "latency_ms.p99"))


def test_a_tail_headline_its_samples_contradict_is_refused_with_both_values(server_example) -> None:
    document = _with_latency_samples(server_example, [[float(x) for x in range(1, 701)]] * 3, "latency_ms.p99")
    document["metrics"]["latency_ms"]["p99"] = 640.0  # the samples give 693 by nearest rank
    message = _codes(document)["/metrics/latency_ms/p99"]
    assert "is 640 but the 2100 raw samples give 693 (p99 by the declared method 'nearest-rank'" in message


def test_rounding_within_half_a_percent_is_not_a_disagreement(server_example) -> None:
    document = _with_latency_samples(server_example, [[float(x) for x in range(1, 701)]] * 3, "latency_ms.p99")
    document["metrics"]["latency_ms"]["p99"] = 694.0  # 693 rounded by hand: 0.14% off
    protocol.check(document)


def test_offline_throughput_must_follow_from_its_batch_times(server_example) -> None:
    document = json.loads((EXAMPLES / "inference-offline-cpu-int8.json").read_text())
    document["samples"] = {"latency_ms": {"unit": "ms", "repetitions": [[0.88] * 3788] * 3}}
    protocol.check(document)  # 32 × 1000 ÷ 0.88 = 36,364: what the run reports
    document["samples"]["latency_ms"]["repetitions"] = [[320.0] * 3788] * 3
    assert "give 100 (batch_size 32" in _codes(document)["/metrics/throughput/value"]
