"""registry.services.reactions: what follows a stored or withdrawn run, each reader told in the stated order."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from registry.services import reactions
from registry.services.submissions import submission_create, submission_withdraw


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Each reader the reactions call, in the order called, with what it was given (nothing really runs)."""
    out: list[tuple[str, Any]] = []
    for name in (
        "catalogue_runs_added",
        "catalogue_run_withdrawn",
        "decisions_flag_for_new_runs",
        "decisions_flag_for_runs",
        "decisions_flag_for_series_alert",
        "series_alert_send",
    ):
        monkeypatch.setattr(reactions, name, lambda _name=name, **kwargs: out.append((_name, kwargs)))
    return out


@pytest.mark.django_db
def test_stored_runs_are_counted_then_mark_decisions_stale(user: Any, server_example: dict, told: list) -> None:
    run, _ = submission_create(document=server_example, submitted_by=user)
    assert told == [("catalogue_runs_added", {"runs": [run]}), ("decisions_flag_for_new_runs", {"runs": [run]})]


@pytest.mark.django_db
def test_a_withdrawn_run_leaves_the_counts_then_flags_decisions_with_the_reason(
    user: Any, server_example: dict, told: list
) -> None:
    run, _ = submission_create(document=server_example, submitted_by=user)
    told.clear()
    submission_withdraw(submission=run, reason="wrong driver", actor=user)
    assert [name for name, _ in told] == ["catalogue_run_withdrawn", "decisions_flag_for_runs"]
    assert told[1][1] == {
        "runs": [run],
        "reason": f"run {run.pk} was withdrawn: wrong driver",
        "actor": user.get_username(),
    }


def test_an_alert_is_sent_then_told_to_the_decisions(told: list) -> None:
    alert = SimpleNamespace(pk=1)
    reactions.series_alert_raised(alert=alert)
    assert told == [("series_alert_send", {"alert": alert}), ("decisions_flag_for_series_alert", {"alert": alert})]


def test_decisions_that_fail_on_an_alert_are_logged_and_the_alert_stands(
    told: list, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*, alert: Any) -> None:
        raise RuntimeError("decisions down")

    monkeypatch.setattr(reactions, "decisions_flag_for_series_alert", broken)
    reactions.series_alert_raised(alert=SimpleNamespace(pk=9))
    assert "decisions not flagged for alert 9" in caplog.text


@pytest.mark.django_db
def test_a_job_run_joins_its_series_only_after_the_commit(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    joined: list[int] = []
    monkeypatch.setattr(reactions, "series_record_run", lambda *, run_id: joined.append(run_id))
    with django_capture_on_commit_callbacks(execute=True):
        reactions.job_run_stored(run=SimpleNamespace(pk=5))
        assert joined == []
    assert joined == [5]


@pytest.mark.django_db
def test_a_run_of_no_series_joins_none() -> None:
    assert reactions.run_joins_series(run_id=123456) is None
