"""A database superuser rewrites stored rows below the ORM; `benchreg audit verify` fails naming the run (or entry)
and the column.

On PostgreSQL the runs, withdrawals and audit tables refuse UPDATE by trigger, even for the application's own user;
a superuser gets past them by `SET session_replication_role = replica` or `ALTER TABLE ... DISABLE TRIGGER`, and
both ways are exercised. On SQLite (the embedded default, no triggers) the same rewrites are plain UPDATEs.
"""

from __future__ import annotations

import copy
import io
import json
import math
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from protocol import canonicalize, digest_of
from registry.choices import Trust
from registry.models import AuditEntry, Submission
from registry.selectors.audit import audit_seq_of
from registry.services.submissions import submission_create, submission_withdraw
from registry.services.tokens import token_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keys_in_tmp(settings: Any, tmp_path: Path) -> None:
    """The checkpoint and commitment keys are generated in the test's own data directory."""
    settings.DATA_DIR = tmp_path
    settings.BENCHREG_CHECKPOINT_KEY = ""
    settings.BENCHREG_AUDIT_COMMITMENT_KEY = ""


def _document(base: dict, i: int, *, origin: bool = False) -> dict:
    doc = copy.deepcopy(base)
    doc["system"]["name"] = f"lab-node-{i:03d}"
    if origin:
        doc["provenance"]["origin"] = {
            "kind": "other",
            "round": "v5.1",
            "division": "closed",
            "category": "datacenter",
            "availability": "available",
        }
    return doc


@pytest.fixture
def runs(user: Any, server_example: dict) -> list[Submission]:
    """Three runs: one plain, one stored through an API token with provenance.origin, one withdrawn."""
    token = token_create(user=user, name="lab script", scopes="submit,read")[0]
    stored = [
        submission_create(document=_document(server_example, 0), submitted_by=user)[0],
        submission_create(document=_document(server_example, 1, origin=True), submitted_by=user, token=token)[0],
        submission_create(document=_document(server_example, 2), submitted_by=user)[0],
    ]
    submission_withdraw(submission=stored[2], reason="driver not recorded", actor=user)
    call_command("audit", "checkpoint", stdout=io.StringIO())
    return stored


