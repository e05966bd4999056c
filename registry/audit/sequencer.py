"""The audit log's sequencer: numbers queued entries (registry.models.AuditQueued) into the log, in batches.

Services queue an entry inside the transaction of the change it records (registry.services.audit.audit_append) and
call this after the change commits, inline, or from a background thread or worker, as BENCHREG_AUDIT_SEQUENCING says
(docs/audit.md). It lives below services because `audit verify` integrates what is queued before it reads the log.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime

from django.db import DatabaseError, connection, connections, transaction
from django.db.models import F

from protocol.audit_entries import FORMAT, CommitmentKey, actor_commitment, entry_text
from protocol.transparency import leaf_hash
from registry.audit.keys import commitment_key
from registry.models import AuditEntry, AuditHead, AuditQueued

log = logging.getLogger(__name__)
INTEGRATE_BATCH = 1000  # entries numbered per sequencer transaction
IDLE_CLOSE_S = 1.0  # the background sequencer closes its connection after this long without a commit to number
# The background sequencer waits this long after a wake before its batch: at one or a few clients each commit
# otherwise got a batch of its own (five statements and ~1 ms of CPU for one entry, about a tenth of a
# submission's CPU, issue 42); entries are numbered this much later.
GATHER_S = 0.01


def integrate_after_commit() -> None:
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
            if not self.event.wait(IDLE_CLOSE_S):
                connections.close_all()  # idle: the connection goes back (nothing holds a database open for us)
                self.event.wait()
            time.sleep(GATHER_S)  # commits of the next moment join this batch (the event stays set meanwhile)
            self.event.clear()
            try:
                audit_integrate(wait=False)
            except Exception:  # the thread must live on; the entries stay queued
                log.exception("background audit integration failed; the queued entries stay queued")
            finally:
                # This thread's connection is kept for the next wake while commits keep coming (closed after
                # IDLE_CLOSE_S without one): opening one per batch cost more than the batch (it made this mode
                # slower than `commit`, issue 42). A broken or expired one is closed here and opened again.
                for conn in connections.all(initialized_only=True):
                    conn.close_if_unusable_or_obsolete()


background_sequencer = _BackgroundSequencer()


def audit_integrate(*, wait: bool = True, batch_size: int = INTEGRATE_BATCH, limit: int | None = None) -> int:
    """Number queued entries and append them to the log, in batches; returns how many were integrated.

    One sequencer at a time: each batch locks the head row (the only writer of it). With `wait=False` a call
    that finds the head locked returns 0 at once: the sequencer holding it loops until the queue is empty, so it
    takes whatever committed before it looked again. Each batch is one transaction (queued rows deleted, entries
    inserted, head moved), so a sequencer killed mid-batch leaves the batch queued and nothing half-integrated.
    Inside a caller's transaction (a report signing its own entry) the batches are part of it. `limit` caps
    the batches' total (for tests that stop a sequencer between batches).
    """
    if connection.in_atomic_block and not any(hook[1] is integrate_after_commit for hook in connection.run_on_commit):
        # The caller's transaction holds the head until it commits; a commit skipped meanwhile is taken then.
        transaction.on_commit(integrate_after_commit)
    done = 0
    while limit is None or done < limit:
        size = batch_size if limit is None else min(batch_size, limit - done)
        count = _integrate_batch(wait=wait, batch_size=size)
        if count is None:  # another sequencer holds the head
            return done
        done += count
        if count == size:
            continue  # a full batch: more may be queued
        if _nothing_left(count):
            return done
    return done


def _nothing_left(count: int) -> bool:
    """After a batch short of full: whether the sequencer may stop."""
    if connection.in_atomic_block:
        return count == 0  # the caller's transaction has taken all it can see
    # The queue is empty now, after this batch released the head: a commit that found the head locked
    # while the batch ran committed its row before that, so it would be seen here. One plain query instead
    # of another locked batch; a commit after this look finds the head free and integrates itself.
    # Asked after an empty batch too: a batch may read the queue as it was before a commit whose own
    # sequencing attempt found this batch holding the head (_TAKE_BATCH reads at its statement's start).
    # SQL, not `AuditQueued.objects.exists()`: the ORM's compiling of it cost 0.4 ms of the sequencer's 1.3 ms per
    # entry at one client, more than the batch's own statements (issue 42).
    with connection.cursor() as cursor:
        cursor.execute(_ANY_QUEUED)
        return cursor.fetchone() is None


_ANY_QUEUED = f"SELECT 1 FROM {AuditQueued._meta.db_table} LIMIT 1"  # noqa: S608 (the model's table)


@transaction.atomic
def _integrate_batch(*, wait: bool, batch_size: int) -> int | None:
    if connection.vendor == "postgresql" and not wait:
        return _integrate_batch_postgres(batch_size)
    head = _locked_head()
    if head is None:
        return None
    queued = list(AuditQueued.objects.order_by("id")[:batch_size])
    if not queued:
        return 0
    key = commitment_key()
    entries = [_entry(seq, _queued_values(row), key=key) for seq, row in enumerate(queued, start=head.size)]
    AuditEntry.objects.bulk_create(entries)
    AuditQueued.objects.filter(id__in=[row.id for row in queued]).delete()
    AuditHead.objects.filter(id=1).update(size=head.size + len(entries))
    return len(entries)


def _locked_head() -> AuditHead | None:
    """The head row, locked for this transaction; None if it is missing (PostgreSQL)."""
    if connection.vendor == "postgresql":
        return AuditHead.objects.select_for_update().filter(id=1).first()  # waits for another sequencer
    # SQLite has no row locks: a write first takes the database's write lock, which serialises sequencers.
    AuditHead.objects.filter(id=1).update(size=F("size"))
    return AuditHead.objects.get(id=1)


# A queued row's values: queued_at, actor, actor_user, actor_token, kind, subject, payload
_QueuedRow = tuple[datetime, str, int | None, int | None, str, str, str]


def _queued_values(row: AuditQueued) -> _QueuedRow:
    return (row.queued_at, row.actor, row.actor_user, row.actor_token, row.kind, row.subject, row.payload)


def _entry(seq: int, row: _QueuedRow, *, key: CommitmentKey) -> AuditEntry:
    """The log entry numbered `seq` of a queued row: its public text (committing who did it) and leaf hash."""
    queued_at, actor, actor_user, actor_token, kind, subject, payload = row
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
        entries = [_entry(seq, row, key=key) for seq, row in enumerate(rows, start=size)]
        placeholders = "(" + ", ".join(["%s"] * len(_ENTRY_COLUMNS)) + ")"
        cursor.execute(
            _ADD_ENTRIES.format(rows=", ".join([placeholders] * len(entries))),
            [*(getattr(e, column) for e in entries for column in _ENTRY_COLUMNS), size + len(entries)],
        )
    return len(rows)
