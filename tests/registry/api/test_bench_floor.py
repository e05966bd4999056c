"""The ingestion bench's framework floor (bench/floor.py) pays for what a submission pays before storage, and
stores nothing: otherwise its rate would not bound the real endpoint's, and the closing notes quoting it would
mislead."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

import protocol
from protocol.comparability import comparability_keys, contract
from registry.models import AuditEntry, AuditQueued, Submission
from registry.services.tokens import token_create

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_floor_routed")]


@pytest.fixture
def _floor_routed():
    with override_settings(ROOT_URLCONF="bench.floor"):
        yield


def post(client, body):
    return client.generic("POST", "/bench/floor", body, content_type="application/json")


def test_it_checks_and_keys_the_document_and_stores_nothing(api, server_example):
    logged = AuditEntry.objects.count() + AuditQueued.objects.count()  # the token's creation
    response = post(api, json.dumps(server_example).encode())
    assert response.status_code == 201
    assert response.json() == {
        "digest": protocol.digest(server_example),
        "comparability_key": comparability_keys(server_example)[contract().default_axis],
    }
    assert not Submission.objects.exists()
    assert AuditEntry.objects.count() + AuditQueued.objects.count() == logged


def test_it_refuses_what_the_real_endpoint_refuses(api, anonymous, user, server_example):
    assert post(anonymous, json.dumps(server_example).encode()).status_code == 401
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user, name='r', scopes='read')[1]}")
    assert post(reader, json.dumps(server_example).encode()).status_code == 403  # the submit scope, via the policy
    broken = {**server_example, "phase": "warmup"}
    refused = post(api, json.dumps(broken).encode())
    assert refused.status_code == 400
    assert "/phase" in {e["pointer"] for e in refused.json()["errors"]}
    assert post(api, b'{"a": 1, "a": 2}').status_code == 400  # the strict parser
