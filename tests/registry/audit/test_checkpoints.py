"""Signing checkpoints: the key, the service, the periodic task, and the tree the proofs come from."""

from __future__ import annotations

import os
import stat
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from django.conf import settings as django_settings
from django.db import connection, transaction

from protocol.signed_note import open_note, signer_key
from protocol.transparency import MerkleTree, leaf_hash, root_of_leaves
from registry.audit import keys
from registry.choices import AuditKind, CheckpointReason
from registry.exceptions import ImmutableRecord
from registry.models import AuditEntry, Checkpoint
from registry.selectors import audit as selectors
from registry.services.audit import audit_append, checkpoint_current, checkpoint_sign
from registry.tasks.audit import sign_checkpoint


def _append(count: int) -> None:
    for i in range(count):
        audit_append(kind=AuditKind.JOB_STATE, actor="test", subject=f"job:{i}", payload={"i": i})


def _root_from_table() -> bytes:
    return root_of_leaves(
        leaf_hash(e.encode()) for e in AuditEntry.objects.order_by("seq").values_list("entry", flat=True)
    )


# -- keys -----------------------------------------------------------------------------------------------------------


def test_the_key_is_generated_once_in_the_data_directory_readable_only_by_its_owner(tmp_path):
    key = keys.checkpoint_key()
    path = tmp_path / "keys" / "checkpoint.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith("PRIVATE+KEY+benchreg.test/audit+")
    keys.load_key_file.cache_clear()
    assert keys.checkpoint_key().vkey == key.vkey


def test_processes_racing_to_create_the_key_all_end_up_with_the_same_one(tmp_path):
    path = tmp_path / "race" / "checkpoint.key"
    barrier = threading.Barrier(8)

    def create(_: int) -> str:
        barrier.wait()
        return keys.generated(path, "race/audit").read_text()

    with ThreadPoolExecutor(8) as pool:
        assert len(set(pool.map(create, range(8)))) == 1
    assert os.listdir(path.parent) == ["checkpoint.key"]  # no temporary file left behind


