"""`benchreg serve` refuses to start on a database that still needs migrations (it would answer 500s)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from registry.management.commands import serve

pytestmark = pytest.mark.django_db


def test_a_migrated_database_has_nothing_pending():
    assert serve.pending_migrations() == []


def test_serve_refuses_to_start_with_pending_migrations(monkeypatch):
    monkeypatch.setattr(serve, "pending_migrations", lambda: ["registry.0099_future"])
    monkeypatch.setattr(serve, "serve", lambda **kwargs: pytest.fail("must not start"))
    with pytest.raises(CommandError, match="benchreg migrate"):
        call_command("serve")
