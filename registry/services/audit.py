"""Writing the audit log: appending events (inside the transaction of the change each records) and signing
checkpoints of its Merkle tree."""

from __future__ import annotations

import json
import logging
import threading
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, connections, transaction
from django.db.models import F
from django.utils import timezone

import protocol
from protocol.signed_note import Checkpoint as NoteCheckpoint
from protocol.signed_note import sign_note
from protocol.transparency import leaf_hash
from registry import dispatch
from registry.audit.entries import FORMAT, WHO_WIDEST, actor_commitment, entry_text
from registry.audit.keys import checkpoint_key, commitment_key, log_origin
from registry.choices import CheckpointReason
from registry.exceptions import RegistryError
from registry.models import AuditEntry, AuditHead, AuditQueued, Checkpoint
from registry.selectors.audit import audit_root, checkpoint_latest

log = logging.getLogger(__name__)
COSIGN_TASK = "registry.tasks.audit.request_cosignatures"
INTEGRATE_BATCH = 1000  # entries numbered per sequencer transaction


def audit_append(
    *,
    kind: str,
    actor: str,
    subject: str,
    payload: dict[str, Any] | None = None,
    time: datetime | None = None,
    actor_user: int | None = None,
    actor_token: int | None = None,
) -> AuditQueued:
    """Record one event, inside the transaction of the change it records, and return the queued row.

    `time` is when the change happened (default: now); a run passes its `submitted_at`, so its entry can be
    rebuilt from its public record. Nothing shared is locked: the event is queued (one INSERT) and numbered
    later by `audit_integrate`, which runs when this transaction commits (BENCHREG_AUDIT_SEQUENCING, see
    docs/audit.md). The queued row commits or rolls back with the change, so an entry exists exactly when its
    change commits. The entry's text (registry.audit.entries.entry_text) is public; `actor` (a name) and
    `actor_user`/`actor_token` (the user's and API token's ids, when the change has them) stay columns, and the text
    commits to them (`who`), so `audit verify` sees them rewritten.
    """
    row = AuditQueued.objects.create(
        **_queued(
            kind=kind,
            actor=actor,
            subject=subject,
            payload=payload,
            time=time,
            actor_user=actor_user,
            actor_token=actor_token,
        )
    )
    _sequence_after()
    return row


def audit_append_many(*, events: list[dict[str, Any]]) -> list[AuditQueued]:
    """`audit_append` for many events of one transaction (a batch of runs): one multi-row INSERT. Each event is
    audit_append's keyword arguments."""
    rows = AuditQueued.objects.bulk_create([AuditQueued(**_queued(**event)) for event in events])
    _sequence_after()
    return rows


def _queued(
    *,
    kind: str,
    actor: str,
    subject: str,
    payload: dict[str, Any] | None = None,
    time: datetime | None = None,
    actor_user: int | None = None,
    actor_token: int | None = None,
) -> dict[str, Any]:
    now = time or timezone.now()
    # Built once here only to refuse an entry too large for the log in the change's own transaction, never in
    # the sequencer's (seq and the commitment at their widest, so the real entry is no longer than this one).
    entry_text(seq=10**15, time=now, kind=kind, subject=subject, payload=payload, who=WHO_WIDEST)
    return {
        "queued_at": now,
        "actor": actor,
        "actor_user": actor_user,
        "actor_token": actor_token,
        "kind": kind,
        "subject": subject,
        "payload": protocol.canonicalize(payload or {}).decode(),
    }


def _sequence_after() -> None:
    """Number the queued entries as BENCHREG_AUDIT_SEQUENCING says (docs/audit.md)."""
    mode = settings.BENCHREG_AUDIT_SEQUENCING
    if mode == "inline":
        audit_integrate()  # numbered in the change's own transaction: writers serialise (tests, one-writer setups)
    elif mode in ("commit", "background"):
        hook = _integrate_after_commit if mode == "commit" else _background.wake
        if not any(pending[1] is hook for pending in connection.run_on_commit):
            transaction.on_commit(hook)  # once per transaction, however many events it records


def _integrate_after_commit() -> None:
    """After a change commits: integrate unless another sequencer is at work (it loops until the queue is empty,
    and its next batch starts after this commit, so it takes this entry)."""
    try:
        audit_integrate(wait=False)
    except DatabaseError:
        # The entry is committed in the queue; the next commit, checkpoint or the periodic task integrates it.
        log.exception("audit integration after commit failed; the queued entries stay queued")


class _BackgroundSequencer:
    """BENCHREG_AUDIT_SEQUENCING=background: one thread per process numbers entries after commits, so the
    committing request answers without waiting for the sequencer's transaction. Woken by each commit; it
    integrates until the queue is empty (or another process's sequencer holds the head, which loops the same way).
    Entries left queued when a process exits are taken by the next commit, checkpoint or the periodic task.
    """

    def __init__(self) -> None:
        self.event = threading.Event()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def wake(self) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="audit-sequencer", daemon=True)
                self.thread.start()
        self.event.set()

    def _run(self) -> None:
        while True:
            self.event.wait()
            self.event.clear()
            try:
                audit_integrate(wait=False)
            except Exception:  # the thread must live on; the entries stay queued
                log.exception("background audit integration failed; the queued entries stay queued")
            finally:
                connections.close_all()  # this thread's connection; a fresh one next time