def test_the_key_can_be_supplied_as_a_signer_key_string_or_a_pem_file(settings, tmp_path):
    private = Ed25519PrivateKey.generate()
    settings.BENCHREG_CHECKPOINT_KEY = signer_key("ops.example/audit", private)
    assert keys.checkpoint_key().name == "ops.example/audit"
    pem = tmp_path / "key.pem"
    pem.write_bytes(private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    pem.chmod(0o600)
    settings.BENCHREG_CHECKPOINT_KEY = str(pem)
    key = keys.checkpoint_key()
    assert key.name == "benchreg.test/audit"  # a PEM key carries no name: the log origin is used
    assert key.public_key_b64 == keys.CheckpointKey("x", keys.parse_signer_key(signer_key("x", private))).public_key_b64


def test_an_unusable_key_setting_fails_loudly(settings, tmp_path):
    from django.core.exceptions import ImproperlyConfigured

    (tmp_path / "not-a-key").write_text("hello")
    (tmp_path / "not-a-key").chmod(0o600)
    for value in ("PRIVATE+KEY+x+00000000+AAAA", str(tmp_path / "not-a-key"), str(tmp_path / "missing")):
        settings.BENCHREG_CHECKPOINT_KEY = value
        with pytest.raises(ImproperlyConfigured):
            keys.checkpoint_key()


def test_a_key_file_the_group_or_others_may_read_is_refused(settings, tmp_path):
    from django.core.exceptions import ImproperlyConfigured

    outside = tmp_path / "secrets" / "checkpoint.key"  # outside the data directory, e.g. a mounted secret
    outside.parent.mkdir()
    outside.write_text(signer_key("ops.example/audit", Ed25519PrivateKey.generate()) + "\n")
    for mode in (0o644, 0o640, 0o604, 0o660):
        outside.chmod(mode)
        settings.BENCHREG_CHECKPOINT_KEY = str(outside)
        with pytest.raises(ImproperlyConfigured, match="readable or writable by group or others"):
            keys.checkpoint_key()
    outside.chmod(0o400)
    assert keys.checkpoint_key().name == "ops.example/audit"


# -- signing --------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_checkpoint_signs_the_root_of_the_whole_log():
    _append(7)
    checkpoint = checkpoint_sign(reason=CheckpointReason.MANUAL)
    note, _ = open_note(checkpoint.note.encode(), [keys.checkpoint_key().vkey])
    assert (note.origin, note.size, note.root_hash) == ("benchreg.test/audit", 7, _root_from_table())
    assert (checkpoint.size, checkpoint.root_hash) == (7, note.root_hash.hex())


@pytest.mark.django_db
def test_an_unchanged_log_is_not_signed_again_except_for_a_report():
    _append(2)
    first = checkpoint_sign(reason=CheckpointReason.PERIODIC)
    assert checkpoint_sign(reason=CheckpointReason.PERIODIC) == first
    assert checkpoint_sign(reason=CheckpointReason.MANUAL) == first
    report = checkpoint_sign(reason=CheckpointReason.REPORT)
    assert report != first and report.size == first.size and report.reason == "report"
    _append(1)
    assert checkpoint_sign(reason=CheckpointReason.PERIODIC).size == 3


@pytest.mark.django_db
def test_a_report_checkpoint_inside_the_reports_transaction_covers_the_reports_entry():
    _append(3)
    checkpoint_sign(reason=CheckpointReason.PERIODIC)
    with transaction.atomic():
        audit_append(kind=AuditKind.REPORT_ISSUED, actor="test", subject="report:1")
        checkpoint = checkpoint_sign(reason=CheckpointReason.REPORT)
    assert checkpoint.size == 4 and checkpoint.root_hash == _root_from_table().hex()


@pytest.mark.django_db
def test_the_periodic_task_signs_the_head_and_is_scheduled_by_beat():
    _append(3)
    checkpoint_id = sign_checkpoint.delay().get()
    assert Checkpoint.objects.get(pk=checkpoint_id).reason == "periodic"
    assert sign_checkpoint.delay().get() == checkpoint_id  # nothing new: the same checkpoint
    entry = django_settings.CELERY_BEAT_SCHEDULE["audit-checkpoint"]
    assert entry["task"] == sign_checkpoint.name == "registry.tasks.audit.sign_checkpoint"
    assert entry["schedule"] == django_settings.BENCHREG_CHECKPOINT_INTERVAL_S


@pytest.mark.django_db
def test_the_published_checkpoint_follows_the_log_at_most_once_an_interval(settings):
    _append(1)
    first = checkpoint_current()
    _append(1)
    assert checkpoint_current() == first  # newer than the interval: still the published one
    settings.BENCHREG_CHECKPOINT_INTERVAL_S = 0
    assert checkpoint_current().size == 2


@pytest.mark.django_db
def test_checkpoints_cannot_be_changed_or_deleted():
    checkpoint = checkpoint_sign(reason=CheckpointReason.MANUAL)
    with pytest.raises(ImmutableRecord):
        checkpoint.delete()
    with pytest.raises(ImmutableRecord):
        Checkpoint.objects.update(size=99)


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE registry_checkpoint SET size = 99",
        "DELETE FROM registry_checkpoint",
        "TRUNCATE registry_checkpoint CASCADE",
    ],
)
def test_postgres_triggers_refuse_rewriting_checkpoints(statement):
    checkpoint_sign(reason=CheckpointReason.MANUAL)
    with pytest.raises(Exception, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement)
    assert Checkpoint.objects.count() == 1


# -- the shared tree --------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_shared_tree_is_extended_between_requests_and_rebuilt_for_another_log(django_assert_max_num_queries):
    _append(5)
    assert selectors.audit_root(size=5) == _root_from_table()
    _append(3)
    with django_assert_max_num_queries(2):  # the head with the last cached leaf, then the three new leaf hashes
        root = selectors.audit_root(size=8)
    assert root == _root_from_table()
    assert selectors.shared_tree.tree.size == 8
    with connection.cursor() as cursor:  # a different log under the same connection (as a test flush leaves)
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = replica")
        cursor.execute("DELETE FROM registry_auditentry")
        cursor.execute("UPDATE registry_audithead SET size = 0")
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = DEFAULT")
    _append(8)
    assert selectors.audit_root(size=8) == _root_from_table()
    proof = selectors.audit_inclusion(entry=6, size=8)
    assert proof.proof == MerkleTree(
        [bytes.fromhex(h) for h in AuditEntry.objects.order_by("seq").values_list("leaf_hash", flat=True)]
    ).inclusion_proof(6)


@pytest.mark.django_db
def test_rows_a_transaction_may_still_roll_back_are_not_cached(monkeypatch):
    monkeypatch.setattr(selectors.shared_tree, "tree", MerkleTree())
    _append(2)
    assert selectors.audit_root(size=2) == _root_from_table()  # pytest-django runs this inside a transaction
    assert selectors.shared_tree.tree.size == 0


@pytest.mark.django_db
def test_a_gap_in_the_table_stops_proofs_rather_than_serving_wrong_ones():
    _append(4)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = replica")
        cursor.execute("DELETE FROM registry_auditentry WHERE seq = 1")
    with pytest.raises(selectors.LogInconsistent):
        selectors.audit_inclusion(entry=3, size=4)
