"""Ready a server process before its first request: load what requests would load lazily, then freeze the heap.

Why. A process that serves the registry holds ~400k Python objects, most of them made once (modules, the URLconf,
compiled templates, the protocol's schema validator and the grammar its format checker builds). CPython's cyclic
garbage collector walks all of them on every full collection: ~150-250 ms on a 2-core machine, at an unpredictable
request (bench/pages.py measured page maxima of 350-380 ms against p50s of 125 ms from exactly this). After
`gc.freeze()` those objects are out of the collector's sight for good; a full collection walks only what requests
made since (9k-50k objects, 2-9 ms). Objects frozen here are still freed by reference counting; only cycles among
them would stay, and they are made once per process. (Instagram's write-up of gc.freeze in Django workers is the
model.)

Called by registry/wsgi.py when it is imported: once in gunicorn's master under `benchreg serve` (preload_app, so the
workers fork from the frozen heap), in each worker where gunicorn loads `registry.wsgi:application` itself; and by
the benchmarks that time pages in-process, so they measure what a server does.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.template import engines
from django.urls import get_resolver

import protocol
from protocol.statistics.intervals import t_quantile
from registry.presentation.chart_style import new_figure, svg
from registry.reports.signing import identity_is_stored, signing_identity

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "protocol" / "examples" / "inference-server-h100-bf16.json"
TEMPLATES = HERE / "templates"
WARM_T_QUANTILES = 30  # degrees of freedom whose t quantile is worked out ahead: groups of up to 31 runs


def load_lazily_loaded() -> None:
    """Import every view (through the URLconf), compile the registry's templates (the cached loader keeps them),
    build the protocol's validator and load the statistics and charts libraries."""
    get_resolver().url_patterns  # noqa: B018 (imports the views and their modules)
    django_engine = engines["django"]
    for path in sorted(TEMPLATES.rglob("*.html")):
        django_engine.get_template(path.relative_to(TEMPLATES).as_posix())
    if EXAMPLE.exists():  # absent where only the package is installed, not the repository
        protocol.errors(json.loads(EXAMPLE.read_text()))
    load_statistics_and_charts()
    load_signing_identity()


def load_signing_identity() -> None:
    """The report-signing identity, where it is stored: the decision and comparison pages ask whether the registry
    can sign before offering a report, and loading it (its RSA key's check) took ~0.1 s of a worker's first such
    page. One that would have to be generated is left to the first report; one that cannot load is said by the
    pages that offer reports."""
    if identity_is_stored():
        with contextlib.suppress(ImproperlyConfigured, OSError, ValueError):
            signing_identity()


def load_statistics_and_charts() -> None:
    """scipy.stats (the Student t quantiles of every interval) and matplotlib with its SVG backend (every chart).

    Their modules import them on first use, so that commands start quickly; in a server that first use was a
    request's: a worker's first run page took ~0.8 s against ~10 ms after it (~0.45 s of scipy.stats, ~0.25 s of
    matplotlib). Here the master process pays it once before the workers fork."""
    for df in range(1, WARM_T_QUANTILES + 1):
        t_quantile(df)
    figure = new_figure(figsize=(1, 1))
    figure.add_subplot().plot([0, 1], [0, 1])
    svg(figure, "warm-up", None)


def prepare_process() -> None:
    """Load what the first requests would, then move every object so far out of the garbage collector's walks."""
    try:
        load_lazily_loaded()
    except Exception:  # a warm-up must never keep a server from starting; the first request loads it instead
        logger.exception("warming up the process failed; serving without it")
    gc.collect()
    gc.freeze()
