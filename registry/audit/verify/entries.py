"""`audit verify`, part 1: every entry's text against its leaf hash and its columns (seq, time, kind, subject;
actor in format 1; in format 3 its `who` recomputed from actor, actor_user and actor_token with the registry's
commitment key), the sequence without gaps, and the head row counting them all."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from hashlib import sha256
from typing import Any

import orjson
from django.db import connection
from django.db.models import CharField, F, Func
from django.db.models.functions import Cast

from protocol.audit_entries import CommitmentKey, actor_commitment, commits_actor, entry_head
from registry.audit.keys import commitment_key
from registry.audit.verify.findings import Finding, Report, who_differs
from registry.models import AuditEntry, AuditHead

CHUNK = 10_000
LEAF_PREFIX = b"\x00"  # RFC 9162 leaf hash: SHA-256(0x00 || entry), as protocol.transparency.leaf_hash


def verify_entries(report: Report) -> list[bytes]:
    """Leaf hashes recomputed from the entry texts, in order; mismatches go to the report.

    The loop is the cost of `audit verify` at a million entries, so the common case (everything agrees) is kept
    tight: orjson parses the text, and the time column comes from the database already spelled as entries
    spell it (PostgreSQL), so one string comparison checks it; anything that differs takes the careful path.
    """
    leaves: list[bytes] = []
    append = leaves.append
    expected = 0
    key = commitment_key()
    query = AuditEntry.objects.order_by("seq").annotate(created_text=_time_as_entry_text()).values_list(*_ENTRY_COLUMNS)
    for row in stream(query):
        seq = row[0]
        if seq != expected:
            missing = f"entry #{expected} is" if seq == expected + 1 else f"entries #{expected}..#{seq - 1} are"
            report.findings.append(Finding(f"missing: {missing} not stored", seq=expected))
            expected = seq
        append(_verify_entry(report, key, row))
        expected += 1
    return leaves


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


def _verify_entry(report: Report, key: CommitmentKey, row: _EntryRow) -> bytes:
    """One entry's text against its leaf hash and its columns, as its format spells them; returns its leaf hash."""
    seq, created_text, actor, kind, subject, text, stored_leaf, fmt, user, token = row
    raw = text.encode()
    leaf = sha256(LEAF_PREFIX + raw).digest()
    if leaf.hex() != stored_leaf:
        report.findings.append(Finding("the entry text does not hash to the stored leaf hash", seq=seq))
    head = entry_head(fmt, seq=seq, kind=kind, subject=subject, actor=actor)
    entry, agrees = _parsed(raw, head, created_text)
    if not agrees and (message := _entry_disagrees(text, head, created_text)):
        report.findings.append(Finding(message, seq=seq))
    # A format-2 entry commits to nobody: actor ids set on it afterwards are a rewrite.
    if commits_actor(fmt) or (fmt == 2 and (user is not None or token is not None)):
        who = entry.get("who") if type(entry) is dict else None
        if who != actor_commitment(seq=seq, actor=actor, user=user, token=token, key=key):
            report.findings.append(who_differs(seq, who, key, "actor, actor_user, actor_token"))
    return leaf


def _parsed(raw: bytes, head: dict[str, object], created_text: str) -> tuple[Any, bool]:
    """The fast path: the entry parsed by orjson, and whether it agrees with `head` and the time column."""
    try:
        entry = orjson.loads(raw)
        agrees = (
            type(entry) is dict
            and entry.get("time") == created_text
            and all(entry.get(name) == value for name, value in head.items())
        )
    except orjson.JSONDecodeError:  # not JSON, or a number orjson does not take: the careful path decides
        entry, agrees = None, False
    return entry, agrees


def stream(query: Any) -> Iterator[tuple[Any, ...]]:
    """The query's rows as plain tuples from a server-side cursor (on PostgreSQL), CHUNK at a time.

    Django's values_list().iterator() gives the same rows through several generator layers per row, which at a
    million entries costs seconds; every column here is text or an integer, so no converter is skipped."""
    sql, params = query.query.sql_with_params()
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            yield from rows


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
    last = AuditEntry.objects.order_by("-seq").values_list("seq", flat=True).first()
    table_size = 0 if last is None else last + 1
    if head != table_size:
        report.findings.append(
            Finding(f"the head row says {head} entries, the table ends at {table_size}", seq=min(head or 0, table_size))
        )
