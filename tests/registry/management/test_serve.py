"""`benchreg serve` refuses to start on a database that still needs migrations (it would answer 500s)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from registry.management.commands import serve
from registry.worker.supervisor import embedded_parts

pytestmark = pytest.mark.django_db


def test_a_migrated_database_has_nothing_pending():
    assert serve.pending_migrations() == []


def test_serve_refuses_to_start_with_pending_migrations(monkeypatch):
    monkeypatch.setattr(serve, "pending_migrations", lambda: ["registry.0099_future"])
    monkeypatch.setattr(serve, "serve", lambda **kwargs: pytest.fail("must not start"))
    with pytest.raises(CommandError, match="benchreg migrate"):
        call_command("serve")


def test_serve_passes_verbose_on_to_the_server(monkeypatch):
    monkeypatch.setattr(serve, "pending_migrations", list)
    seen: list[dict[str, object]] = []
    monkeypatch.setattr(serve, "serve", lambda **kwargs: seen.append(kwargs))
    call_command("serve")
    call_command("serve", "--verbose")
    assert [s["verbose"] for s in seen] == [False, True]


def test_the_embedded_worker_and_beat_are_quiet_unless_verbose(tmp_path):
    """Beat logged a line a second at info, Celery printed its banners and its superuser warning on every start."""
    quiet = {part.name: part for part in embedded_parts(data_dir=tmp_path, verbose=False)}
    loud = {part.name: part for part in embedded_parts(data_dir=tmp_path, verbose=True)}
    for name in ("worker", "beat"):
        argv = quiet[name].argv
        assert argv[argv.index("--loglevel") + 1] == "warning" and "--quiet" in argv and quiet[name].quiet
        assert any(a.startswith("ignore:You're running the worker with superuser") for a in argv)
        argv = loud[name].argv
        assert argv[argv.index("--loglevel") + 1] == "info" and "--quiet" not in argv and not loud[name].quiet
