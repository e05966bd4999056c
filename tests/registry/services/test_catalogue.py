"""The catalogue's summary table: exact after every run and withdrawal, under concurrency, and rebuildable."""

from __future__ import annotations

import copy
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connections, transaction

from registry.models import CatalogueCell, Submission
from registry.services.catalogue import catalogue_cells_differ, catalogue_run_added
from registry.services.submissions import submission_create, submission_withdraw


def _variant(document: dict[str, Any], i: int, **frameworks: str) -> dict[str, Any]:
    doc = copy.deepcopy(document)
    doc["system"]["name"] = f"lab-node-{i:03d}"
    doc["metrics"]["throughput"]["value"] = 1000.0 + i
    if frameworks:
        doc["software"]["frameworks"] = frameworks
    return doc


def _cells() -> list[dict[str, Any]]:
    return list(
        CatalogueCell.objects.order_by(*[f.name for f in CatalogueCell._meta.fields if f.name != "id"]).values(
            "comparability_key",
            "accelerator_model",
            "software_summary",
            "withdrawn",
            "runs",
            "headline_low",
            "headline_high",
        )
    )


def _in_thread(fn):
    """Run fn in a worker thread with its own database connection, closed afterwards."""

    def wrapper(*args):
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return wrapper


@pytest.mark.django_db
def test_cells_count_every_run_and_move_it_when_withdrawn(user, server_example, offline_example):
    runs = [submission_create(document=_variant(server_example, i), submitted_by=user)[0] for i in range(3)]
    submission_create(document=_variant(server_example, 9, torch="2.14.0"), submitted_by=user)
    submission_create(document=offline_example, submitted_by=user)
    assert catalogue_cells_differ() == []
    live = CatalogueCell.objects.get(comparability_key=runs[0].comparability_key, software_summary="torch 2.13.0")
    assert (live.runs, live.headline_low, live.headline_high, live.withdrawn) == (3, 1000.0, 1002.0, False)

    submission_withdraw(submission=runs[2], reason="wrong driver", actor=user)  # the highest: the range shrinks
    submission_withdraw(submission=runs[1], reason="wrong driver", actor=user)
    assert catalogue_cells_differ() == []
    live.refresh_from_db()
    assert (live.runs, live.headline_low, live.headline_high) == (1, 1000.0, 1000.0)
    gone = CatalogueCell.objects.get(comparability_key=runs[0].comparability_key, withdrawn=True)
    assert (gone.runs, gone.headline_low, gone.headline_high) == (2, 1001.0, 1002.0)

    submission_withdraw(submission=runs[0], reason="wrong driver", actor=user)
    assert not CatalogueCell.objects.filter(
        comparability_key=runs[0].comparability_key, withdrawn=False, software_summary="torch 2.13.0"
    ).exists()  # a cell with no run goes
    assert catalogue_cells_differ() == []


@pytest.mark.django_db
def test_an_integer_headline_value_is_counted_like_a_float(user, server_example):
    whole = _variant(server_example, 1)
    whole["metrics"]["throughput"]["value"] = 2560  # an int in the document
    submission_create(document=whole, submitted_by=user)
    submission_create(document=_variant(server_example, 2), submitted_by=user)
    assert [(c["runs"], c["headline_low"], c["headline_high"]) for c in _cells()] == [(2, 1002.0, 2560.0)]
    assert catalogue_cells_differ() == []


@pytest.mark.django_db
def test_a_known_document_is_not_counted_twice(user, server_example):
    submission_create(document=server_example, submitted_by=user)
    submission_create(document=server_example, submitted_by=user)
    assert [c["runs"] for c in _cells()] == [1]


@pytest.mark.django_db
def test_a_failed_store_leaves_the_cells_as_they_were(user, server_example, monkeypatch):
    def broken_append(**kwargs):
        raise RuntimeError("simulated failure while appending the audit entry")

    submission_create(document=server_example, submitted_by=user)
    monkeypatch.setattr("registry.services.runs.audit_append_many", broken_append)
    with pytest.raises(RuntimeError):
        submission_create(document=_variant(server_example, 1), submitted_by=user)
    assert [c["runs"] for c in _cells()] == [1]


