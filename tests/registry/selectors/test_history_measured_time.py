"""A configuration's history is placed by when each run was measured (provenance.started_at), never by when it was
stored or imported: the points, their change-point verdicts, the chart's x-values, the API and the page agree, and a
run that states no measured time is listed apart with the reason instead of being plotted at its import time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from matplotlib import dates as mdates
from matplotlib import rc_context

from devtools.documents import variant
from protocol import changepoints
from registry.presentation.chart_style import STYLE
from registry.presentation.charts_series import history_time_figure, time_axis_label
from registry.selectors.series import NO_MEASURED_TIME, run_history
from registry.services.submissions import submission_create
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db

# Stored in this order (import order), measured in another: 2024-01 first, 2025-03 last.
MEASURED = [
    ("2025-03-01T09:00:00Z", 140.0),
    ("2024-01-10T09:00:00Z", 100.0),
    ("2024-06-20T09:00:00Z", 101.0),
    ("2024-03-05T09:00:00Z", 99.0),
]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def imported(user: Any, offline_example: dict[str, Any]) -> list[Any]:
    """Four runs of one configuration, stored in MEASURED's order, each with its measured time."""
    runs = []
    for when, value in MEASURED:
        document = variant(offline_example, "lab-cpu-07", value, **{"provenance.started_at": when})
        document["provenance"]["finished_at"] = None
        runs.append(submission_create(document=document, submitted_by=user)[0])
    return runs


def _x_values(history: dict[str, Any]) -> list[datetime]:
    """The x of every point the time chart draws, in the order drawn (the errorbar markers; one software version)."""
    with rc_context(STYLE):
        figure = history_time_figure(history)
    assert figure is not None
    xs = [x for container in figure.axes[0].containers for x in container.lines[0].get_xdata()]
    # matplotlib keeps the datetimes it was given as the data (converted only to draw); numbers would be dates too
    return [x if isinstance(x, datetime) else mdates.num2date(x) for x in xs]


def test_a_history_is_in_the_order_runs_were_measured_not_imported(imported: list[Any], api: Any) -> None:
    history = run_history(run=imported[0])
    by_measured = sorted(imported, key=lambda r: r.started_at)
    assert [p.run.pk for p in history.points] == [r.pk for r in by_measured] != [r.pk for r in imported]
    assert history.time_basis == "measured" and history.scope == "configuration"
    assert [p.at for p in history.points] == [r.started_at for r in by_measured]
    # the change-point scan reads the values in the measured order (the last measured, 140, is the change)
    values = [p.value for p in history.points]
    assert [p.change.changed for p in history.points] == [
        c.changed for c in changepoints.scan(values, lower_is_better=False)
    ]
    body = api.get(f"/api/v1/submissions/{imported[0].pk}/history").json()
    assert [p["run"] for p in body["points"]] == [r.pk for r in by_measured]
    assert [_at(p["at"]) for p in body["points"]] == [_at(p["measured_at"]) for p in body["points"]]
    assert sorted(_at(w) for w, _ in MEASURED) == [_at(p["at"]) for p in body["points"]]
    assert body["time_basis"] == "measured" and body["unplaced"] == []
    # the chart plots each run at its measured time, none at the time it was stored
    assert _x_values(body) == [_at(p["measured_at"]) for p in body["points"]]
    assert not {r.submitted_at for r in imported} & set(_x_values(body))
    assert time_axis_label(body) == "when measured (UTC)"


def test_a_run_without_a_measured_time_is_listed_apart_with_the_reason(
    imported: list[Any], user: Any, offline_example: dict[str, Any], api: Any
) -> None:
    document = variant(offline_example, "lab-cpu-07", 500.0, **{"provenance.started_at": None})
    document["provenance"]["finished_at"] = None
    undated, _ = submission_create(document=document, submitted_by=user)
    history = run_history(run=undated)
    assert undated.pk not in [p.run.pk for p in history.points]
    assert [u.run.pk for u in history.unplaced] == [undated.pk]
    assert history.unplaced[0].reason == NO_MEASURED_TIME and "provenance.started_at" in NO_MEASURED_TIME
    # not judged a change (500 against ~100 would be one), still counted for its software version
    assert not any(p.change.changed and p.value == 500.0 for p in history.points)
    assert undated.pk in [pk for g in history.groups for pk in g.runs]
    body = api.get(f"/api/v1/submissions/{undated.pk}/history").json()
    assert [u["run"] for u in body["unplaced"]] == [undated.pk] and body["unplaced"][0]["reason"] == NO_MEASURED_TIME
    assert undated.submitted_at not in _x_values(body)
    page = signed_in(user).get(f"/runs/{undated.pk}/history/").content.decode()
    assert "Not on the time axis (1 run)" in page and "no time of measurement stated" in page
    runs_table = page[page.index("runs-heading") :]
    assert f'href="/runs/{undated.pk}/"' not in runs_table  # listed apart, not among the placed runs
    assert "by the date each result was measured" in page and "Measured (UTC)" in page
