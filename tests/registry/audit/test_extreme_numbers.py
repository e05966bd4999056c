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

EXTREMES = [1e308, 1.2345e25, 5e-324, 2.2250738585072014e-308, -0.0, -1.7976931348623157e308, 123456789012345680.0,
            0.1, 1e-7, 9007199254740991]


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
