"""Any number the protocol accepts is stored and still verifies: the evidence is the canonical text, and
PostgreSQL's JSONB (exact decimals: 1e308 comes back as a 309-digit integer) is an index of it, nothing more."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

import protocol
from registry.models import Submission
from registry.services.submissions import InvalidDocument, submission_create

pytestmark = pytest.mark.django_db

EXTREMES = [
    1e308,
    1.2345e25,
    5e-324,
    2.2250738585072014e-308,
    -0.0,
    -1.7976931348623157e308,
    123456789012345680.0,
    0.1,
    1e-7,
    9007199254740991,
]


def _with(document: dict[str, Any], value: Any, depth: int = 0) -> dict[str, Any]:
    doc = json.loads(json.dumps(document))
    nested: Any = value
    for i in range(depth):
        nested = {f"level{i}": nested}
    doc["software"]["settings"]["extreme"] = value if not depth else json.dumps(nested)
    doc["conditions"]["ambient_c"] = value
    return doc


def _verifies() -> tuple[bool, str]:
    out = io.StringIO()
    try:
        call_command("audit", "verify", stdout=out)
    except Exception as exc:  # the command's CommandError: report what it said
        return False, f"{out.getvalue()}\n{exc}"
    return True, out.getvalue()


@pytest.mark.parametrize("value", EXTREMES, ids=repr)
def test_an_extreme_number_is_stored_read_back_byte_for_byte_and_verifies(user, offline_example, value, client):
    doc = _with(offline_example, value)
    run, created = submission_create(document=doc, submitted_by=user)
    assert created
    stored = Submission.objects.get(pk=run.pk)
    assert protocol.digest_of(stored.canonical.encode()) == run.digest
    ok, out = _verifies()
    assert ok, out


@pytest.mark.postgres
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=hs.floats(allow_nan=False, allow_infinity=False) | hs.integers(min_value=-(2**53), max_value=2**53))
def test_any_finite_number_survives_postgres_jsonb_and_verifies(user, offline_example, value):
    try:
        submission_create(document=_with(offline_example, value), submitted_by=user)
    except InvalidDocument:
        return  # refused as a whole (e.g. an integer beyond 2^53), nothing stored: other tests check that
    ok, out = _verifies()
    assert ok, out


# -- the property on real PostgreSQL, every read path ---------------------------------------------------

FLOATS = (
    hs.sampled_from(EXTREMES)
    | hs.just(-0.0)
    | hs.just(5e-324)  # negative zero, the least subnormal
    | hs.floats(min_value=-2.2250738585072014e-308, max_value=2.2250738585072014e-308)  # subnormals
    | hs.floats(min_value=1e300, allow_infinity=False)
    | hs.floats(max_value=-1e300, allow_infinity=False)
    | hs.floats(allow_nan=False, allow_infinity=False)
)
SCALARS = FLOATS | hs.integers(min_value=-(2**53), max_value=2**53) | hs.booleans() | hs.text(max_size=8)
NESTED = hs.recursive(
    SCALARS,
    lambda inner: (
        hs.lists(inner, max_size=3) | hs.dictionaries(hs.text("abcxyz", min_size=1, max_size=4), inner, max_size=3)
    ),
    max_leaves=30,
)


def _same_double(a: Any, b: Any) -> bool:
    """Equal as JSON values, and -0.0 keeps its sign (what a re-serialisation from JSONB would lose)."""
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and float(a) == float(b)
            and str(float(a)).startswith("-") == str(float(b)).startswith("-")
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_double(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_double, a, b))
    return type(a) is type(b) and a == b


@pytest.mark.postgres
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(numbers=hs.lists(FLOATS, min_size=3, max_size=3), nested=hs.none() | NESTED, depth=hs.integers(0, 60))
def test_any_accepted_document_is_stored_read_back_byte_for_byte_and_verifies(
    user, offline_example, api, numbers, nested, depth
):
    doc = json.loads(json.dumps(offline_example))
    doc["conditions"]["ambient_c"] = numbers[0]
    doc["software"]["settings"]["extreme.a"] = numbers[1]
    doc["software"]["settings"]["extreme.b"] = numbers[2]
    if nested is not None:
        for i in range(depth):  # deep nesting where the schema allows only scalars: refused as a whole
            nested = {f"level{i}": nested}
        doc["software"]["settings"]["nested"] = nested
    before = Submission.objects.count()
    try:
        run, _ = submission_create(document=doc, submitted_by=user)
    except InvalidDocument as exc:
        assert nested is not None and not isinstance(nested, str | int | float | bool), exc.errors
        assert Submission.objects.count() == before  # nothing partial stored
        return
    canonical = run.canonical.encode()
    assert protocol.digest_of(canonical) == run.digest
    # Every read path gives the canonical bytes, never a re-serialisation of the JSONB copy.
    loaded = Submission.objects.get(pk=run.pk)
    assert loaded.canonical.encode() == canonical
    assert _same_double(loaded.document, json.loads(canonical))
    assert api.get(f"/api/v1/submissions/{run.pk}/document").content == canonical
    detail = api.get(f"/api/v1/submissions/{run.pk}").content
    assert detail.endswith(b',"document":' + canonical + b"}")
    ok, out = _verifies()
    assert ok, out
