"""`audit verify`, part 4: every run, streamed with its `run.submitted` entry (one join, CHUNK rows at a time): its
canonical text hashes to its digest; its document, summary, origin and comparability-key columns are recomputed from
that text; its entry is rebuilt from the row as stored (id, trust, submitted_at, and in format 3 who stored it: name,
user, token) and compared with the logged one; every such entry has its run. Each mismatch names the run, the
column, the stored and the expected value."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import connection
from django.db.models import Max, Min

from protocol import digest_of, is_derived, measurement_identity, summarize
from protocol.audit_entries import (
    CommitmentKey,
    commitment_checker,
    commits_actor,
    differing_fields,
    parse_entry,
    run_submitted_entry,
    run_submitted_fields,
)
from protocol.canonical import NotPlain, canonicalize_plain
from protocol.comparability import comparability_keys
from protocol.parsing import MAX_EXACT_INTEGER
from protocol.summary import COLUMN_NAMES
from registry.audit.keys import commitment_key
from registry.audit.verify import progress, ranges
from registry.audit.verify.entries import CHUNK
from registry.audit.verify.findings import Finding, Report, mismatch, who_differs
from registry.choices import AuditKind
from registry.models import AuditEntry, Submission

SUMMARY_COLUMNS = COLUMN_NAMES  # protocol.summary.COLUMNS: every one recomputed from the canonical text
KEY_COLUMNS = tuple(Submission.KEY_COLUMNS.items())  # (axis, column)


def same_json(parsed: Any, stored: Any) -> bool:
    """The canonical text's value equals the stored JSON document's, number by number.

    PostgreSQL's JSONB stores numbers as exact decimals (1e308 comes back as a 309-digit integer, -0.0 as 0):
    the same double, spelled another way. So a number is compared as the double it denotes whenever either
    side is one; integers compare exactly, and booleans stay booleans (true is not 1).
    """
    if isinstance(parsed, dict):
        return (
            isinstance(stored, dict)
            and parsed.keys() == stored.keys()
            and all(same_json(v, stored[k]) for k, v in parsed.items())
        )
    if isinstance(parsed, list):
        return (
            isinstance(stored, list)
            and len(parsed) == len(stored)
            and all(same_json(a, b) for a, b in zip(parsed, stored, strict=True))
        )
    numbers = (int, float)
    if isinstance(parsed, numbers) and not isinstance(parsed, bool):
        if not isinstance(stored, numbers) or isinstance(stored, bool):
            return False
        either_double = isinstance(parsed, float) or isinstance(stored, float)
        return float(parsed) == float(stored) if either_double else parsed == stored
    return type(parsed) is type(stored) and parsed == stored


_RUN_COLUMNS = (
    "id",
    "digest",
    "canonical",
    "document",
    *SUMMARY_COLUMNS,
    *(column for _, column in KEY_COLUMNS),
    "measurement",
    "derived",
    "trust",
    "submitted_at",
    "submitted_by_id",
    "submitted_by_name",
    "token_id",
)
_RUN_ENTRY_COLUMNS = ("seq", "entry", "format", "actor", "actor_user", "actor_token")
_DATETIME_COLUMNS = frozenset({"started_at", "submitted_at"})


def _runs_with_entries(start: int | None = None, stop: int | None = None) -> Iterator[tuple[Any, ...]]:
    """Every run (start <= id < stop where given) with its run.submitted entry (None columns when it has none), by
    run id, from a server-side cursor.

    One join streamed CHUNK rows at a time: the database matches a run to its entry by digest (both indexed), so
    memory stays flat at a million runs and there is no query per run."""
    q = connection.ops.quote_name
    columns = [f"s.{q(c)}" for c in _RUN_COLUMNS] + [f"e.{q(c)}" for c in _RUN_ENTRY_COLUMNS]
    where: list[str] = []
    params: list[str | int] = [AuditKind.RUN_SUBMITTED.value]
    if start is not None:
        where.append(f"s.{q('id')} >= %s")
        params.append(start)
    if stop is not None:
        where.append(f"s.{q('id')} < %s")
        params.append(stop)
    sql = (
        f"SELECT {', '.join(columns)} FROM {q(Submission._meta.db_table)} s "  # noqa: S608 (constant names)
        f"LEFT JOIN {q(AuditEntry._meta.db_table)} e ON e.{q('subject')} = s.{q('digest')} AND e.{q('kind')} = %s "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY s.{q('id')}, e.{q('seq')}"
    )
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            yield from rows


# A run costs about 0.4 ms to check (its text parsed, its columns and keys recomputed), a hundred times an entry:
# from this many runs on, they are checked in ranges of id, one process each (registry/audit/verify/ranges.py).
RUN_RANGES_FROM = 2_000


def verify_runs(report: Report) -> None:
    """Each run against its canonical text and its logged entry (module docstring, 4); a large PostgreSQL
    registry's runs in ranges of id, one process each, their findings taken in id order (a run's entries are
    joined to it, so they are in its range)."""
    key = commitment_key()
    committed = commitment_checker(key)
    span = Submission.objects.aggregate(first=Min("id"), last=Max("id"))
    starts = ranges.bounds(span["first"], span["last"], at_least=RUN_RANGES_FROM)
    if not starts:
        _verify_run_range(report, key, committed)
        return

    def check_range(start: int, stop: int | None) -> tuple[int, list[Finding]]:
        range_report = Report()
        _verify_run_range(range_report, key, committed, start, stop)
        return range_report.runs, range_report.findings

    with ranges.forked(starts, check_range) as result:
        _verify_run_range(report, key, committed, stop=starts[0])
        for index in range(len(starts)):
            runs, findings = result(index)
            report.runs += runs
            report.findings.extend(findings)


def _verify_run_range(
    report: Report, key: CommitmentKey, committed: _Committed, start: int | None = None, stop: int | None = None
) -> None:
    width = len(_RUN_COLUMNS)
    previous, checked = None, 0  # checked: runs not yet added to the progress count
    for row in _runs_with_entries(start, stop):
        run = dict(zip(_RUN_COLUMNS, row[:width], strict=True))
        entry = dict(zip(_RUN_ENTRY_COLUMNS, row[width:], strict=True))
        if run["id"] == previous:  # a second run.submitted entry for the same digest
            message = f"a second run.submitted audit entry #{entry['seq']} records its digest"
            report.findings.append(Finding(message, run=run["id"], seq=entry["seq"]))
            continue
        previous = run["id"]
        report.runs += 1
        _verify_run(report, run, entry, key, committed)
        checked += 1
        if checked == _COUNTED_EVERY:
            progress.counted(checked)
            checked = 0
    progress.counted(checked)


_COUNTED_EVERY = 100  # runs checked between two additions to the progress count (registry/audit/verify/progress.py)


def run_count() -> int:
    """The runs there are to check."""
    return Submission.objects.count()


_Committed = Callable[[object, int, str, int | None, int | None], bool]  # protocol.audit_entries.commitment_checker


def _verify_run(
    report: Report, run: dict[str, Any], entry: dict[str, Any], key: CommitmentKey, committed: _Committed
) -> None:
    for name in _DATETIME_COLUMNS:
        run[name] = _as_datetime(run[name])
    _verify_run_text(report, run)
    if entry["seq"] is None:
        report.findings.append(
            Finding(f"no run.submitted audit entry records its digest {run['digest']}", run=run["id"])
        )
    else:
        _verify_run_entry(report, run, entry, key, committed)


def _as_datetime(value: Any) -> Any:
    """A datetime column read by a raw cursor: PostgreSQL gives aware datetimes, SQLite naive UTC text."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _verify_run_text(report: Report, run: dict[str, Any]) -> None:
    """The digest, the JSON document and every column derived from the canonical text, recomputed from it."""
    pk, canonical = run["id"], run["canonical"]
    text = canonical.encode()
    if (actual := digest_of(text)) != run["digest"]:
        report.findings.append(
            Finding(f"the stored text hashes to {actual}, the run's digest is {run['digest']}", run=pk, column="digest")
        )
        return
    parsed = _loads(canonical)
    if not _same_document(parsed, run["document"], text):
        report.findings.append(Finding("column document differs from the canonical text", run=pk, column="document"))
    _verify_derived_columns(report, run, parsed)


