"""The run store: the one writer of runs, each with its audit entry and what follows a stored run, in one
transaction."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from registry.choices import AuditKind, Trust
from registry.models import AuditEntry, AuditQueued, Submission
from registry.services import runs as store
from registry.services.runs import run_store, runs_store
from registry.services.submissions import submission_check


@pytest.mark.django_db
def test_a_stored_run_has_its_audit_entry_and_its_readers_told_once(
    user: Any, server_example: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[list[int]] = []
    monkeypatch.setattr(store, "runs_stored", lambda *, runs: told.append([r.pk for r in runs]))
    run = run_store(checked=submission_check(server_example), submitted_by=user, token=None, trust=Trust.DECLARED)
    assert Submission.objects.get(pk=run.pk).trust == Trust.DECLARED
    # The entry is queued in the same transaction; it is sequenced into the log when that commits.
    queued = AuditQueued.objects.filter(kind=AuditKind.RUN_SUBMITTED, subject=run.digest).count()
    assert queued + AuditEntry.objects.filter(kind=AuditKind.RUN_SUBMITTED, subject=run.digest).count() == 1
    assert told == [[run.pk]]


@pytest.mark.django_db
def test_nothing_to_store_writes_nothing_and_tells_no_one(user: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "runs_stored", lambda *, runs: pytest.fail("told of no runs"))
    assert runs_store(checked=[], submitted_by=user, token=None, trust=Trust.DECLARED) == []
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_a_reader_that_fails_undoes_the_store(user: Any, server_example: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*, runs: list[Submission]) -> None:
        raise RuntimeError("a reader failed")

    monkeypatch.setattr(store, "runs_stored", broken)
    with pytest.raises(RuntimeError), transaction.atomic():
        run_store(checked=submission_check(server_example), submitted_by=user, token=None, trust=Trust.DECLARED)
    assert not Submission.objects.exists()
