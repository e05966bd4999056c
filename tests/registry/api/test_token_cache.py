"""The short memory of authenticated tokens (registry/api/token_cache.py): a client's requests skip the token
lookup, and a revocation, expiry or demotion still takes effect at once in this process and within
BENCHREG_TOKEN_CACHE_S in the others."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from registry.api import token_cache
from registry.models import ApiToken
from registry.services.tokens import token_create, token_revoke

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch):
    """token_cache's monotonic clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(token_cache.time, "monotonic", lambda: now[0])
    token_cache.forget_tokens()
    yield now
    token_cache.forget_tokens()


@pytest.fixture
def client_of(anonymous, user):
    _, plain = token_create(user=user, name="t", scopes="submit,read")
    anonymous.credentials(HTTP_AUTHORIZATION=f"Token {plain}")
    return anonymous


def token_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/submissions?limit=1").status_code == 200
    return sum('FROM "registry_apitoken"' in q["sql"] for q in queries.captured_queries)


def test_a_second_request_within_the_bound_does_not_look_the_token_up(client_of, clock):
    assert token_queries(client_of) == 1
    clock[0] += 1.0
    assert token_queries(client_of) == 0
    clock[0] += 1.5  # past BENCHREG_TOKEN_CACHE_S (2 s): read again
    assert token_queries(client_of) == 1


def test_a_token_revoked_in_this_process_stops_working_at_once(client_of, clock):
    assert client_of.get("/api/v1/submissions").status_code == 200
    token_revoke(token=ApiToken.objects.get(), actor="test")
    assert client_of.get("/api/v1/submissions").status_code == 401


def test_a_token_revoked_by_another_process_stops_working_within_the_bound(client_of, clock, settings):
    assert client_of.get("/api/v1/submissions").status_code == 200
    # Another process's revocation: a row written without this process's signals.
    ApiToken.objects.update(revoked_at=timezone.now())
    clock[0] += settings.BENCHREG_TOKEN_CACHE_S - 0.1
    assert client_of.get("/api/v1/submissions").status_code == 200  # still remembered: within the stated bound
    clock[0] += 0.2
    assert client_of.get("/api/v1/submissions").status_code == 401


def test_a_token_that_expires_while_remembered_is_refused(client_of, clock, monkeypatch):
    expires = timezone.now() + timedelta(hours=1)
    ApiToken.objects.update(expires_at=expires)
    token_cache.forget_tokens()
    assert client_of.get("/api/v1/submissions").status_code == 200  # remembered now, with its expiry
    later = expires + timedelta(seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: later)  # the expiry is checked on every request
    assert client_of.get("/api/v1/submissions").status_code == 401


def test_a_demoted_or_deactivated_owner_loses_the_rights_at_once(client_of, user, clock, server_example):
    assert client_of.get("/api/v1/submissions").status_code == 200
    user.groups.remove(Group.objects.get(name="submitter"))
    body = json.dumps(server_example)
    assert client_of.post("/api/v1/submissions", body, content_type="application/json").status_code == 403
    user.is_active = False
    user.save()
    assert client_of.get("/api/v1/submissions").status_code == 401


def test_with_the_bound_at_zero_every_request_looks_the_token_up(client_of, clock, settings):
    settings.BENCHREG_TOKEN_CACHE_S = 0
    assert token_queries(client_of) == 1
    assert token_queries(client_of) == 1


def test_what_one_request_sets_on_its_user_is_not_seen_by_the_next(client_of, clock):
    assert client_of.get("/api/v1/submissions").status_code == 200
    key_hash = ApiToken.objects.get().key_hash
    with CaptureQueriesContext(connection) as queries:
        first = token_cache.token_lookup(key_hash)
        second = token_cache.token_lookup(key_hash)
    assert not queries.captured_queries  # both from memory
    assert first is not second and first.user is not second.user
    first.user.first_name = "changed by a request"
    assert second.user.first_name != "changed by a request"