def _same_document(parsed: Any, document: Any, text: bytes) -> bool:
    """Whether the document column holds the value the canonical text (`text`, parsed: `parsed`) parses to."""
    stored = _loads(document) if isinstance(document, str) else document
    # The stored document made canonical again, if it is in the fast canonical subset, equals the text exactly
    # when same_json would hold (every number the same double, integers within 2^53 exactly, true not 1), about half
    # its cost. Otherwise one C-speed comparison of sorted dumps settles a document spelled as the text parses (a
    # float outside the subset's range); the rest (JSONB's decimal spellings, or a real difference) are compared
    # number by number.
    try:
        if canonicalize_plain(stored) == text:
            return True
    except (NotPlain, orjson.JSONEncodeError):
        pass
    return bool(
        ((dumped := _sorted_dump(parsed)) is not None and dumped == _sorted_dump(stored)) or same_json(parsed, stored)
    )


def _verify_derived_columns(report: Report, run: dict[str, Any], parsed: Any) -> None:
    """The summary and comparability-key columns against their values recomputed from the canonical text."""
    pk = run["id"]
    expected = summarize(parsed).columns()
    for name in SUMMARY_COLUMNS:
        if expected[name] != run[name]:
            report.findings.append(mismatch(pk, name, run[name], expected[name], "the canonical text"))
    keys = comparability_keys(parsed)
    for axis, column in KEY_COLUMNS:
        if keys[axis] != run[column]:
            report.findings.append(mismatch(pk, column, run[column], keys[axis], "the canonical text"))
    identity = measurement_identity(parsed, own_digest=run["digest"])
    if identity != run["measurement"]:
        report.findings.append(mismatch(pk, "measurement", run["measurement"], identity, "the canonical text"))
    if is_derived(parsed) != bool(run["derived"]):  # SQLite's raw cursor reads a boolean as 0 or 1
        report.findings.append(mismatch(pk, "derived", bool(run["derived"]), is_derived(parsed), "the canonical text"))


