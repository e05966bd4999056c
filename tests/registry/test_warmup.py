"""A server process is warmed up and its heap frozen before its first request (registry/warmup.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from registry import warmup

pytestmark = pytest.mark.django_db


def test_every_template_compiles_and_every_view_imports() -> None:
    """The warm-up loads what the first requests would: an error here would otherwise surface on some request."""
    warmup.load_lazily_loaded()


def test_importing_the_wsgi_application_leaves_a_frozen_heap() -> None:
    """What a gunicorn worker gets: most objects out of the collector's walks, so a full collection is short."""
    code = "import gc, registry.wsgi; gc.collect(); print(gc.get_freeze_count(), len(gc.get_objects()))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "registry.settings"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    frozen, walked = map(int, out.stdout.split())
    assert frozen > 100_000 and walked < frozen / 20, out.stdout
    assert "warming up the process failed" not in out.stderr, out.stderr
