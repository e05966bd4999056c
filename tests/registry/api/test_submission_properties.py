"""Property: random mutations of real documents never cause a 500 and never store anything when rejected."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import protocol
from registry.models import AuditEntry, Submission
from tests.protocol.strategies import mutated_documents

pytestmark = pytest.mark.django_db


@pytest.mark.slow  # run early: tests/conftest.py starts slow modules first
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=mutated_documents())
def test_mutations_never_fail_the_server_and_rejections_store_nothing(api, body: bytes) -> None:
    before = (Submission.objects.count(), AuditEntry.objects.count())
    response = api.generic("POST", "/api/v1/submissions", body, content_type="application/json")
    assert response.status_code in (200, 201, 400), response.content[:300]
    after = (Submission.objects.count(), AuditEntry.objects.count())
    if response.status_code == 400:
        assert after == before
        assert response.json()["errors"], "a rejection must list its errors"
        assert all({"pointer", "code", "message"} <= set(e) for e in response.json()["errors"])
    elif response.status_code == 201:
        assert after == (before[0] + 1, before[1] + 1)
        protocol.check(Submission.objects.get(pk=response.json()["id"]).canonical)
