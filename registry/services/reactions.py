"""What follows a stored or withdrawn run, in one place: who reads runs as they arrive, and in which order.

Stored runs (`runs_stored`, called by the run store inside the transaction that stores them):
  1. the catalogue's derived counts (registry.services.catalogue), exact when the transaction commits;
  2. the decisions whose question the runs may enter are marked stale (registry.services.decisions), their
     recompute queued after the commit.
A run stored for a scheduled job (`job_run_stored`, called by registry.services.jobs once the run is linked):
  3. after the commit, the run joins its series (registry.services.series); a change point raises an alert, and
     `series_alert_raised` follows it.
A raised alert (`series_alert_raised`, after the alert's own transaction committed):
  4. its signed webhook is queued (registry.services.series);
  5. every decision citing one of the series' runs is flagged; a failure here is logged, never raised: the alert
     is committed and stays.
A withdrawn run (`run_withdrawn`, called by registry.services.submissions inside the withdrawal's transaction):
  6. the catalogue's counts drop the run;
  7. every decision whose latest answer cites the run is flagged, with the withdrawal's reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import cast

from django.db import transaction

from registry.models import Alert, SeriesRun, Submission, Withdrawal
from registry.services.catalogue import catalogue_run_withdrawn, catalogue_runs_added
from registry.services.decisions import (
    decisions_flag_for_new_runs,
    decisions_flag_for_runs,
    decisions_flag_for_series_alert,
)
from registry.services.series import series_alert_send, series_record_run

log = logging.getLogger(__name__)


def runs_stored(*, runs: list[Submission]) -> None:
    """Runs were stored in the current transaction: the catalogue counts them, then decisions are marked stale."""
    catalogue_runs_added(runs=runs)
    decisions_flag_for_new_runs(runs=runs)


def run_withdrawn(*, withdrawal: Withdrawal) -> None:
    """A run was withdrawn in the current transaction: the catalogue drops it, then decisions citing it are
    flagged."""
    run = withdrawal.submission
    catalogue_run_withdrawn(run=run)
    decisions_flag_for_runs(
        runs=[run], reason=f"run {run.pk} was withdrawn: {withdrawal.reason}", actor=withdrawal.withdrawn_by_name
    )


def job_run_stored(*, run: Submission) -> None:
    """A job's run was stored and linked to its job: once that commits, the run joins its series (if its job was
    scheduled). robust: a failure there leaves the stored run as it is; the schedule tick catches it up."""
    # The default binds the run's id: to on_commit the lambda is a hook of no arguments.
    transaction.on_commit(cast(Callable[[], None], lambda run_id=run.pk: run_joins_series(run_id=run_id)), robust=True)


def run_joins_series(*, run_id: int) -> SeriesRun | None:
    """Add a stored run to its series (nothing for a run of no series, or one already in it); an alert it raises
    is followed by `series_alert_raised`. Returns the run's place in the series, or None."""
    joined = series_record_run(run_id=run_id)
    if joined is None:
        return None
    member, alert = joined
    if alert is not None:
        series_alert_raised(alert=alert)
    return member


def series_alert_raised(*, alert: Alert) -> None:
    """A committed alert: its webhook is queued, then the decisions citing the series are flagged."""
    series_alert_send(alert=alert)
    try:
        decisions_flag_for_series_alert(alert=alert)
    except Exception:  # the decisions' failure must not undo a committed alert
        log.exception("decisions not flagged for alert %s", alert.pk)
