"""Reading series and history: one configuration's headline over time and over software versions.

`run_history(run)` is the history of a run's configuration: the run's series when it belongs to one (same
schedule variant, same agent), otherwise every run stated with the same controlled fields on the software
axis and the same software settings (protocol.comparability: software versions may move, the rest may not; a run
with 2 BLAS threads is another configuration than one with 1, never a point in its history). Each run gets its
headline as reported and the geometric mean of its repetitions (the value the change-point scan judges)
with its interval (protocol.statistics) and the change-point verdict of protocol.changepoints, computed by the
same scan that raises alerts, so the page marks exactly the runs a series would alert on.

A published result (an imported MLPerf result: `provenance.origin` names its round) has no series and one result per
round: its history is the same system's results of every round that defines the benchmark alike (the software
axis key holds the workload's version, which names the first round of those: importers/mlperf/definitions.py), of
the same submitter and system id, ordered by round and then by the date each was measured, not by when it was
imported. The load generator's settings (LoadGen's `loadgen.*` and `user.conf:*`: the round's seeds, the target QPS
the submitter tuned to reach the published figure) are the load, not the system's configuration, so they do not
split such a history.

Outside a series every history is placed by **when each run was measured** (`provenance.started_at`: LoadGen's
test_datetime for an MLPerf result, the first request for an imported serving level, the runner's start for the
registry's own runs), never by when it was stored or imported: an import of last year's results is not news of
today. A run that states no measured time is not placed at its import time either: it is listed apart
(`History.unplaced`) with the reason, and left out of the change-point scan, which follows the measured order. A
series keeps the order its alerts were judged in (runs in the order the registry received them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from protocol import changepoints
from protocol.canonical import digest
from protocol.comparability import setting_words
from protocol.numbers import Style, number
from protocol.statistics import Estimate, from_values, headline_estimate, rounded
from registry.models import Alert, Schedule, Series, SeriesRun, Submission
from registry.presentation.words import HEADLINE_STYLE, headline_text, interval

HISTORY_LIMIT = 300  # the latest runs a history shows (older ones: through the API's series pages)

PUBLISHED_KINDS = frozenset({"mlperf-inference", "mlperf-training"})  # provenance.origin.kind of published results
# Settings of the load generator, not of the system: a published result's history is not split by them.
LOAD_GENERATOR_SETTINGS = ("loadgen.", "user.conf:")


def published_origin(run: Submission) -> dict[str, Any] | None:
    """provenance.origin of a published result (its kind is a publisher's and it names its round), else None."""
    origin = (run.document.get("provenance") or {}).get("origin")
    if isinstance(origin, dict) and origin.get("kind") in PUBLISHED_KINDS and origin.get("round"):
        return origin
    return None


def round_order(name: str) -> tuple[int, ...]:
    """'v5.1' -> (5, 1): rounds in publication order; a name without a version sorts first."""
    match = re.fullmatch(r"v?(\d+(?:\.\d+)*)", name or "")
    return tuple(int(n) for n in match[1].split(".")) if match else ()


@dataclass
class HistoryPoint:
    run: Submission
    estimate: Estimate
    value: float | None
    change: changepoints.Change
    software: str
    measured: bool = False  # placed by when the run was measured (provenance.started_at), not when it was stored

    @property
    def round(self) -> str:
        """The round a published result belongs to ("" for the registry's own runs)."""
        return str((published_origin(self.run) or {}).get("round") or "")

    @property
    def at(self) -> datetime:
        """Where the run stands on the time axis: when it was measured (a placed run states it), or in a series when
        the registry received it."""
        if self.measured:
            assert self.run.started_at is not None  # runs without it are History.unplaced, never points
            return self.run.started_at
        return self.run.submitted_at

    @property
    def headline_text(self) -> str:
        """The run's headline as it reported it, as the catalogue and the run page print it."""
        return headline_text(self.run.headline_value, self.run.headline_unit)

    @property
    def value_text(self) -> str:
        """The geometric mean of the run's repetitions: what the change-point scan judges."""
        return number(self.value, HEADLINE_STYLE)

    @property
    def interval_text(self) -> str:
        return interval(self.estimate.ci_low, self.estimate.ci_high, HEADLINE_STYLE)

    @property
    def change_text(self) -> str:
        return number(self.change.ratio, Style.GENERAL, digits=3, missing="")

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.pk,
            "digest": self.run.digest,
            "submitted_at": self.run.submitted_at.isoformat(),
            "measured_at": self.run.started_at.isoformat() if self.run.started_at else None,
            "at": self.at.isoformat(),
            "round": self.round or None,
            "software": self.software,
            "value": rounded(self.value),
            "ci_low": rounded(self.estimate.ci_low),
            "ci_high": rounded(self.estimate.ci_high),
            "enough_evidence": self.estimate.evidence is None,
            "change_point": bool(self.change.changed),
            "change": self.change.as_dict() if self.change.changed else None,
        }


