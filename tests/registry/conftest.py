from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from registry.services.tokens import token_create


@pytest.fixture
def user(django_user_model: Any) -> Any:
    """A lab's script account: a submitter, so its submit tokens work (a token never exceeds its owner)."""
    from django.contrib.auth.models import Group

    lab = django_user_model.objects.create_user("lab-7", password="pw-for-tests-only")
    lab.groups.add(Group.objects.get_or_create(name="submitter")[0])
    return lab


@pytest.fixture
def token(user: Any) -> str:
    return token_create(user=user, name="test", scopes="submit,read")[1]


@pytest.fixture
def api(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture(autouse=True)
def evidence_tables_can_be_reset(request: pytest.FixtureRequest) -> Any:
    """Transactional tests end with a TRUNCATE, which the append-only triggers refuse on PostgreSQL.

    Requesting the db fixture first makes this teardown run before Django's flush: the flush then runs with
    triggers off (session_replication_role=replica, as a superuser would). The flush also empties rows the
    migrations created (the audit head, the role groups), so they are recreated before each test.
    """
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        yield
        return
    transactional = marker.kwargs.get("transaction", False)
    request.getfixturevalue("transactional_db" if transactional else "db")
    from django.contrib.auth.models import Group
    from django.db import connection

    from registry.models import AuditHead

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET session_replication_role = DEFAULT")  # triggers on for the test itself
    from django.core.cache import cache

    cache.clear()  # API throttle counts live in the cache: each test starts with none
    AuditHead.objects.get_or_create(id=1)
    if not transactional:  # nothing commits inside a test's transaction, so entries are numbered inline
        request.getfixturevalue("settings").BENCHREG_AUDIT_SEQUENCING = "inline"
    for name in ("viewer", "submitter", "admin"):
        Group.objects.get_or_create(name=name)
    yield
    if transactional and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET session_replication_role = replica")