# An integer literal beyond ±(2**53 - 1) has 16 digits at least, with no digit or point before them and no
# digit, fraction or exponent after: only a text holding one is walked. Its digits are ASCII, so a text whose
# UTF-8 bytes, digits made "0" and every other byte a space, hold no 16 "0"s in a row has none; that translation
# and search run in C at a byte or two a nanosecond, where the pattern alone costs sre a try at every position
# (about 20 times orjson's parse of a run's text).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_SIXTEEN_DIGITS = b"0" * 16
_LONG_INTEGER = re.compile(r"(?<![0-9.])[0-9]{16,}(?![0-9.eE])")


def holds_long_integer(text: str) -> bool:
    """Whether the JSON text may hold an integer literal beyond ±(2**53 - 1) (never False when it does)."""
    return (
        _SIXTEEN_DIGITS in text.encode(errors="surrogatepass").translate(_DIGITS_AS_ZEROS)
        and _LONG_INTEGER.search(text) is not None
    )


def _loads(text: str) -> Any:
    """The JSON text as the protocol's parser reads it (protocol.parsing): orjson where it can (several times
    faster), json for what it refuses (integers beyond 64 bits); an integer literal beyond ±(2**53 - 1) is the
    double whose canonical text it is (RFC 8785 writes 1.2345678901234568e17 as 123456789012345680), so the
    figures recomputed from it are those computed at submission."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = json.loads(text)
    return _as_doubles(value) if holds_long_integer(text) else value


def _as_doubles(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value) if abs(value) > MAX_EXACT_INTEGER else value
    if isinstance(value, dict):
        return {key: _as_doubles(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_as_doubles(child) for child in value]
    return value


def _sorted_dump(value: Any) -> bytes | None:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits: the careful comparison decides
        return None


_FIELD_COLUMNS = {"payload.run": "id", "payload.trust": "trust", "time": "submitted_at"}  # entry field: run column


def _verify_run_entry(
    report: Report, run: dict[str, Any], entry: dict[str, Any], key: CommitmentKey, committed: _Committed
) -> None:
    """The run's row against its run.submitted entry: the entry rebuilt from the row must be the logged one.

    The entry's text is checked against its leaf hash and the signed tree elsewhere; here every field of it that
    the row also holds (as its format says: protocol.audit_entries.run_submitted_fields) is compared, column by
    column."""
    pk, seq, fmt = run["id"], entry["seq"], entry["format"]
    logged = parse_entry(entry["entry"])
    source = f"audit entry #{seq}"
    fields = run_submitted_fields(fmt, logged)
    if fields:
        rebuilt = run_submitted_entry(
            seq=seq, digest=run["digest"], run=pk, trust=run["trust"], submitted_at=run["submitted_at"]
        )
        for path, stored, found in differing_fields(logged, rebuilt, fields):
            report.findings.append(mismatch(pk, _FIELD_COLUMNS[path], stored, found, source))
    if commits_actor(fmt):
        _verify_run_who(report, run, entry, logged.get("who"), key, committed)
    elif run["submitted_by_name"] != entry["actor"]:  # format 1 and 2 hold the name in an uncommitted column only
        report.findings.append(
            mismatch(pk, "submitted_by_name", run["submitted_by_name"], entry["actor"], f"{source}'s actor column")
        )


def _differing_actor_columns(run: dict[str, Any], entry: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(column, the run's value, the entry's value) for each actor column where they differ; every column, with the
    entry's value None, when none differs."""
    columns = {
        "submitted_by_name": ("actor", run["submitted_by_name"]),
        "submitted_by": ("actor_user", run["submitted_by_id"]),
        "token": ("actor_token", run["token_id"]),
    }
    named = [(column, value, entry[field]) for column, (field, value) in columns.items() if value != entry[field]]
    if not named:  # the entry's columns were rewritten to match the run: the commitment alone says so
        named = [(column, value, None) for column, (_, value) in columns.items()]
    return named