@pytest.mark.django_db
def test_rebuild_catalogue_gives_the_cells_kept_on_the_way(user, server_example, offline_example, capsys):
    runs = [
        submission_create(document=_variant(server_example, i, torch=f"2.1{i % 3}.0"), submitted_by=user)[0]
        for i in range(7)
    ]
    submission_create(document=offline_example, submitted_by=user)
    submission_withdraw(submission=runs[3], reason="test", actor=user)
    kept = _cells()
    call_command("rebuild_catalogue")
    assert _cells() == kept
    call_command("rebuild_catalogue")  # idempotent
    assert _cells() == kept
    call_command("rebuild_catalogue", "--check")
    assert "match" in capsys.readouterr().out


@pytest.mark.django_db
def test_rebuild_catalogue_repairs_cells_that_drifted(user, server_example):
    submission_create(document=server_example, submitted_by=user)
    kept = _cells()
    CatalogueCell.objects.update(runs=41)
    with pytest.raises(CommandError, match="1 catalogue cell"):
        call_command("rebuild_catalogue", "--check")
    call_command("rebuild_catalogue")
    assert _cells() == kept


@pytest.mark.django_db
def test_a_withdrawal_goes_through_when_the_cells_missed_its_run(user, server_example, caplog):
    run, _ = submission_create(document=server_example, submitted_by=user)
    CatalogueCell.objects.all().delete()  # as after a bulk insert around the services
    submission_withdraw(submission=run, reason="wrong driver", actor=user)
    assert Submission.objects.get(pk=run.pk).withdrawal.reason == "wrong driver"
    assert "benchreg rebuild-catalogue" in caplog.text
    call_command("rebuild_catalogue")
    assert catalogue_cells_differ() == []


@pytest.mark.django_db
def test_the_software_summary_is_stored_with_the_run(user, server_example):
    doc = _variant(server_example, 1, vllm="0.9.0", pytorch="2.7.0")
    run, _ = submission_create(document=doc, submitted_by=user)
    assert Submission.objects.get(pk=run.pk).software_summary == "pytorch 2.7.0, vllm 0.9.0"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_submissions_and_withdrawals_keep_the_cells_exact(user, server_example):
    first = [submission_create(document=_variant(server_example, 100 + i), submitted_by=user)[0] for i in range(6)]
    barrier = threading.Barrier(8)

    @_in_thread
    def work(i):
        barrier.wait()
        if i < 6:  # same cell as the new runs: increments and decrements race on one row
            return submission_withdraw(submission=first[i], reason="race", actor=user)
        return [submission_create(document=_variant(server_example, 10 * i + j), submitted_by=user) for j in range(10)]

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert catalogue_cells_differ() == []
    assert {(c["withdrawn"], c["runs"]) for c in _cells()} == {(False, 20), (True, 6)}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_transactions_creating_the_same_cell_at_once_all_count(user, server_example):
    """Eight transactions count runs into a cell that does not exist yet, at the same moment: one INSERT wins and
    the others' ON CONFLICT DO UPDATE add to it (no savepoint, no retry, nothing lost)."""
    runs = [submission_create(document=_variant(server_example, i), submitted_by=user)[0] for i in range(8)]
    CatalogueCell.objects.all().delete()
    barrier = threading.Barrier(8)

    @_in_thread
    def count(run):
        with transaction.atomic():
            barrier.wait()
            catalogue_run_added(run=run)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(count, runs))
    assert [(c["runs"], c["headline_low"], c["headline_high"]) for c in _cells()] == [(8, 1000.0, 1007.0)]
    assert catalogue_cells_differ() == []  # the log sums too


@pytest.mark.django_db
def test_a_batch_keeps_the_cells_as_single_submissions_would(user, server_example, offline_example, capsys):
    """The bulk path counts a chunk's runs in one upsert of all their cells: the cells must still equal a rebuild."""
    from registry.services.submissions import submission_create_batch

    submission_create(document=_variant(server_example, 0, torch="2.10.0"), submitted_by=user)  # a cell exists
    documents = [_variant(server_example, i, torch=f"2.1{i % 3}.0") for i in range(1, 9)]
    documents += [offline_example, documents[2]]  # a new cell; a second copy in the batch
    outcomes = submission_create_batch(documents=documents, submitted_by=user, per_transaction=4)
    assert [o.status for o in outcomes] == ["stored"] * 9 + ["known"]
    assert outcomes[-1].run.pk == outcomes[2].run.pk
    assert Submission.objects.count() == 10
    call_command("rebuild_catalogue", "--check")
    assert "match" in capsys.readouterr().out