@dataclass
class SoftwareGroup:
    software: str
    runs: list[int]
    estimate: Estimate

    @property
    def value_text(self) -> str:
        return number(self.estimate.value, HEADLINE_STYLE)

    @property
    def interval_text(self) -> str:
        return interval(self.estimate.ci_low, self.estimate.ci_high, HEADLINE_STYLE)

    def as_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {
            "software": self.software,
            "runs": self.runs,
            "value": rounded(e.value),
            "ci_low": rounded(e.ci_low),
            "ci_high": rounded(e.ci_high),
            "independent_values": e.independent_values,
            "enough_evidence": e.evidence is None,
            "evidence": e.evidence,
            "interval_method": e.interval_method,
        }


# Why a run of a history is not on its time axis.
NO_MEASURED_TIME = (
    "no time of measurement stated (provenance.started_at): not placed on the time axis, since the time it was "
    "imported or stored says nothing of when it was measured"
)


@dataclass
class UnplacedRun:
    """A run of the history that has no place on its time axis, and why."""

    run: Submission
    software: str
    reason: str = NO_MEASURED_TIME

    @property
    def headline_text(self) -> str:
        return headline_text(self.run.headline_value, self.run.headline_unit)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.pk,
            "digest": self.run.digest,
            "submitted_at": self.run.submitted_at.isoformat(),
            "round": str((published_origin(self.run) or {}).get("round") or "") or None,
            "software": self.software,
            "headline": self.run.headline_value,
            "reason": self.reason,
        }


@dataclass
class History:
    run: Submission
    scope: str  # "series", "configuration" or "published" (one system's published results, round by round)
    series: Series | None
    metric: str
    unit: str | None
    lower_is_better: bool
    points: list[HistoryPoint]
    groups: list[SoftwareGroup]
    alerts: list[Alert] = field(default_factory=list)
    truncated: bool = False
    # Runs of the same controlled fields whose software settings differ: other configurations, left out ({settings
    # in words: (how many runs, the latest's id)}), so the page can link their own histories.
    other_settings: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Runs of this history with no measured time: listed apart, never on the time axis nor in the change-point scan.
    unplaced: list[UnplacedRun] = field(default_factory=list)

    @property
    def time_basis(self) -> str:
        """'measured' (by when each run was measured; published results by round first) or 'submitted' (a series:
        by when the registry received each run, the order its alerts were judged in)."""
        return "submitted" if self.scope == "series" else "measured"

    @property
    def change_points(self) -> list[HistoryPoint]:
        return [p for p in self.points if p.change.changed]

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run.pk,
            "scope": self.scope,
            "time_basis": self.time_basis,
            "series": self.series.pk if self.series else None,
            "metric": self.metric,
            "unit": self.unit,
            "lower_is_better": self.lower_is_better,
            "method": changepoints.METHOD,
            "truncated": self.truncated,
            "points": [p.as_dict() for p in self.points],
            "software": [g.as_dict() for g in self.groups],
            "alerts": [a.pk for a in self.alerts],
            "other_settings": [
                {"settings": words, "runs": n, "latest": latest} for words, (n, latest) in self.other_settings.items()
            ],
            "unplaced": [u.as_dict() for u in self.unplaced],
        }


def software_label(run: Submission) -> str:
    """The software a run states, in short: frameworks with versions, else the stored summary."""
    frameworks = (run.document.get("software") or {}).get("frameworks") or {}
    named = ", ".join(f"{k} {v}" for k, v in sorted(frameworks.items()) if v)
    return named or run.software_summary or "software not stated"


def _history_runs(run: Submission) -> tuple[str, Series | None, QuerySet[Submission]]:
    member = SeriesRun.objects.select_related("series", "series__agent", "series__schedule").filter(run=run).first()
    # Each measurement once, and no derived result: a history judges change points on independent values.
    live = Submission.objects.independent().filter(withdrawal__isnull=True).select_related("series_member")
    if member is not None:
        return "series", member.series, live.filter(series_member__series=member.series)
    same = live.filter(comparability_key_software=run.comparability_key_software, headline_metric=run.headline_metric)
    origin = published_origin(run)
    if origin is not None:
        # one system of one submitter: another submitter's identical hardware is another system's history
        return (
            "published",
            None,
            same.filter(
                document__provenance__origin__kind=origin["kind"],
                document__provenance__origin__submitter=origin.get("submitter"),
                document__provenance__origin__system_id=origin.get("system_id"),
            ),
        )
    return "configuration", None, same


def settings_of(run: Submission) -> dict[str, Any]:
    """The run's software settings (threads, TF32, fast paths): part of its configuration, never of its history.
    A published result's load generator settings are left out (see the module doc)."""
    settings = (run.document.get("software") or {}).get("settings")
    if not isinstance(settings, dict):
        return {}
    if published_origin(run) is None:
        return settings
    return {k: v for k, v in settings.items() if not k.startswith(LOAD_GENERATOR_SETTINGS)}


