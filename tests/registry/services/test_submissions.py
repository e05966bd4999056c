"""The storage service: idempotent, immutable, audited in the same transaction, safe under concurrency."""

from __future__ import annotations

import copy
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, transaction

from registry.exceptions import ImmutableRecord
from registry.models import AuditEntry, AuditHead, Submission
from registry.services.submissions import InvalidDocument, submission_create, submission_withdraw
from tests.registry.concurrency import in_thread


@pytest.mark.django_db
def test_runs_cannot_be_changed_or_deleted_through_django(user, server_example):
    run, _ = submission_create(document=server_example, submitted_by=user)
    run.system_name = "edited"
    with pytest.raises(ImmutableRecord):
        run.save()
    with pytest.raises(ImmutableRecord):
        run.delete()
    with pytest.raises(ImmutableRecord):
        Submission.objects.filter(pk=run.pk).update(system_name="edited")
    with pytest.raises(ImmutableRecord):
        Submission.objects.all().delete()


@pytest.mark.django_db
def test_a_rejected_document_raises_with_every_error_and_stores_nothing(user, server_example):
    server_example["phase"] = "serving"
    with pytest.raises(InvalidDocument) as refused:
        submission_create(document=server_example, submitted_by=user)
    assert refused.value.errors[0]["pointer"] == "/phase"
    assert not Submission.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.django_db
def test_a_change_and_its_audit_entry_commit_or_fail_together(user, server_example, monkeypatch):
    def broken_append(**kwargs):
        raise RuntimeError("simulated failure while appending the audit entry")

    monkeypatch.setattr("registry.services.submissions.audit_append_many", broken_append)
    with pytest.raises(RuntimeError):
        submission_create(document=server_example, submitted_by=user)
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_a_withdrawal_is_a_new_record_and_the_run_stays(user, server_example):
    run, _ = submission_create(document=server_example, submitted_by=user)
    withdrawal = submission_withdraw(submission=run, reason="wrong driver recorded", actor=user)
    assert Submission.objects.get(pk=run.pk).withdrawal == withdrawal
    assert AuditEntry.objects.filter(kind="run.withdrawn", subject=run.digest).exists()


def _variant(document: dict, i: int) -> dict:
    copy_ = copy.deepcopy(document)
    copy_["system"]["name"] = f"lab-node-{i:03d}"
    return copy_


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_submissions_store_one_run(user, server_example):
    barrier = threading.Barrier(8)

    @in_thread
    def submit(_):
        barrier.wait()
        return submission_create(document=server_example, submitted_by=user)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(submit, range(8)))
    assert len({run.pk for run, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert Submission.objects.count() == 1 and AuditEntry.objects.filter(kind="run.submitted").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_leave_a_gapless_audit_sequence(user, server_example):
    start = AuditHead.objects.get(id=1).size

    @in_thread
    def submit(i):
        return submission_create(document=_variant(server_example, i), submitted_by=user)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(submit, range(40)))
    seqs = list(AuditEntry.objects.order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(start, start + 40)) or seqs[-40:] == list(range(seqs[-40], seqs[-40] + 40))
    assert AuditHead.objects.get(id=1).size == seqs[-1] + 1
    assert len(set(seqs)) == len(seqs)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("table", ["registry_submission", "registry_auditentry", "registry_withdrawal"])
@pytest.mark.parametrize("statement", ["UPDATE {t} SET id = id", "DELETE FROM {t}", "TRUNCATE {t} CASCADE"])
def test_postgres_triggers_refuse_rewriting_evidence(user, server_example, table, statement):
    run, _ = submission_create(document=server_example, submitted_by=user)
    submission_withdraw(submission=run, reason="test", actor=user)
    with pytest.raises(Exception, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement.format(t=table))
    assert Submission.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_batch_inserts_its_large_texts_one_placeholder_per_value(user, server_example, settings):
    """registry/models/fields.py keeps the runs' documents and the audit texts off Django's UNNEST bulk insert
    (psycopg escapes array elements in Python: 1.6 ms a document). If a Django upgrade ignored the opt-out, the
    batch path would slow down silently; this says so instead."""
    # Inline: entries are numbered by the ORM's bulk insert (the after-commit sequencer writes its own SQL).
    settings.BENCHREG_AUDIT_SEQUENCING = "inline"
    from django.test.utils import CaptureQueriesContext

    from registry.services.submissions import submission_create_batch

    documents = []
    for i in range(3):
        doc = copy.deepcopy(server_example)
        doc["system"]["name"] = f"lab-unnest-{i}"
        documents.append(doc)
    with CaptureQueriesContext(connection) as queries:
        outcomes = submission_create_batch(documents=documents, submitted_by=user)
    assert [o.status for o in outcomes] == ["stored"] * 3
    inserts = [q["sql"] for q in queries.captured_queries if "INSERT INTO" in q["sql"]]
    tables = {sql.split("INSERT INTO ", 1)[1].split()[0].strip('"') for sql in inserts}
    assert {"registry_submission", "registry_auditqueued", "registry_auditentry"} <= tables, tables
    assert not [sql[:80] for sql in inserts if "UNNEST" in sql]
