"""The test database on PostgreSQL commits without waiting for the WAL flush (tests/conftest.py)."""

from __future__ import annotations

import pytest
from django.db import connection


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_postgresql_test_database_does_not_wait_for_its_wal_flush():
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("off",)