def _verify_run_who(
    report: Report, run: dict[str, Any], entry: dict[str, Any], who: object, key: CommitmentKey, committed: _Committed
) -> None:
    """Who stored it. Format 3 commits name, user and token in the logged text: recomputed from the run's own row,
    so a rewrite of the run's columns shows even when the entry's columns were rewritten to match."""
    pk, seq = run["id"], entry["seq"]
    if committed(who, seq, run["submitted_by_name"], run["submitted_by_id"], run["token_id"]):
        return
    for column, stored, expected in _differing_actor_columns(run, entry):
        finding = who_differs(seq, who, key, "submitted_by_name, submitted_by, token", run=pk, column=column)
        detail = f" (the entry's column says {expected!r})" if expected is not None else ""
        report.findings.append(
            Finding(f"column {column} is {stored!r}: {finding.message}{detail}", run=pk, column=column)
        )


def verify_run_entries(report: Report) -> None:
    """Every run.submitted entry has its run (subjects are run digests); the other way is verify_runs'."""
    submitted = AuditEntry.objects.filter(kind=AuditKind.RUN_SUBMITTED)
    for seq, subject in (
        submitted.exclude(subject__in=Submission.objects.values("digest")).order_by("seq").values_list("seq", "subject")
    ):
        report.findings.append(Finding(f"records run {subject}, and no stored run has that digest", seq=seq))