_background = _BackgroundSequencer()


def audit_integrate(*, wait: bool = True, batch_size: int = INTEGRATE_BATCH, limit: int | None = None) -> int:
    """Number queued entries and append them to the log, in batches; returns how many were integrated.

    One sequencer at a time: each batch locks the head row (the only writer of it). With `wait=False` a call
    that finds the head locked returns 0 at once: the sequencer holding it loops until the queue is empty, so it
    takes whatever committed before it looked again. Each batch is one transaction (queued rows deleted, entries
    inserted, head moved), so a sequencer killed mid-batch leaves the batch queued and nothing half-integrated.
    Inside a caller's transaction (a report signing its own entry) the batches are part of it. `limit` caps
    the batches' total (for tests that stop a sequencer between batches).
    """
    if connection.in_atomic_block and not any(hook[1] is _integrate_after_commit for hook in connection.run_on_commit):
        # The caller's transaction holds the head until it commits; a commit skipped meanwhile is taken then.
        transaction.on_commit(_integrate_after_commit)
    done = 0
    while limit is None or done < limit:
        size = batch_size if limit is None else min(batch_size, limit - done)
        count = _integrate_batch(wait=wait, batch_size=size)
        if count is None:  # another sequencer holds the head
            return done
        done += count
        if count == size:
            continue  # a full batch: more may be queued
        if connection.in_atomic_block:
            if count == 0:
                return done  # the caller's transaction has taken all it can see
        elif not AuditQueued.objects.exists():
            # The queue is empty now, after this batch released the head: a commit that found the head locked
            # while the batch ran committed its row before that, so it would be seen here. One plain query instead
            # of another locked batch; a commit after this look finds the head free and integrates itself.
            # Asked after an empty batch too: a batch may read the queue as it was before a commit whose own
            # sequencing attempt found this batch holding the head (_TAKE_BATCH reads at its statement's start).
            return done
    return done


@transaction.atomic
def _integrate_batch(*, wait: bool, batch_size: int) -> int | None:
    if connection.vendor == "postgresql":
        if not wait:
            return _integrate_batch_postgres(batch_size)
        head = AuditHead.objects.select_for_update().filter(id=1).first()  # waits for another sequencer
        if head is None:
            return None
    else:
        # SQLite has no row locks: a write first takes the database's write lock, which serialises sequencers.
        AuditHead.objects.filter(id=1).update(size=F("size"))
        head = AuditHead.objects.get(id=1)
    queued = list(AuditQueued.objects.order_by("id")[:batch_size])
    if not queued:
        return 0
    key = commitment_key()
    entries = [
        _entry(
            seq, row.queued_at, row.actor, row.actor_user, row.actor_token, row.kind, row.subject, row.payload, key=key
        )
        for seq, row in enumerate(queued, start=head.size)
    ]
    AuditEntry.objects.bulk_create(entries)
    AuditQueued.objects.filter(id__in=[row.id for row in queued]).delete()
    AuditHead.objects.filter(id=1).update(size=head.size + len(entries))
    return len(entries)


def _entry(
    seq: int,
    queued_at: datetime,
    actor: str,
    actor_user: int | None,
    actor_token: int | None,
    kind: str,
    subject: str,
    payload: str,
    *,
    key: Any = None,
) -> AuditEntry:
    """The log entry numbered `seq` of a queued row: its public text (committing who did it) and leaf hash."""
    who = actor_commitment(seq=seq, actor=actor, user=actor_user, token=actor_token, key=key)
    text = entry_text(seq=seq, time=queued_at, kind=kind, subject=subject, payload=json.loads(payload), who=who)
    return AuditEntry(
        seq=seq,
        created_at=queued_at,
        actor=actor,
        actor_user=actor_user,
        actor_token=actor_token,
        kind=kind,
        subject=subject,
        entry=text.decode(),
        leaf_hash=leaf_hash(text).hex(),
        format=FORMAT,
    )