def _settings_words(mine: dict[str, Any], theirs: dict[str, Any]) -> str:
    """Where another run's settings differ from this run's, in words: 'BLAS threads 2' (up to 3 settings)."""
    keys = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    words = ", ".join(setting_words(k, theirs.get(k)) for k in keys[:3])
    return words + (", …" if len(keys) > 3 else "")


def _same_settings(run: Submission, runs: list[Submission]) -> tuple[list[Submission], dict[str, tuple[int, int]]]:
    """`runs` split into those with `run`'s settings and, for the others, {their settings in words: (runs,
    latest id)}."""
    mine = settings_of(run)
    key = digest(mine)
    kept: list[Submission] = []
    others: dict[str, tuple[int, int]] = {}
    for other in runs:
        theirs = settings_of(other)
        if digest(theirs) == key:
            kept.append(other)
            continue
        words = _settings_words(mine, theirs)
        count, latest = others.get(words, (0, other.pk))
        others[words] = (count + 1, max(latest, other.pk))
    return kept, others


def _placed(scope: str, runs: QuerySet[Submission]) -> tuple[list[Submission], list[Submission], int]:
    """The latest HISTORY_LIMIT runs in the order the history places them (oldest first), the runs it cannot place
    (no measured time; newest first), and how many runs it places in all."""
    if scope == "series":  # the order the series' alerts were judged in
        return list(runs.order_by("-submitted_at", "-id")[:HISTORY_LIMIT])[::-1], [], runs.count()
    placed = runs.filter(started_at__isnull=False)
    latest = list(placed.order_by("-started_at", "-id")[:HISTORY_LIMIT])[::-1]
    if scope == "published":  # round order first: a round's results are measured before it is published
        latest.sort(key=lambda r: (round_order(str((published_origin(r) or {}).get("round"))), r.started_at, r.pk))
    unplaced = list(runs.filter(started_at__isnull=True).order_by("-submitted_at", "-id")[:HISTORY_LIMIT])
    return latest, unplaced, placed.count()


def _software_groups(run: Submission, members: list[tuple[str, int, float | None]]) -> list[SoftwareGroup]:
    """Each software version's runs ((software, run id, value) in order) with the interval over their values."""
    base = Estimate(
        metric=run.headline_metric,
        value=None,
        unit=run.headline_unit,
        lower_is_better=run.headline_lower_is_better,
        method="",
        interval_method="none",
        n=0,
        source="runs",
        value_unit="run",
    )
    groups: dict[str, list[tuple[int, float | None]]] = {}
    for software, pk, value in members:
        groups.setdefault(software, []).append((pk, value))
    return [
        SoftwareGroup(
            name,
            [pk for pk, _ in runs],
            from_values(base, [v for _, v in runs if v is not None], "the runs' headlines (one value per run)"),
        )
        for name, runs in groups.items()
    ]


def run_history(*, run: Submission) -> History:
    """The history of `run`'s configuration (see the module doc), oldest first."""
    scope, series, runs = _history_runs(run)
    latest, unplaced, total = _placed(scope, runs)
    others: dict[str, tuple[int, int]] = {}
    if scope != "series":
        latest, others = _same_settings(run, latest)
        total -= sum(n for n, _ in others.values())
        unplaced, more = _same_settings(run, unplaced)
        for words, (n, newest) in more.items():
            count, known = others.get(words, (0, newest))
            others[words] = (count + n, max(known, newest))
    estimates = [headline_estimate(r.document) for r in latest]
    values = [changepoints.run_value(e) for e in estimates]
    verdicts = changepoints.scan(values, lower_is_better=run.headline_lower_is_better)  # in the measured order
    points = [
        HistoryPoint(r, e, v, c, software_label(r), measured=scope != "series")
        for r, e, v, c in zip(latest, estimates, values, verdicts, strict=True)
    ]
    apart = [UnplacedRun(r, software_label(r)) for r in unplaced]
    # the versions' figures do not need a time: a run the time axis cannot place still counts for its software
    members = [(p.software, p.run.pk, p.value) for p in points] + [
        (u.software, u.run.pk, changepoints.run_value(headline_estimate(u.run.document))) for u in apart
    ]
    return History(
        run=run,
        scope=scope,
        series=series,
        metric=run.headline_metric,
        unit=run.headline_unit,
        lower_is_better=run.headline_lower_is_better,
        points=points,
        groups=_software_groups(run, members),
        alerts=list(Alert.objects.filter(series=series).order_by("run_id")) if series is not None else [],
        truncated=total > len(latest),
        other_settings=others,
        unplaced=apart,
    )


def series_list(*, schedule: Schedule | None = None) -> QuerySet[Series]:
    qs = Series.objects.select_related("agent", "schedule").order_by("-id")
    return qs.filter(schedule=schedule) if schedule is not None else qs


def alert_list() -> QuerySet[Alert]:
    return Alert.objects.select_related("series", "series__agent", "run", "previous").order_by("-id")
