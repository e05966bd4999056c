"""`benchreg audit verify`: a clean log passes; a rewrite below the ORM, as a superuser could do, is named."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from protocol.transparency import leaf_hash
from registry.choices import AuditKind
from registry.models import AuditEntry
from registry.services.submissions import submission_create, submission_withdraw
from tests.registry.services.test_submissions import document_variant

pytestmark = pytest.mark.django_db


def _log(user, document) -> list:
    """Four runs (the third withdrawn): entries #0..#4."""
    runs = [submission_create(document=document_variant(document, i), submitted_by=user)[0] for i in range(4)]
    submission_withdraw(submission=runs[2], reason="driver not recorded", actor=user)
    return runs


def _export(tmp_path: Path) -> Path:
    out = tmp_path / "kept" / "checkpoint.note"
    out.parent.mkdir()
    call_command("audit", "export", "--out", str(out), stdout=io.StringIO())
    return out


def _verify(*args: str) -> tuple[bool, str]:
    stdout = io.StringIO()
    try:
        call_command("audit", "verify", *args, stdout=stdout)
    except CommandError as exc:
        return False, f"{stdout.getvalue()}\n{exc}"
    return True, stdout.getvalue()


def _as_superuser(sql: str, params: list | None = None) -> None:
    """Rewrite rows below the ORM. On PostgreSQL that takes a superuser turning the append-only triggers off
    (session_replication_role = replica); the test transaction's rollback turns them back on."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = replica")
        cursor.execute(sql, params or [])
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = DEFAULT")


def test_an_untouched_log_verifies_against_its_checkpoints_and_a_kept_file(user, server_example, tmp_path):
    _log(user, server_example)
    kept = _export(tmp_path)
    submission_create(document=document_variant(server_example, 9), submitted_by=user)  # the log grows after the export
    call_command("audit", "checkpoint", stdout=io.StringIO())
    ok, out = _verify("--checkpoint", str(kept))
    assert ok, out
    assert "6 entries" in out and "2 stored checkpoints, 1 checkpoint files, 5 runs, 1 withdrawals" in out
    assert "OK" in out


@pytest.mark.postgres
def test_tampering_with_a_run_and_an_audit_row_is_named_and_breaks_the_exported_checkpoint(
    user, server_example, tmp_path
):
    runs = _log(user, server_example)
    kept = _export(tmp_path)
    edited_run, edited_seq = runs[1], 3
    _as_superuser(
        "UPDATE registry_submission SET canonical = replace(canonical, 'lab-node-001', 'lab-node-999') WHERE id = %s",
        [edited_run.pk],
    )
    _as_superuser(
        "UPDATE registry_auditentry SET entry = replace(entry, '\"declared\"', '\"imported\"') WHERE seq = %s",
        [edited_seq],
    )
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE registry_auditentry SET actor = 'x'")  # the triggers are back on

    ok, out = _verify("--checkpoint", str(kept))
    assert not ok
    assert f"first mismatching entry: #{edited_seq}: the entry text does not hash to the stored leaf hash" in out
    assert f"first mismatching run: {edited_run.pk}: the stored text hashes to" in out
    assert f"file {kept}: no longer consistent with the log: the first 5 entries now have root" in out
    assert f"first mismatching entry #{edited_seq}; first mismatching run {edited_run.pk}" in out


def test_a_consistent_rewrite_of_entry_and_leaf_hash_still_breaks_every_checkpoint(user, server_example, tmp_path):
    _log(user, server_example)
    kept = _export(tmp_path)
    row = AuditEntry.objects.get(seq=1)
    forged = row.entry.replace('"declared"', '"imported"')
    assert forged != row.entry
    from protocol.transparency import leaf_hash

    _as_superuser(
        "UPDATE registry_auditentry SET entry = %s, leaf_hash = %s, actor = 'mallory' WHERE seq = 1",
        [forged, leaf_hash(forged.encode()).hex()],
    )
    ok, out = _verify("--checkpoint", str(kept))
    assert not ok
    assert "no longer consistent with the log: the first 5 entries" in out
    assert "(an entry in #0..#4 was changed)" in out  # the stored checkpoint brackets it


def test_a_deleted_audit_row_is_a_gap_named_by_its_number(user, server_example):
    _log(user, server_example)
    call_command("audit", "checkpoint", stdout=io.StringIO())
    _as_superuser("DELETE FROM registry_auditentry WHERE seq = 2")
    ok, out = _verify()
    assert not ok
    assert "first mismatching entry: #2: missing: entry #2 is not stored" in out
    assert "no run.submitted audit entry records its digest" in out  # the run it recorded lost its entry


def test_an_edited_index_column_or_withdrawal_reason_is_caught(user, server_example):
    runs = _log(user, server_example)
    _as_superuser("UPDATE registry_submission SET headline_value = headline_value * 2 WHERE id = %s", [runs[0].pk])
    _as_superuser("UPDATE registry_withdrawal SET reason = 'nothing to see' WHERE submission_id = %s", [runs[2].pk])
    ok, out = _verify()
    assert not ok
    assert f"run {runs[0].pk}: column headline_value is {runs[0].headline_value * 2!r}, the canonical text says" in out
    assert f"run {runs[2].pk}: its withdrawal reason differs from audit entry #4" in out


def test_an_edited_software_summary_is_caught(user, server_example):
    runs = _log(user, server_example)
    _as_superuser("UPDATE registry_submission SET software_summary = 'torch 9.9.9' WHERE id = %s", [runs[1].pk])
    ok, out = _verify()
    assert not ok
    assert f"run {runs[1].pk}: column software_summary is 'torch 9.9.9', the canonical text says" in out


def test_a_checkpoint_file_signed_by_another_key_or_for_a_longer_log_is_refused(
    user, server_example, tmp_path, settings
):
    _log(user, server_example)
    kept = _export(tmp_path)
    settings.DATA_DIR = tmp_path / "other"  # a fresh key: the kept note is not signed by it
    ok, out = _verify("--checkpoint", str(kept))
    assert not ok and f"file {kept}: the signature does not verify with the trusted keys" in out


def test_a_run_without_its_entry_is_caught(user, server_example):
    runs = _log(user, server_example)
    _as_superuser("UPDATE registry_auditentry SET kind = %s WHERE seq = 0", [AuditKind.IMPORT_COMPLETED.value])
    ok, out = _verify()
    assert not ok
    assert "entry #0: the entry text disagrees with its columns: kind" in out
    assert f"run {runs[0].pk}: no run.submitted audit entry records its digest" in out


def test_show_prints_the_head_and_the_verifier_key(user, server_example):
    _log(user, server_example)
    stdout = io.StringIO()
    call_command("audit", "show", stdout=stdout)
    assert "entries:      5" in stdout.getvalue() and "verifier key: benchreg.test/audit+" in stdout.getvalue()


def test_an_edited_entry_time_is_caught(user, server_example):
    from datetime import UTC, datetime

    _log(user, server_example)
    _as_superuser("UPDATE registry_auditentry SET created_at = %s WHERE seq = 1", [datetime(2020, 1, 1, tzinfo=UTC)])
    ok, out = _verify()
    assert not ok and "first mismatching entry: #1: the entry text disagrees with its columns: time" in out


def test_the_benchreg_command_dispatches_audit_to_the_management_command():
    from registry.cli import DJANGO_COMMANDS

    assert DJANGO_COMMANDS["audit"] == "audit"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_verifying_stream_gives_every_row_in_order_and_ends_its_fetcher_when_left_early() -> None:
    """The rows come from a fetching thread (registry/audit/verify/entries.py, stream): across chunk boundaries they
    keep their order, and a caller that stops early leaves no thread behind holding the cursor."""
    import threading

    from registry.audit.verify import entries
    from registry.services.audit import audit_append

    for i in range(25):
        audit_append(kind="bench.append", actor="test", subject=f"s:{i}", payload={"i": i})
    query = AuditEntry.objects.order_by("seq").values_list("seq", flat=False)
    original = entries.CHUNK
    entries.CHUNK = 4  # several chunks, the last one short
    try:
        seqs = [row[0] for row in entries.stream(query)]
        assert seqs == sorted(seqs) and len(seqs) == AuditEntry.objects.count() >= 25
        rows = entries.stream(query)
        assert next(rows)[0] == seqs[0]
        rows.close()  # the caller stops after one row
    finally:
        entries.CHUNK = original
    assert not [t for t in threading.enumerate() if t.name == "audit-verify-fetch"]


def test_an_edited_sweep_id_is_caught_like_every_declared_summary_column(user, server_example):
    """audit verify recomputes every column protocol.summary.COLUMNS declares, the sweep id included: a run moved
    into another sweep's page (or out of its own) below the ORM is named."""
    runs = _log(user, server_example)
    _as_superuser("UPDATE registry_submission SET sweep_id = 'someone-elses-sweep' WHERE id = %s", [runs[1].pk])
    ok, out = _verify()
    assert not ok
    assert f"run {runs[1].pk}: column sweep_id is 'someone-elses-sweep', the canonical text says ''" in out