# The after-commit sequencer on PostgreSQL, in two statements instead of six (it runs after every
# submission). The first takes the head without waiting and, only if it got it, deletes a batch of queued rows and
# returns them with the head's size; the second inserts their entries and moves the head. Both run in the batch's
# transaction, so a sequencer killed between them leaves everything queued, as before. Not for wait=True callers:
# a statement that waits on the head lock reads the queue as it was before the wait (READ COMMITTED takes the
# snapshot at the statement's start), which would leave committed entries queued for a checkpoint that must see them.
# Even without waiting, the head may be freed between this statement's start and its lock: the batch then misses
# what committed in between, which is why `audit_integrate` looks at the queue again after every short batch.
_TAKE_BATCH = """
WITH head AS (SELECT size FROM registry_audithead WHERE id = 1 FOR UPDATE SKIP LOCKED),
     taken AS (DELETE FROM registry_auditqueued
               WHERE id IN (SELECT id FROM registry_auditqueued WHERE EXISTS (SELECT FROM head) ORDER BY id LIMIT %s)
               RETURNING id, queued_at, actor, actor_user, actor_token, kind, subject, payload)
SELECT head.size, taken.queued_at, taken.actor, taken.actor_user, taken.actor_token, taken.kind, taken.subject,
       taken.payload
FROM head LEFT JOIN taken ON true ORDER BY taken.id
"""
_ENTRY_COLUMNS = (
    "seq",
    "created_at",
    "actor",
    "actor_user",
    "actor_token",
    "kind",
    "subject",
    "entry",
    "leaf_hash",
    "format",
)
_ADD_ENTRIES = f"""
WITH added AS (INSERT INTO registry_auditentry ({", ".join(_ENTRY_COLUMNS)}) VALUES {{rows}})
UPDATE registry_audithead SET size = %s WHERE id = 1
"""  # noqa: S608 (_ENTRY_COLUMNS is a constant; the values are parameters)


def _integrate_batch_postgres(batch_size: int) -> int | None:
    """`_integrate_batch(wait=False)` on PostgreSQL (see _TAKE_BATCH): None if another sequencer holds the head."""
    with connection.cursor() as cursor:
        cursor.execute(_TAKE_BATCH, [batch_size])
        taken = cursor.fetchall()
        if not taken:
            return None  # the head is locked: another sequencer is at work
        size = taken[0][0]
        rows = [row[1:] for row in taken if row[2] is not None]  # a head but an empty queue gives one NULL row
        if not rows:
            return 0
        key = commitment_key()
        entries = [_entry(seq, *row, key=key) for seq, row in enumerate(rows, start=size)]
        placeholders = "(" + ", ".join(["%s"] * len(_ENTRY_COLUMNS)) + ")"
        cursor.execute(
            _ADD_ENTRIES.format(rows=", ".join([placeholders] * len(entries))),
            [*(getattr(e, column) for e in entries for column in _ENTRY_COLUMNS), size + len(entries)],
        )
    return len(rows)


def checkpoint_sign(*, reason: str) -> Checkpoint:
    """Sign the log's current head (size and root of entries 0..size-1) and store the signed note.

    A periodic or manual call returns the latest checkpoint instead when it already covers this size with the
    current key; a report always gets its own, so the report can name the checkpoint it was issued under.
    Called inside a report's transaction, the head includes the report's own entry (and the checkpoint rolls
    back with the report).

    Not @transaction.atomic on purpose: the only write is one INSERT, and reading the entries outside a
    transaction lets the shared Merkle tree (registry.selectors.audit) cache them, so a periodic checkpoint
    costs O(new entries). Two racing callers may both sign the same size; that is harmless.
    """
    if reason not in CheckpointReason.values:
        raise RegistryError(f"unknown checkpoint reason {reason!r}", code="invalid-reason")
    audit_integrate()  # everything committed (and, inside a report's transaction, the report's own entry)
    size = AuditHead.objects.get(id=1).size
    key = checkpoint_key()
    latest = checkpoint_latest()
    if latest is not None and latest.size == size and latest.vkey == key.vkey and reason != CheckpointReason.REPORT:
        return latest
    root = audit_root(size=size)
    body = NoteCheckpoint(log_origin(), size, root).body()
    note = sign_note(body, key.name, key.signer.private_key).decode()
    checkpoint = Checkpoint.objects.create(
        size=size,
        root_hash=root.hex(),
        origin=log_origin(),
        note=note,
        vkey=key.vkey,
        reason=reason,
        created_at=timezone.now(),
    )
    if settings.BENCHREG_WITNESSES and reason != CheckpointReason.REPORT:  # a report asks its witnesses itself
        transaction.on_commit(lambda: _ask_witnesses(checkpoint.pk))
    return checkpoint


def _ask_witnesses(checkpoint_id: int) -> None:
    """Queue the cosignature requests; with no broker the task runs here, and a failure is only logged:
    the checkpoint stands without cosignatures and the next one asks again."""
    try:
        dispatch.send(COSIGN_TASK, checkpoint_id)
    except Exception:
        log.exception("could not ask the witnesses to cosign checkpoint %s", checkpoint_id)


def checkpoint_current() -> Checkpoint:
    """The checkpoint to publish now: the latest, or a new one if there is none or the log outgrew the latest
    one more than BENCHREG_CHECKPOINT_INTERVAL_S ago.

    Celery beat signs periodically in a full deployment; this keeps the embedded one (no beat) publishing too,
    at the same pace, so the write a read endpoint may cause is at most one checkpoint per interval.
    """
    latest = checkpoint_latest()
    if latest is not None:
        age = (timezone.now() - latest.created_at).total_seconds()
        if age < settings.BENCHREG_CHECKPOINT_INTERVAL_S:
            return latest
        audit_integrate()
        if latest.size == AuditHead.objects.get(id=1).size:
            return latest
    return checkpoint_sign(reason=CheckpointReason.PERIODIC)
