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

    monkeypatch.setattr("registry.services.runs.audit_append_many", broken_append)
    with pytest.raises(RuntimeError):
        submission_create(document=server_example, submitted_by=user)
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_a_withdrawal_is_a_new_record_and_the_run_stays(user, server_example):
    run, _ = submission_create(document=server_example, submitted_by=user)
    withdrawal = submission_withdraw(submission=run, reason="wrong driver recorded", actor=user)
    assert Submission.objects.get(pk=run.pk).withdrawal == withdrawal
    assert AuditEntry.objects.filter(kind="run.withdrawn", subject=run.digest).exists()


def document_variant(document: dict, i: int) -> dict:
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
        return submission_create(document=document_variant(server_example, i), submitted_by=user)

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


def _documents_for_copy(server_example, offline_example, training_example, n):
    """n distinct documents over the three examples (training and inference, nulls and floats included)."""
    out = []
    for i in range(n):
        doc = copy.deepcopy((server_example, offline_example, training_example)[i % 3])
        doc["system"]["name"] = f"lab-copy-{i}"
        out.append(doc)
    return out


def _stored_rows() -> list[dict]:
    """Every column of every run (generated ones included) but the id, by digest."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_jsonb(s) - 'id' FROM registry_submission s ORDER BY digest")
        return [row[0] for row in cursor.fetchall()]


class _Undo(Exception):
    pass


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_batch_stored_with_copy_reads_back_as_bulk_create_stores_it(
    user, server_example, offline_example, training_example, monkeypatch
):
    """registry/models/copy.py: the bulk path's COPY must store exactly what bulk_create stores, every column."""
    from datetime import UTC, datetime

    from django.test.utils import CaptureQueriesContext

    import registry.models.copy as copy_module
    import registry.services.submissions as submissions

    fixed = datetime(2026, 11, 24, 23, 59, 58, 123456, tzinfo=UTC)  # submitted_at compared too
    monkeypatch.setattr(submissions.timezone, "now", lambda: fixed)
    documents = _documents_for_copy(server_example, offline_example, training_example, copy_module.COPY_FROM + 2)
    stored, statements = {}, {}
    for path, copy_from in (("copy", copy_module.COPY_FROM), ("bulk_create", 10**9)):
        monkeypatch.setattr(copy_module, "COPY_FROM", copy_from)
        with pytest.raises(_Undo), transaction.atomic():  # both paths start from the same empty table
            with CaptureQueriesContext(connection) as queries:
                outcomes = submissions.submission_create_batch(documents=documents, submitted_by=user)
            assert [o.status for o in outcomes] == ["stored"] * len(documents)
            assert all(o.run.pk == Submission.objects.get(digest=o.run.digest).pk for o in outcomes)
            statements[path] = [
                q["sql"].split("(")[0].strip()
                for q in queries.captured_queries
                if "registry_submission" in q["sql"].split("(")[0]
            ]
            stored[path] = _stored_rows()
            raise _Undo
    assert 'COPY "registry_submission"' in statements["copy"]  # each pass took the path it is named after
    assert not [s for s in statements["copy"] if s.startswith("INSERT")]
    assert 'INSERT INTO "registry_submission"' in statements["bulk_create"]
    assert len(stored["copy"]) == len(documents)
    assert stored["copy"] == stored["bulk_create"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_chunk_whose_copy_loses_a_race_is_stored_one_document_at_a_time(
    user, server_example, offline_example, training_example, monkeypatch
):
    """Another writer commits one of the chunk's documents after the chunk looked for them and before its COPY:
    the COPY fails on the digest, the chunk is stored document by document, and that one is "known"."""
    import registry.models.copy as copy_module
    import registry.services.runs as runs
    import registry.services.submissions as submissions

    documents = _documents_for_copy(server_example, offline_example, training_example, copy_module.COPY_FROM)
    real_create_many, calls = runs.create_many, []

    def other_writer_first(model, objs):
        if threading.current_thread() is not main:
            return real_create_many(model, objs)  # the other writer's own insert
        calls.append(len(objs))
        if len(calls) == 1:  # the chunk's COPY: another connection stores its fifth document and commits, just before
            with ThreadPoolExecutor(1) as pool:
                pool.submit(in_thread(lambda: submission_create(document=documents[4], submitted_by=user))).result()
        return real_create_many(model, objs)

    main = threading.current_thread()

    monkeypatch.setattr(runs, "create_many", other_writer_first)
    outcomes = submissions.submission_create_batch(documents=documents, submitted_by=user)
    assert calls[0] == len(documents) >= copy_module.COPY_FROM  # the COPY that lost, then one run at a time
    assert calls[1:] == [1] * (len(documents) - 1)
    assert [o.status for o in outcomes] == ["stored"] * 4 + ["known"] + ["stored"] * (len(documents) - 5)
    assert Submission.objects.count() == len(documents)
    assert AuditEntry.objects.filter(kind="run.submitted").count() == len(documents)


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_copy_that_meets_a_stored_digest_raises_integrity_error_and_stores_nothing(
    user, server_example, offline_example, training_example
):
    """The batch falls back to one document at a time on IntegrityError (another writer won a race): COPY
    must raise Django's IntegrityError, as an INSERT does, and leave none of its rows."""
    from django.db import IntegrityError

    from registry.models.copy import COPY_FROM, create_many
    from registry.services.submissions import submission_create

    documents = _documents_for_copy(server_example, offline_example, training_example, COPY_FROM)
    first, _ = submission_create(document=documents[-1], submitted_by=user)
    runs = [
        Submission(
            **{f.attname: getattr(first, f.attname) for f in Submission._meta.concrete_fields if not f.primary_key}
        )
        for _ in range(COPY_FROM)
    ]
    for i, run in enumerate(runs[:-1]):
        run.digest = f"sha256:{i:064d}"
    with pytest.raises(IntegrityError), transaction.atomic():
        create_many(Submission, runs)
    assert list(Submission.objects.values_list("pk", flat=True)) == [first.pk]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_batches_that_deadlock_on_the_same_documents_both_finish(
    user, server_example, offline_example, training_example, monkeypatch
):
    """Batches [A, B] and [B, A] in two transactions: each inserts its first run, then waits on the other's
    uncommitted second one. PostgreSQL ends the deadlock by rolling one back; that batch is then stored one
    document at a time and finds both known (instead of failing with OperationalError)."""
    import registry.services.runs as runs
    import registry.services.submissions as submissions

    a, b = _documents_for_copy(server_example, offline_example, training_example, 2)
    real_create_many, both_hold_their_first = runs.create_many, threading.Barrier(2)

    def first_row_then_wait(model, objs):
        if model is not Submission or len(objs) != 2:
            return real_create_many(model, objs)
        first = real_create_many(model, objs[:1])
        both_hold_their_first.wait(timeout=30)  # as if each multi-row INSERT had reached its second row
        return first + real_create_many(model, objs[1:])

    monkeypatch.setattr(runs, "create_many", first_row_then_wait)

    @in_thread
    def batch(documents):
        return [o.status for o in submissions.submission_create_batch(documents=documents, submitted_by=user)]

    with ThreadPoolExecutor(2) as pool:
        ab, ba = pool.map(batch, [[a, b], [b, a]])
    # Each document stored by exactly one batch and known to the other. Usually the batch PostgreSQL rolled back
    # finds both known ([stored, stored] and [known, known]); on a busy host its one-at-a-time retry can deadlock in
    # turn with the rest of the other batch's transaction, which is then stored one at a time too, and each batch
    # stores one document and finds the other known. Either way none fails or is stored twice.
    assert sorted([ab[0], ba[1]]) == sorted([ab[1], ba[0]]) == ["known", "stored"], (ab, ba)
    assert Submission.objects.count() == 2
    assert AuditEntry.objects.filter(kind="run.submitted").count() == 2
