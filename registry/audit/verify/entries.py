"""`audit verify`, part 1: every entry's text against its leaf hash and its columns (seq, time, kind, subject;
actor in format 1; in format 3 its `who` recomputed from actor, actor_user and actor_token with the registry's
commitment key), the sequence without gaps, and the head row counting them all."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from hashlib import sha256
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import CharField, F, Func
from django.db.models.functions import Cast
from orjson import JSONDecodeError

from protocol.audit_entries import commitment_checker, commits_actor, entry_head
from protocol.transparency import MerkleTree
from registry.audit.keys import commitment_key
from registry.audit.verify import progress, ranges
from registry.audit.verify.findings import Finding, Report, who_differs
from registry.models import AuditEntry, AuditHead

CHUNK = 10_000
LEAF_PREFIX = b"\x00"  # RFC 9162 leaf hash: SHA-256(0x00 || entry), as protocol.transparency.leaf_hash


def verify_entries(report: Report) -> MerkleTree:
    """The tree of the leaf hashes recomputed from the entry texts, in order; mismatches go to the report.

    The loop is the cost of `audit verify` at a million entries, so the common case (everything agrees) is kept
    tight: the rows arrive from a thread that fetches the next chunk while this one checks the last (`stream_chunks`),
    orjson parses the text, the time column comes from the database already spelled as entries spell it
    (PostgreSQL), and a format-2 or -3 entry is checked field by field without building its head; anything that
    differs takes the careful path. Each chunk's leaves go into the tree as they come, so its hashing fills the
    waits for the next chunk instead of following the whole log.

    That loop holds the GIL for about 4 µs an entry, fetching included: one process cannot go faster than that
    however many cores wait. A large log on PostgreSQL is therefore checked in ranges of seq, one process each
    (`_verify_in_ranges`); a small one, or SQLite's, in this process.
    """
    committed = commitment_checker(commitment_key())
    bounds = range_bounds()
    if bounds:
        return _verify_in_ranges(report, committed, bounds)
    tree = MerkleTree()
    check_entries(report, committed, stream_chunks(entry_query()), tree)
    return tree


def entry_query(start: int | None = None, stop: int | None = None) -> Any:
    """The rows of _ENTRY_COLUMNS by seq, those with start <= seq < stop where given."""
    query = AuditEntry.objects.order_by("seq")
    if start is not None:
        query = query.filter(seq__gte=start)
    if stop is not None:
        query = query.filter(seq__lt=stop)
    return query.annotate(created_text=_time_as_entry_text()).values_list(*_ENTRY_COLUMNS)


_ALIGN = 1 << 14  # ranges start at multiples of this, so each range's tree joins the whole one for a few hashes


def entry_count() -> int:
    """The entries the table holds, as their numbers say: the last seq + 1 (the head row is checked against it)."""
    last = AuditEntry.objects.order_by("-seq").values_list("seq", flat=True).first()
    return 0 if last is None else last + 1


def range_bounds() -> list[int]:
    """Where the second and later ranges of seq start (none: one process checks every entry)."""
    count = entry_count()
    return ranges.bounds(0 if count else None, count - 1 if count else None, _ALIGN)


def _verify_in_ranges(report: Report, committed: _Committed, bounds: list[int]) -> MerkleTree:
    """The entries before bounds[0] checked here, those of each later range by a forked process
    (registry/audit/verify/ranges.py); each range's findings and tree are then taken in seq order, so the report and
    the tree are those of one pass (a gap across a range's start is named once, as one pass names it).

    Entries are append-only and numbered in commit order, so a closed range reads the same rows in any snapshot,
    and entries appended meanwhile can only land in the last, open range, as they could after one pass read its
    rows."""

    def check_range(start: int, stop: int | None) -> Any:
        range_report, range_tree = Report(), MerkleTree()
        first, end = check_entries(
            range_report, committed, stream_chunks(entry_query(start, stop)), range_tree, expected=None
        )
        return first, end, range_report.findings, range_tree

    with ranges.forked(bounds, check_range) as result:
        tree = MerkleTree()
        _, expected = check_entries(report, committed, stream_chunks(entry_query(stop=bounds[0])), tree)
        for index in range(len(bounds)):
            first, end, findings, range_tree = result(index)
            if first is not None:
                if expected is not None and first != expected:
                    report.findings.append(_missing(expected, first))
                expected = end
            report.findings.extend(findings)
            tree.join(range_tree)
        return tree


_ENTRY_COLUMNS = (
    "seq",
    "created_text",
    "actor",
    "kind",
    "subject",
    "entry",
    "leaf_hash",
    "format",
    "actor_user",
    "actor_token",
)


# One row of _ENTRY_COLUMNS: seq, created_text, actor, kind, subject, entry, leaf_hash, format, actor_user, actor_token
_EntryRow = tuple[int, str, str, str, str, str, str, int, int | None, int | None]
_Committed = Callable[[object, int, str, int | None, int | None], bool]
_LEAF_STATE = sha256(LEAF_PREFIX)  # copied per entry: cheaper than a new SHA-256 object from OpenSSL each time


def check_entries(
    report: Report,
    committed: _Committed,
    chunks: Iterable[Sequence[_EntryRow]],
    tree: MerkleTree,
    *,
    expected: int | None = 0,
) -> tuple[int | None, int | None]:
    """Each chunk's entries (rows of _ENTRY_COLUMNS, by seq, from `expected`, or from the first row's when None)
    against their leaf hashes and columns, and the numbers without gaps; each chunk's leaf hashes then extend `tree`.
    Returns the first row's seq and the seq the next row should have (None, `expected` when there are no rows).

    The common case, every check passing, is written out in one loop: no call per entry, and the leaf hash from a
    copied SHA-256 state (together about a tenth of an entry's cost in memory). An entry passes here only if
    `_verify_entry` would find nothing in it; any other is handed to it, which says what differs."""
    first: int | None = None
    leaf_state, loads = _LEAF_STATE, orjson.loads
    for rows in chunks:
        if not rows:
            continue
        if first is None:
            first = rows[0][0]
        number = rows[0][0] if expected is None else expected  # the seq the next row should have
        leaves: list[bytes] = []
        append = leaves.append
        for row in rows:
            seq, created_text, actor, kind, subject, text, stored_leaf, fmt, user, token = row
            if seq != number:
                report.findings.append(_missing(number, seq))
                number = seq
            number += 1
            raw = text.encode()
            digest = leaf_state.copy()
            digest.update(raw)
            leaf = digest.digest()
            append(leaf)
            try:
                entry = loads(raw)
            except JSONDecodeError:  # not JSON, or a number orjson does not take: the careful path decides
                entry = None
            if (
                leaf.hex() == stored_leaf
                and fmt != 1
                and type(entry) is dict
                and entry.get("seq") == seq
                and entry.get("kind") == kind
                and entry.get("subject") == subject
                and entry.get("v") == fmt
                and entry.get("time") == created_text
                and (
                    committed(entry.get("who"), seq, actor, user, token)
                    if fmt == 3
                    else fmt == 2 and user is None and token is None
                )
            ):
                continue
            _verify_entry(report, committed, row, leaf, entry)
        tree.extend(leaves)
        expected = number
        progress.counted(len(rows))
    return first, expected


def _missing(expected: int, seq: int) -> Finding:
    """The entries numbered from `expected` up to the stored `seq` are not stored."""
    missing = f"entry #{expected} is" if seq == expected + 1 else f"entries #{expected}..#{seq - 1} are"
    return Finding(f"missing: {missing} not stored", seq=expected)


def _verify_entry(report: Report, committed: _Committed, row: _EntryRow, leaf: bytes, entry: Any) -> None:
    """One entry's text against its leaf hash and its columns, as its format spells them: what differs, in words.
    `leaf` is the leaf hash of its text, `entry` the text as orjson parses it (None when it does not)."""
    seq, created_text, actor, kind, subject, text, stored_leaf, fmt, user, token = row
    if leaf.hex() != stored_leaf:
        report.findings.append(Finding("the entry text does not hash to the stored leaf hash", seq=seq))
    agrees = (
        fmt != 1  # format 1 names its actor and has no `v`: entry_head says how, on the careful path
        and type(entry) is dict
        and entry.get("seq") == seq
        and entry.get("kind") == kind
        and entry.get("subject") == subject
        and entry.get("v") == fmt
        and entry.get("time") == created_text
    )
    if not agrees:
        head = entry_head(fmt, seq=seq, kind=kind, subject=subject, actor=actor)
        if message := _entry_disagrees(text, head, created_text):
            report.findings.append(Finding(message, seq=seq))
    # A format-2 entry commits to nobody: actor ids set on it afterwards are a rewrite.
    if commits_actor(fmt) or (fmt == 2 and (user is not None or token is not None)):
        who = entry.get("who") if type(entry) is dict else None
        if not committed(who, seq, actor, user, token):
            report.findings.append(who_differs(seq, who, commitment_key(), "actor, actor_user, actor_token"))


def stream(query: Any) -> Iterator[tuple[Any, ...]]:
    """The query's rows as plain tuples, in order (`stream_chunks`, one row at a time)."""
    for rows in stream_chunks(query):
        yield from rows


def stream_chunks(query: Any) -> Iterator[list[tuple[Any, ...]]]:
    """The query's rows as lists of plain tuples from a server-side cursor (on PostgreSQL), CHUNK at a time, the
    next chunk fetched by a thread while the caller works through the last one.

    Django's values_list().iterator() gives the same rows through several generator layers per row, which at a
    million entries costs seconds; every column here is text or an integer, so no converter is skipped. The fetch
    waits on the database (the GIL released) while the caller hashes and parses: overlapped, a verification costs
    about the larger of the two instead of their sum. The cursor is read inside a transaction: outside one, Django
    declares it WITH HOLD, and PostgreSQL then computes and stores every row before it sends the first, so nothing
    overlaps."""
    sql, params = query.query.sql_with_params()
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        if connection.vendor != "postgresql":  # the embedded SQLite file: rows come from memory, nothing to overlap
            while rows := cursor.fetchmany(CHUNK):
                yield rows
            return
        raw = cursor.cursor  # the driver's cursor: Django's wrapper is tied to the thread that made it
        chunks: queue.Queue[list[tuple[Any, ...]] | BaseException] = queue.Queue(maxsize=2)
        stop = threading.Event()

        def fetch() -> None:
            try:
                while not stop.is_set() and (rows := raw.fetchmany(CHUNK)):
                    chunks.put(rows)
                chunks.put([])
            except BaseException as exc:  # handed to the caller, raised there
                chunks.put(exc)

        fetcher = threading.Thread(target=fetch, name="audit-verify-fetch", daemon=True)
        fetcher.start()
        try:
            while True:
                rows = chunks.get()
                if isinstance(rows, BaseException):
                    raise rows
                if not rows:
                    break
                yield rows
        finally:
            stop.set()
            while fetcher.is_alive():  # a caller that stops early: drain so the fetcher ends before the cursor closes
                with contextlib.suppress(queue.Empty):
                    chunks.get(timeout=0.1)
            fetcher.join()


def _time_as_entry_text() -> Func:
    """created_at as text: on PostgreSQL spelled as format-2 entries spell time (UTC, six fractional digits, Z).
    A format-1 entry written at a whole second spelled it without the digits: it takes the careful path."""
    if connection.vendor == "postgresql":
        return Func(
            F("created_at"),
            template="to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
            output_field=CharField(),
        )
    return Cast("created_at", CharField())


def _entry_disagrees(text: str, columns: dict[str, object], created_text: str) -> str | None:
    """The careful path: which of `columns` (an `entry_head`) and the time the text disagrees with, in words."""
    try:
        entry = json.loads(text)
    except ValueError:
        return "the entry text is not JSON"
    if not isinstance(entry, dict):
        return "the entry text is not a JSON object"
    differ = [name for name, value in columns.items() if entry.get(name) != value]
    if not _same_time(entry.get("time"), created_text):
        differ.append("time")
    return f"the entry text disagrees with its columns: {', '.join(differ)}" if differ else None


def _same_time(entry_time: object, created_text: str) -> bool:
    """Compare as instants: PostgreSQL prints '2026-11-01 12:00:00.5+00', SQLite keeps naive UTC text, and entries
    say '2026-11-01T12:00:00.500000Z'."""
    try:
        stored = datetime.fromisoformat(created_text)
        return isinstance(entry_time, str) and datetime.fromisoformat(entry_time) == (
            stored if stored.tzinfo else stored.replace(tzinfo=UTC)
        )
    except ValueError:
        return False


def verify_head(report: Report) -> None:
    head = AuditHead.objects.filter(id=1).values_list("size", flat=True).first()
    table_size = entry_count()
    if head != table_size:
        report.findings.append(
            Finding(f"the head row says {head} entries, the table ends at {table_size}", seq=min(head or 0, table_size))
        )
