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


def test_a_warmed_process_draws_charts_and_intervals_without_importing_anything_more() -> None:
    """scipy.stats and matplotlib are imported on first use (commands start quickly), so without the warm-up a
    worker's first run page paid ~0.7 s for them: after it, neither a chart nor an interval of up to 31 runs
    imports a module or works a t quantile out again."""
    code = """
import sys, registry.wsgi
from protocol.statistics.intervals import log_t_bounds, t_quantile
from registry.presentation.chart_style import new_figure, svg
import scipy.stats
def worked_out_again(*args, **kwargs):
    raise AssertionError(f"a t quantile worked out again: {args}")
scipy.stats.t.ppf = worked_out_again
before = set(sys.modules)
for k in range(2, 32):
    log_t_bounds(0.0, 0.1, k)  # the quantile at k - 1 degrees of freedom, `confidence` given
    t_quantile(k - 1)  # and defaulted
figure = new_figure(figsize=(2, 1))
figure.add_subplot().bar(["a", "b"], [1, 2])
svg(figure, "test", [1, 2])
print(sorted(set(sys.modules) - before))
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "registry.settings"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    assert "warming up the process failed" not in out.stderr, out.stderr


def test_the_signing_identity_is_loaded_where_it_is_stored_and_never_generated_at_start(tmp_path) -> None:
    """The decision page asks whether the registry can sign before offering a report: without the warm-up a worker's
    first decision page took 136 ms against 20 ms, loading the key (`benchreg serve --workers 1`, the demo's data,
    two starts each). A data dir with no identity gets none made at start (a second or two, left to the first
    report)."""
    code = """
import sys
from pathlib import Path
data = Path(sys.argv[1])
import registry.wsgi  # the warm-up, in this process
from registry.reports.signing import GENERATED_FILE, identity_is_stored
print(identity_is_stored(), (data / "keys" / GENERATED_FILE).exists())
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "registry.settings", "BENCHREG_DATA_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    fresh = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                           timeout=120, check=True)  # fmt: skip
    assert fresh.stdout.split() == ["False", "False"], fresh.stdout + fresh.stderr

    stored = code.replace(
        "import registry.wsgi  # the warm-up, in this process",
        """
from registry.reports.signing import signing_identity
signing_identity()  # made once, as the first report would
import functools
from cryptography.hazmat.primitives import serialization
def loaded_again(*args, **kwargs):
    raise AssertionError("the signing key was loaded again")
import registry.reports.signing as signing
for cached in [v for v in vars(signing).values() if isinstance(v, functools._lru_cache_wrapper)]:
    cached.cache_clear()
import registry.wsgi  # the warm-up loads it
serialization.load_pem_private_key = loaded_again
signing_identity()  # cached: no key is read again
""",
    )
    warmed = subprocess.run([sys.executable, "-c", stored, str(tmp_path)], capture_output=True, text=True, env=env,
                            timeout=120)  # fmt: skip
    assert warmed.returncode == 0, warmed.stderr
    assert warmed.stdout.split() == ["True", "True"], warmed.stdout + warmed.stderr
