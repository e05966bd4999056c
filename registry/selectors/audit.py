"""Reading the audit log: entries, checkpoints, the Merkle root at any size and proofs between sizes.

Proofs come from one `MerkleTree` per process, kept between requests: the log only grows, so a tree built over
committed entries stays right and is extended with just the new leaf hashes (O(new) instead of O(n) per request;
about 64 bytes of memory per entry). See `_SharedTree` for how it stays honest.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, QuerySet, Subquery

from protocol.transparency import MerkleTree
from registry.exceptions import RegistryError
from registry.models import AuditEntry, AuditHead, AuditQueued, Checkpoint, Cosignature

LEAF_CHUNK = 20_000  # rows per fetch when streaming leaf hashes


class OutOfRange(RegistryError):
    """A size or entry number the log does not have; `errors` names the query parameter."""

    status = 422  # well-formed, but not a position the log has (400 is for malformed parameters)
    code = "out-of-range"

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(
            f"{parameter}: {message}", errors=[{"pointer": f"/{parameter}", "code": "out-of-range", "message": message}]
        )


class LogInconsistent(RegistryError):
    """The stored log is not a gapless sequence (rows went missing): no proof can be served. Run `audit verify`."""

    status = 500
    code = "audit-log-inconsistent"


@dataclass(frozen=True)
class InclusionProof:
    """Leaf `leaf_index` is in the tree of `tree_size` leaves whose root is `root_hash`."""

    leaf_index: int
    tree_size: int
    leaf_hash: bytes
    proof: list[bytes]
    root_hash: bytes
    entry_text: str | None = None


@dataclass(frozen=True)
class ConsistencyProof:
    """The tree of `first` leaves (root `first_root`) is a prefix of the tree of `second` leaves."""

    first: int
    second: int
    first_root: bytes
    second_root: bytes
    proof: list[bytes]


# ---------------------------------------------------------------------------------------------------------------
# Entries and checkpoints


def audit_size() -> int:
    """Entries in the log (committed ones, outside a transaction)."""
    return AuditHead.objects.get(id=1).size


def audit_entry_list(*, kind: str | None = None, subject: str | None = None) -> QuerySet[AuditEntry]:
    """Entries in log order, optionally of one kind and/or about one subject."""
    entries = AuditEntry.objects.order_by("seq")
    if kind:
        entries = entries.filter(kind=kind)
    if subject:
        entries = entries.filter(subject=subject)
    return entries


def audit_pending_count(*, kind: str | None = None, subject: str | None = None) -> int:
    """Entries queued by committed changes and not numbered yet, optionally of one kind/subject."""
    queued = AuditQueued.objects.all()
    if kind:
        queued = queued.filter(kind=kind)
    if subject:
        queued = queued.filter(subject=subject)
    return queued.count()


def checkpoint_latest() -> Checkpoint | None:
    return Checkpoint.objects.order_by("-id").first()


def checkpoint_at(*, size: int) -> Checkpoint | None:
    """The latest stored checkpoint of exactly this size, if any."""
    return Checkpoint.objects.filter(size=size).order_by("-id").first()


def cosigned_note(checkpoint: Checkpoint) -> str:
    """The checkpoint's signed note with its witnesses' cosignature lines appended (C2SP tlog-cosignature)."""
    lines = Cosignature.objects.filter(checkpoint=checkpoint).order_by("id").values_list("line", flat=True)
    return checkpoint.note + "".join(line + "\n" for line in lines)


def checkpoint_published(*, quorum: int) -> Checkpoint | None:
    """The latest checkpoint cosigned by at least `quorum` witnesses (None if there is none); quorum 0: the latest."""
    if quorum <= 0:
        return checkpoint_latest()
    return (
        Checkpoint.objects.annotate(cosigners=Count("cosignatures"))
        .filter(cosigners__gte=quorum)
        .order_by("-id")
        .first()
    )


def audit_seq_of(*, kind: str, subject: str) -> int | None:
    """The number of the first entry of this kind about this subject (a run's `run.submitted` entry)."""
    return AuditEntry.objects.filter(kind=kind, subject=subject).order_by("seq").values_list("seq", flat=True).first()


# ---------------------------------------------------------------------------------------------------------------
# Roots and proofs


def audit_root(*, size: int) -> bytes:
    """Merkle root (RFC 9162 MTH) of entries 0..size-1. Raises OutOfRange beyond the log."""
    with shared_tree_at(size, "size") as tree:
        return tree.root(size)


def audit_inclusion(*, entry: int, size: int, restricted: bool = False) -> InclusionProof:
    """Inclusion proof of entry `entry` in the tree of `size` entries, with the entry's text if it is public
    (format 2) or `restricted` (the caller may read format-1 texts).

    Raises OutOfRange naming the parameter. Warm, this is two queries and O(log n) hashing.
    """
    if not 0 <= entry < size:
        raise OutOfRange("entry", f"entry {entry} is not in a tree of {size} entries (0 <= entry < size)")
    with shared_tree_at(size, "size") as tree:
        proof = InclusionProof(entry, size, tree.leaf(entry), tree.inclusion_proof(entry, size), tree.root(size))
    row = AuditEntry.objects.filter(seq=entry).values_list("entry", "format").first()
    if row is None or (row[1] == 1 and not restricted):
        return proof
    return dataclasses.replace(proof, entry_text=row[0])


def audit_consistency(*, first: int, second: int) -> ConsistencyProof:
    """Proof that the log at size `first` is a prefix of the log at size `second`."""
    if not 0 <= first <= second:
        raise OutOfRange("from", f"from={first} must be between 0 and to={second}")
    with shared_tree_at(second, "to") as tree:
        return ConsistencyProof(
            first, second, tree.root(first), tree.root(second), tree.consistency_proof(first, second)
        )


def leaf_hashes(start: int, end: int) -> Iterator[bytes]:
    """Stored leaf hashes of entries start..end-1 in order. Raises LogInconsistent if any is missing."""
    count = 0
    rows = (
        AuditEntry.objects.filter(seq__gte=start, seq__lt=end)
        .order_by("seq")
        .values_list("leaf_hash", flat=True)
        .iterator(chunk_size=LEAF_CHUNK)
    )
    for count, value in enumerate(rows, start=1):  # noqa: B007 (count is read after the loop)
        yield bytes.fromhex(value)
    # seq is unique, so as many rows as numbers in the range means none is missing.
    if count != end - start:
        raise LogInconsistent(f"entries {start}..{end - 1} should be {end - start} rows, found {count}")


# ---------------------------------------------------------------------------------------------------------------
# The per-process tree


class _SharedTree:
    """A MerkleTree over the first `size` entries of one database's log, shared by the threads of a process.

    Only rows read outside a transaction are cached: inside one, rows may be this transaction's own uncommitted
    appends, which a rollback would take back (their seq numbers then reused by other entries), so such a
    request extends a private copy instead. Each use re-reads the last cached leaf hash with the head (one
    query), which catches a database that was emptied and refilled (test flushes) or swapped.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.database: object = None
        self.tree = MerkleTree()


shared_tree = _SharedTree()


def database_key() -> object:
    settings = connection.settings_dict
    return (connection.alias, settings.get("HOST"), settings.get("PORT"), str(settings.get("NAME")))


def _head_and_leaf(seq: int) -> tuple[int, str | None]:
    """The log's size and the stored leaf hash of entry `seq` (None if no such row), in one query."""
    leaf = AuditEntry.objects.filter(seq=seq).order_by().values("leaf_hash")[:1]
    return AuditHead.objects.filter(id=1).annotate(leaf=Subquery(leaf)).values_list("size", "leaf").get()


def _cached_tree() -> tuple[MerkleTree, int]:
    """The shared tree if it is still a prefix of this database's log (else a new empty one), and the log size."""
    tree = shared_tree.tree if shared_tree.database == database_key() else MerkleTree()
    log_size, last = _head_and_leaf(tree.size - 1)
    if tree.size and last != tree.leaf(tree.size - 1).hex():
        tree = MerkleTree()
    shared_tree.database, shared_tree.tree = database_key(), tree  # an empty tree is always safe to share
    return tree, log_size


@contextmanager
def shared_tree_at(size: int, parameter: str) -> Iterator[MerkleTree]:
    """A tree of at least `size` leaves, held under the process lock while the caller reads proofs from it.

    Raises OutOfRange naming `parameter` if the log has fewer than `size` entries.
    """
    with shared_tree.lock:
        tree, log_size = _cached_tree()
        if not 0 <= size <= log_size:
            raise OutOfRange(parameter, f"the log has {log_size} entries; {parameter}={size} is out of range")
        if tree.size < size:
            private = connection.in_atomic_block
            # Read fully before touching the tree: a missing row raises with no half-extended tree left behind.
            new = list(leaf_hashes(tree.size, size))
            if tree.size == 0:
                tree = MerkleTree(new)  # a batch build hashes about 3x faster than appending one by one
            else:
                tree = copy.deepcopy(tree) if private else tree
                for leaf in new:
                    tree.append(leaf)
            if not private:
                # Everything read outside a transaction is committed, and committed entries never change.
                shared_tree.tree = tree
        yield tree
