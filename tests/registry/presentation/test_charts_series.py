"""The history chart's time axis reads as clock times and dates on every span, from runs submitted milliseconds
apart (a sweep, the demo) to years of nightly runs, with a few ticks and no matplotlib warning."""

from __future__ import annotations

import re
import warnings
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from registry.presentation.charts_series import history_time_chart

START = datetime(2026, 11, 24, 19, 3, 19, 320000, tzinfo=UTC)
SPANS = [float(s) for s in np.geomspace(1e-3, 3 * 365 * 86400, 40)]  # seconds, first run to last


def _time_ticks(svg: str) -> list[str]:
    """The x-axis tick labels: the first text drawn, and every text on its baseline."""
    texts = re.findall(r'<text[^>]* y="([-\d.]+)"[^>]*>([^<]*)</text>', svg)
    return [label for y, label in texts if y == texts[0][0]]


@pytest.mark.filterwarnings("error")  # "AutoDateLocator was unable to pick an appropriate interval"
@pytest.mark.parametrize("span", SPANS, ids=lambda s: f"{s:.3g}s")
def test_the_time_axis_has_a_few_clock_time_ticks_on_any_span(span: float) -> None:
    points = [
        {
            "submitted_at": (START + timedelta(seconds=span * i / 4)).isoformat(),
            "value": 100.0 + i,
            "ci_low": 95.0 + i,
            "ci_high": 105.0 + i,
            "software": "torch 2.13.0",
        }
        for i in range(5)
    ]
    svg = history_time_chart({"points": points, "metric": "throughput", "unit": "samples/s"})
    assert svg is not None
    ticks = _time_ticks(svg)
    assert 3 <= len(ticks) <= 7, ticks
    assert not [t for t in ticks if re.search(r"\d\.\d", t)], ticks  # no "19.320": seconds as a fraction
    if span < 60:
        assert all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in ticks), ticks  # clock times


def test_a_single_run_gets_a_minute_wide_axis_around_it() -> None:
    point = {"submitted_at": START.isoformat(), "value": 10.0, "software": "torch 2.13.0"}
    ticks = _time_ticks(history_time_chart({"points": [point], "metric": "latency", "unit": "ms"}) or "")
    assert ticks == ["19:03", "19:03:15", "19:03:30", "19:03:45"]


@pytest.mark.parametrize("versions", [2, 8, 16])
def test_a_history_with_many_software_versions_is_laid_out_without_a_warning(versions: int) -> None:
    """Eight software versions made matplotlib warn "Tight layout not applied" on the serve console and squash the
    plot: the figure now grows with its legend."""
    points = [
        {
            "value": 100.0 + i,
            "ci_low": 95.0 + i,
            "ci_high": 105.0 + i,
            "software": f"torch 2.{i % versions}.0+cu121 numpy 1.26.{i % versions}",
            "submitted_at": f"2026-01-{1 + i % 28:02d}T10:00:00+00:00",
            "change_point": False,
        }
        for i in range(versions * 2)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        svg = history_time_chart({"run": 1, "points": points, "metric": "throughput", "unit": "samples/s"})
    assert svg is not None and svg.count("torch 2.") >= versions