@pytest.fixture
def mallory(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("mallory", password="pw-for-tests-only")


def _verify() -> tuple[bool, str]:
    stdout = io.StringIO()
    try:
        call_command("audit", "verify", stdout=stdout)
    except CommandError as exc:
        return False, f"{stdout.getvalue()}\n{exc}"
    return True, stdout.getvalue()


def _as_superuser(table: str, sql: str, params: list | None = None, *, how: str = "replica") -> None:
    """Rewrite rows as a database superuser would. On PostgreSQL the append-only trigger is switched off first
    (`replica`: session_replication_role; `disable`: ALTER TABLE ... DISABLE TRIGGER USER) and on again after."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            if how == "disable":  # ALTER TABLE waits for no deferred check of the test's own transaction
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(
                "SET session_replication_role = replica"
                if how == "replica"
                else f"ALTER TABLE {table} DISABLE TRIGGER USER"
            )
        cursor.execute(sql, params or [])
        if connection.vendor == "postgresql":
            cursor.execute(
                "SET session_replication_role = DEFAULT"
                if how == "replica"
                else f"ALTER TABLE {table} ENABLE TRIGGER USER"
            )


def _run_rewrites(runs: list[Submission], mallory: Any) -> dict[str, tuple[int, str, list]]:
    """column -> (run id, SQL, params) rewriting that column of one run."""
    plain, with_origin = runs[0], runs[1]
    update = "UPDATE registry_submission SET {column} = %s WHERE id = %s"
    cases: dict[str, tuple[int, Any]] = {
        "trust": (plain.pk, Trust.VOUCHED.value),
        "submitted_at": (plain.pk, plain.submitted_at - timedelta(days=30)),
        "comparability_key": (plain.pk, "sha256:" + "f" * 64),
        "comparability_key_software": (plain.pk, "sha256:" + "e" * 64),
        "comparability_key_precision": (plain.pk, "sha256:" + "d" * 64),
        "comparability_key_iso_quality": (plain.pk, "sha256:" + "c" * 64),
        "origin_round": (with_origin.pk, "v9.9"),
        "origin_division": (with_origin.pk, "open"),
        "origin_category": (with_origin.pk, "edge"),
        "origin_availability": (with_origin.pk, "preview"),
        # a figure per accelerator inflated, or a run passed off as MLPerf's (its label follows origin_kind)
        "per_accelerator_output_tokens": (plain.pk, 1e9),
        "origin_kind": (with_origin.pk, "mlperf-training"),
        "submitter": (plain.pk, "Mallory Labs"),
        "submitted_by_name": (plain.pk, "mallory"),
        "submitted_by": (plain.pk, mallory.pk),
        "token": (with_origin.pk, None),
    }
    sql_column = {"submitted_by": "submitted_by_id", "token": "token_id"}
    return {
        column: (pk, update.format(column=sql_column.get(column, column)), [value, pk])
        for column, (pk, value) in cases.items()
    }


COLUMNS = [
    "trust",
    "submitted_at",
    "comparability_key",
    "comparability_key_software",
    "comparability_key_precision",
    "comparability_key_iso_quality",
    "origin_round",
    "origin_division",
    "origin_category",
    "origin_availability",
    "per_accelerator_output_tokens",
    "origin_kind",
    "submitter",
    "submitted_by_name",
    "submitted_by",
    "token",
]


def _assert_named(out: str, run: int, column: str) -> None:
    assert f"run {run}: column {column} is" in out, out


@pytest.mark.parametrize("column", COLUMNS)
def test_a_rewritten_run_column_is_named(runs, mallory, column):
    pk, sql, params = _run_rewrites(runs, mallory)[column]
    _as_superuser("registry_submission", sql, params)
    ok, out = _verify()
    assert not ok
    _assert_named(out, pk, column)
    assert f"first mismatching run {pk}" in out


@pytest.mark.postgres
@pytest.mark.parametrize("how", ["replica", "disable"])
@pytest.mark.parametrize("column", COLUMNS)
def test_postgres_superuser_rewrites_past_the_trigger_are_named(runs, mallory, column, how):
    pk, sql, params = _run_rewrites(runs, mallory)[column]
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)  # the application's path is refused by the trigger
    _as_superuser("registry_submission", sql, params, how=how)
    assert Submission.objects.filter(pk=pk).count() == 1
    ok, out = _verify()
    assert not ok
    _assert_named(out, pk, column)


@pytest.mark.parametrize("how", ["replica", "disable"])
def test_a_rewritten_audit_actor_is_named_by_its_entry(runs, how):
    seq = audit_seq_of(kind="run.submitted", subject=runs[0].digest)
    _as_superuser(
        "registry_auditentry", "UPDATE registry_auditentry SET actor = 'mallory' WHERE seq = %s", [seq], how=how
    )
    ok, out = _verify()
    assert not ok
    assert f"entry #{seq}: audit entry #{seq}'s commitment to who did it does not match the stored actor" in out, out
    assert f"first mismatching entry #{seq}" in out


def test_a_rewrite_of_run_and_entry_to_agree_is_still_named(runs, mallory):
    """Run and entry both say 'mallory' afterwards: the commitment inside the hashed text still names the real one."""
    seq = audit_seq_of(kind="run.submitted", subject=runs[0].digest)
    _as_superuser(
        "registry_submission",
        "UPDATE registry_submission SET submitted_by_name = 'mallory', submitted_by_id = %s WHERE id = %s",
        [mallory.pk, runs[0].pk],
    )
    _as_superuser(
        "registry_auditentry",
        "UPDATE registry_auditentry SET actor = 'mallory', actor_user = %s WHERE seq = %s",
        [mallory.pk, seq],
    )
    ok, out = _verify()
    assert not ok
    _assert_named(out, runs[0].pk, "submitted_by_name")
    _assert_named(out, runs[0].pk, "submitted_by")
    assert f"entry #{seq}: audit entry #{seq}'s commitment" in out


def test_a_rewritten_audit_actor_of_another_kind_is_named(runs, user):
    token_create(user=user, name="second", scopes="read")
    entry = AuditEntry.objects.filter(kind="token.created").order_by("-seq").first()
    _as_superuser(
        "registry_auditentry", "UPDATE registry_auditentry SET actor = 'someone-else' WHERE seq = %s", [entry.seq]
    )
    ok, out = _verify()
    assert not ok and f"entry #{entry.seq}: audit entry #{entry.seq}'s commitment" in out, out


@pytest.mark.parametrize(
    ("column", "sql_column"),
    [
        ("withdrawal.withdrawn_by_name", "withdrawn_by_name"),
        ("withdrawal.withdrawn_by", "withdrawn_by_id"),
        ("withdrawal.withdrawn_at", "withdrawn_at"),
    ],
)
def test_a_rewritten_withdrawal_is_named(runs, mallory, column, sql_column):
    withdrawn = runs[2]
    value = {
        "withdrawn_by_name": "mallory",
        "withdrawn_by_id": mallory.pk,
        "withdrawn_at": withdrawn.submitted_at + timedelta(days=3),
    }[sql_column]
    _as_superuser(
        "registry_withdrawal",
        f"UPDATE registry_withdrawal SET {sql_column} = %s "  # noqa: S608 (fixed names)
        "WHERE submission_id = %s",
        [value, withdrawn.pk],
    )
    ok, out = _verify()
    assert not ok
    _assert_named(out, withdrawn.pk, column)


def test_a_rewritten_document_with_a_matching_digest_loses_its_entry(runs):
    """Text and digest rewritten together (so the text hashes to the digest): no logged entry has that digest."""
    run = Submission.objects.get(pk=runs[0].pk)
    forged = copy.deepcopy(run.document)
    forged["system"]["name"] = "lab-node-999"
    text = canonicalize(forged).decode()
    _as_superuser(
        "registry_submission",
        "UPDATE registry_submission SET canonical = %s, digest = %s, system_name = %s WHERE id = %s",
        [text, digest_of(text.encode()), "lab-node-999", run.pk],
    )
    ok, out = _verify()
    assert not ok
    assert f"run {run.pk}: column document differs from the canonical text" in out
    assert f"run {run.pk}: no run.submitted audit entry records its digest" in out
    assert f"records run {run.digest}, and no stored run has that digest" in out


def _rewrite_document(pk: int, text: str) -> None:
    """The run's JSON document column set to `text`, as a superuser would."""
    if connection.vendor == "postgresql":
        sql = "UPDATE registry_submission SET document = %s::jsonb WHERE id = %s"
    else:
        sql = "UPDATE registry_submission SET document = %s WHERE id = %s"
    _as_superuser("registry_submission", sql, [text, pk])


def _one_ulp_up(doc: dict) -> None:
    doc["metrics"]["throughput"]["value"] = math.nextafter(doc["metrics"]["throughput"]["value"], math.inf)


def _boolean_as_number(doc: dict) -> None:
    doc["conditions"]["steady_state"]["reached"] = 1


def _field_added(doc: dict) -> None:
    doc["conditions"]["note"] = "added later"


def _string_changed(doc: dict) -> None:
    doc["system"]["accelerators"][0]["model"] += " "


@pytest.mark.parametrize("rewrite", [_one_ulp_up, _boolean_as_number, _field_added, _string_changed])
def test_a_rewritten_document_column_alone_is_named(runs, rewrite):
    """The JSON document column rewritten, its canonical text and digest left as they were: a number one ulp off,
    true stored as 1, a field added or a character appended differ from what the text parses to."""
    run = Submission.objects.get(pk=runs[0].pk)
    forged = copy.deepcopy(run.document)
    rewrite(forged)
    _rewrite_document(run.pk, json.dumps(forged))
    ok, out = _verify()
    assert not ok
    assert f"run {run.pk}: column document differs from the canonical text" in out, out


@pytest.mark.parametrize("spelling", ["20.000", "2e1", "20"])
def test_a_document_column_spelling_a_number_otherwise_verifies(runs, spelling):
    """The same double spelled otherwise (trailing zeros, an exponent, no fraction: as JSONB or another writer may
    keep it) is the same document."""
    run = Submission.objects.get(pk=runs[0].pk)
    assert run.document["scenario"]["target_qps"] == 20.0
    text, replaced = re.subn(r'"target_qps": 20(\.0)?\b', f'"target_qps": {spelling}', json.dumps(run.document))
    assert replaced == 1, text
    _rewrite_document(run.pk, text)
    ok, out = _verify()
    assert ok, out


def test_an_untouched_registry_verifies(runs):
    ok, out = _verify()
    assert ok, out
    assert "3 runs, 1 withdrawals" in out