_WHO_DIFFERS = "audit entry #1's commitment to who did it does not match the stored actor, actor_user, actor_token"


@pytest.mark.parametrize(
    ("assignment", "params", "words"),
    [
        ("subject = %s", ["sha256:" + "0" * 64], "the entry text disagrees with its columns: subject"),
        ("format = 2", [], "the entry text disagrees with its columns: v"),
        ("format = 1", [], "the entry text disagrees with its columns: actor, v"),
        ("actor_user = NULL", [], _WHO_DIFFERS),
        ("actor_token = 4242", [], _WHO_DIFFERS),
        ("leaf_hash = upper(leaf_hash)", [], "the entry text does not hash to the stored leaf hash"),
        ("entry = %s, leaf_hash = %s", ["[1]", leaf_hash(b"[1]").hex()], "the entry text is not a JSON object"),
        ("entry = %s, leaf_hash = %s", ["{seq: 1}", leaf_hash(b"{seq: 1}").hex()], "the entry text is not JSON"),
    ],
)
def test_each_rewritten_entry_column_is_named_by_its_entry(user, server_example, assignment, params, words):
    """Every check of an entry (the quick one most entries pass, and the careful one that says what differs)
    names a rewrite of any one of its columns: the text's fields, the commitment, the leaf hash's exact spelling."""
    _log(user, server_example)
    _as_superuser(f"UPDATE registry_auditentry SET {assignment} WHERE seq = 1", params)  # noqa: S608 (fixed text)
    ok, out = _verify()
    assert not ok
    assert f"first mismatching entry: #1: {words}" in out, out
