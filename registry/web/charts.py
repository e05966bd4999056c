"""Charts on pages: the same SVG the PDF report prints (registry.presentation.charts), cached under the evidence's
digest."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe

from registry.presentation import charts

CHART_SECONDS = 24 * 3600


def cached_chart(name: str, digest: str, *args: Any) -> SafeString | None:
    """The chart `registry.presentation.charts.<name>(*args)`, every label drawn as paths, or None when it has
    nothing to draw.

    Charts are drawn from immutable evidence (a run or a comparison, named by its digest), so the SVG is cached
    under that digest: drawing takes tens of milliseconds, and a page is viewed many times.
    """
    svg = cache.get_or_set(f"chart:{name}:{digest}", lambda: getattr(charts, name)(*args) or "", CHART_SECONDS)
    return mark_safe(svg) if svg else None  # noqa: S308
