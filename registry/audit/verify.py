"""Re-verify the whole audit log from the database, as a governance reviewer would, and say what does not match.

What is checked (`verify_log`):
  1. every entry: its text hashes to its stored leaf hash; its text agrees with its columns (seq, time, kind,
     subject; actor in format 1; in format 3 its `who` commitment is recomputed from actor, actor_user and
     actor_token with the registry's commitment key); the sequence has no gaps; the head row counts them all;
  2. every stored checkpoint: its signature verifies with a trusted key and its root is the root of the first
     `size` leaves as recomputed from the entry texts now;
  3. every checkpoint file a reviewer kept (signed notes): the same, so a rewrite of the log *and* its stored
     checkpoints still shows against a copy held outside the database;
  4. every run, streamed with its `run.submitted` entry (one join, CHUNK rows at a time): its canonical text hashes
     to its digest; its document, summary, origin and comparability-key columns are recomputed from that text; its
     entry is rebuilt from the row as stored (id, trust, submitted_at, and in format 3 who stored it: name, user,
     token) and compared with the logged one; every such entry has its run. Withdrawals likewise (reason, and in
     format 3 who withdrew it and when). Each mismatch names the run, the column, the stored and the expected value.

Nothing here trusts the per-process tree cache of registry.selectors.audit: the tree is rebuilt from the texts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from hashlib import sha256
from typing import Any

import orjson
from django.db import connection
from django.db.models import CharField, F, Func
from django.db.models.functions import Cast

from protocol import digest_of, summarize
from protocol.comparability import comparability_keys
from protocol.cosignature import verify_cosignatures
from protocol.signed_note import NoteError, VerifierKey, open_note
from protocol.transparency import MerkleTree
from registry.audit.entries import WHO_PREFIX, actor_commitment, entry_time, withdrawal_reason_digest
from registry.audit.keys import CommitmentKey, commitment_key, log_origin, trusted_verifier_keys
from registry.choices import AuditKind
from registry.models import AuditEntry, AuditHead, Checkpoint, Submission, Withdrawal
from registry.selectors.audit import cosigned_note

CHUNK = 10_000
LEAF_PREFIX = b"\x00"  # RFC 9162 leaf hash: SHA-256(0x00 || entry), as protocol.transparency.leaf_hash
SUMMARY_COLUMNS = (
    "protocol_version",
    "phase",
    "workload_name",
    "workload_version",
    "scenario_kind",
    "precision_weights",
    "precision_activations",
    "batch_size",
    "system_name",
    "accelerator_vendor",
    "accelerator_model",
    "accelerator_count",
    "submitter",
    "source",
    "started_at",
    "headline_metric",
    "headline_value",
    "headline_unit",
    "headline_lower_is_better",
    "software_summary",
    "origin_round",
    "origin_division",
    "origin_category",
    "origin_availability",
)
KEY_COLUMNS = tuple(Submission.KEY_COLUMNS.items())  # (axis, column)


@dataclass(frozen=True)
class Finding:
    """One mismatch. `seq`, `run`, `checkpoint` (a stored checkpoint's id) or `file` says what it is about."""

    message: str
    seq: int | None = None
    run: int | None = None
    checkpoint: int | None = None
    file: str | None = None
    column: str | None = None  # the stored column that does not match, when one can be named

    def __str__(self) -> str:
        where = (
            f"entry #{self.seq}"
            if self.seq is not None
            else f"run {self.run}"
            if self.run is not None
            else f"checkpoint {self.checkpoint}"
            if self.checkpoint is not None
            else f"file {self.file}"
        )
        return f"{where}: {self.message}"


@dataclass
class Report:
    """What `verify_log` read and what did not match; `ok` when nothing."""

    size: int = 0
    root: bytes = b""
    checkpoints: int = 0
    files: int = 0
    runs: int = 0
    withdrawals: int = 0
    findings: list[Finding] = field(default_factory=list)
    cosigned: list[tuple[str, int]] = field(default_factory=list)  # (checkpoint, witnesses) meeting the quorum

    @property
    def ok(self) -> bool:
        return not self.findings

    def first_entry(self) -> Finding | None:
        """The mismatch with the lowest entry number (the first entry that does not match)."""
        return min((f for f in self.findings if f.seq is not None), key=lambda f: f.seq or 0, default=None)

    def first_run(self) -> Finding | None:
        return min((f for f in self.findings if f.run is not None), key=lambda f: f.run or 0, default=None)


def verify_log(
    *,
    checkpoint_files: Sequence[tuple[str, bytes]] = (),
    keys: Sequence[str | VerifierKey] | None = None,
    witnesses: Sequence[str] = (),
    quorum: int = 0,
) -> Report:
    """Check everything listed in the module docstring. `checkpoint_files` are (name, signed note bytes);
    `keys` are the verifier keys to trust (default: the registry's current and configured earlier keys).

    With `quorum` > 0, every checkpoint file (or, without files, the latest stored checkpoint with its
    cosignatures) must carry valid cosignatures by at least `quorum` of `witnesses` (cosignature/v1 verifier keys).
    """
    trusted = list(keys) if keys else list(trusted_verifier_keys())
    report = Report()
    # Entries queued by committed changes are numbered first, so every committed change has its entry to check.
    from registry.services.audit import audit_integrate  # services build on this package's keys

    audit_integrate()
    tree = MerkleTree(_verify_entries(report))
    report.size, report.root = tree.size, tree.root()
    _verify_head(report)
    _verify_stored_checkpoints(report, tree, trusted)
    _verify_checkpoint_files(report, tree, trusted, checkpoint_files)
    if quorum > 0:
        _verify_witnesses(report, checkpoint_files, witnesses, quorum)
    _verify_runs(report)
    _verify_run_entries(report)
    _verify_withdrawals(report)
    return report


# -- entries -------------------------------------------------------------------------------------------------------


def _verify_entries(report: Report) -> list[bytes]:
    """Leaf hashes recomputed from the entry texts, in order; mismatches go to the report.

    The loop is the cost of `audit verify` at a million entries, so the common case (everything agrees) is kept
    tight: orjson parses the text, and the time column comes from the database already spelled as entries
    spell it (PostgreSQL), so one string comparison checks it; anything that differs takes the careful path.
    """
    leaves: list[bytes] = []
    append = leaves.append
    expected = 0
    key = commitment_key()
    query = (
        AuditEntry.objects.order_by("seq")
        .annotate(created_text=_time_as_entry_text())
        .values_list(
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
    )
    for seq, created_text, actor, kind, subject, text, stored_leaf, fmt, user, token in _stream(query):
        if seq != expected:
            missing = f"entry #{expected} is" if seq == expected + 1 else f"entries #{expected}..#{seq - 1} are"
            report.findings.append(Finding(f"missing: {missing} not stored", seq=expected))
            expected = seq
        raw = text.encode()
        leaf = sha256(LEAF_PREFIX + raw).digest()
        if leaf.hex() != stored_leaf:
            report.findings.append(Finding("the entry text does not hash to the stored leaf hash", seq=seq))
        # Format 2 and 3 entries are public and leave the actor's name out of the text; format 3 commits to it
        # (registry/audit/entries.py).
        try:
            entry = orjson.loads(raw)
            agrees = (
                type(entry) is dict
                and entry.get("seq") == seq
                and entry.get("kind") == kind
                and entry.get("subject") == subject
                and entry.get("time") == created_text
                and (
                    entry.get("actor") == actor and "v" not in entry
                    if fmt == 1
                    else entry.get("v") == fmt and "actor" not in entry
                )
            )
        except orjson.JSONDecodeError:  # not JSON, or a number orjson does not take: the careful path decides
            entry, agrees = None, False
        if not agrees:
            columns = {
                "seq": seq,
                "kind": kind,
                "subject": subject,
                **({"actor": actor} if fmt == 1 else {}),
                "v": None if fmt == 1 else fmt,
            }
            if message := _entry_disagrees(text, columns, created_text):
                report.findings.append(Finding(message, seq=seq))
        if fmt >= 3 or (fmt == 2 and (user is not None or token is not None)):
            who = entry.get("who") if type(entry) is dict else None
            if who != actor_commitment(seq=seq, actor=actor, user=user, token=token, key=key):
                report.findings.append(_who_differs(seq, who, key, "actor, actor_user, actor_token"))
        append(leaf)
        expected += 1
    return leaves


def _who_differs(
    seq: int, who: object, key: CommitmentKey, columns: str, *, run: int | None = None, column: str | None = None
) -> Finding:
    """An entry's `who` does not commit to the stored columns: rewritten (or, under another key, unverifiable)."""
    where = {"run": run, "column": column} if run is not None else {"seq": seq, "column": "actor"}
    if not isinstance(who, str) or not who.startswith(WHO_PREFIX):
        return Finding(
            f"audit entry #{seq} commits to nobody (no `who`), yet the columns {columns} name someone", **where
        )
    key_id = who[len(WHO_PREFIX) :].partition(":")[0]
    if key_id != key.key_id:
        return Finding(
            f"audit entry #{seq} was committed under key {key_id}, the registry holds key {key.key_id} "
            "(BENCHREG_AUDIT_COMMITMENT_KEY): who did it cannot be checked",
            **where,
        )
    return Finding(
        f"audit entry #{seq}'s commitment to who did it does not match the stored {columns}: "
        "rewritten after the entry was logged",
        **where,
    )


def _stream(query: Any) -> Iterator[tuple[Any, ...]]:
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


def _verify_head(report: Report) -> None:
    head = AuditHead.objects.filter(id=1).values_list("size", flat=True).first()
    last = AuditEntry.objects.order_by("-seq").values_list("seq", flat=True).first()
    table_size = 0 if last is None else last + 1
    if head != table_size:
        report.findings.append(
            Finding(f"the head row says {head} entries, the table ends at {table_size}", seq=min(head or 0, table_size))
        )


# -- checkpoints ---------------------------------------------------------------------------------------------------


def _check_note(tree: MerkleTree, trusted: Sequence[str | VerifierKey], note: bytes) -> tuple[int, str | None]:
    """(size the note claims, None) if the log extends the signed checkpoint, else (size or -1, why not)."""
    try:
        checkpoint, _ = open_note(note, trusted)
    except NoteError as exc:
        return -1, f"the signature does not verify with the trusted keys: {exc}"
    if checkpoint.origin != log_origin():
        return checkpoint.size, f"it is a checkpoint of {checkpoint.origin!r}, not of {log_origin()!r}"
    if checkpoint.size > tree.size:
        return checkpoint.size, (
            f"it covers {checkpoint.size} entries but the log has only {tree.size}: entries were removed"
        )
    if tree.root(checkpoint.size) != checkpoint.root_hash:
        return checkpoint.size, (
            f"no longer consistent with the log: the first {checkpoint.size} entries now have "
            f"root {tree.root(checkpoint.size).hex()}, the checkpoint signed "
            f"{checkpoint.root_hash.hex()}"
        )
    return checkpoint.size, None


def _verify_stored_checkpoints(report: Report, tree: MerkleTree, trusted: Sequence[str | VerifierKey]) -> None:
    rows = Checkpoint.objects.order_by("id").values_list("id", "size", "root_hash", "note")
    good: list[int] = []
    bad: list[tuple[int, int, str]] = []
    for pk, size, root_hex, note in rows.iterator(chunk_size=CHUNK):
        report.checkpoints += 1
        claimed, problem = _check_note(tree, trusted, note.encode())
        if problem is None and (claimed != size or tree.root(size).hex() != root_hex):
            problem = "its size or root columns differ from its signed note"
        if problem is None:
            good.append(size)
        else:
            bad.append((pk, claimed, problem))
    for pk, claimed, problem in bad:
        where, _ = _bracket(good, claimed, tree.size)
        report.findings.append(Finding(problem + where, checkpoint=pk))


def _bracket(good: Sequence[int], claimed: int, size: int) -> tuple[str, int | None]:
    """The last checkpoint that still matches below a failing one brackets where the log was changed: words for it,
    and the first entry that can be bad (named as the first mismatching entry when it is the only one)."""
    since = max((s for s in good if s < claimed), default=0)
    if not 0 <= since < claimed <= size:
        return "", None
    if claimed - since == 1:
        return f" (entry #{since} was changed)", since
    return f" (an entry in #{since}..#{claimed - 1} was changed)", None


def _verify_checkpoint_files(
    report: Report, tree: MerkleTree, trusted: Sequence[str | VerifierKey], files: Sequence[tuple[str, bytes]]
) -> None:
    good: list[int] = []
    bad: list[tuple[str, int, str]] = []
    for name, note in files:
        report.files += 1
        claimed, problem = _check_note(tree, trusted, note)
        if problem is None:
            good.append(claimed)
        else:
            bad.append((name, claimed, problem))
    for name, claimed, problem in bad:
        where, seq = _bracket(good, claimed, tree.size)
        report.findings.append(
            Finding(f"{problem}{where}" if seq is None else f"{name}: {problem}{where}", file=name, seq=seq)
        )


def _verify_witnesses(
    report: Report, files: Sequence[tuple[str, bytes]], witnesses: Sequence[str], quorum: int
) -> None:
    """Each checkpoint relied on carries cosignatures by at least `quorum` of the given witnesses."""
    notes = list(files)
    if not notes:
        latest = Checkpoint.objects.filter(cosignatures__isnull=False).order_by("-id").first()
        if latest is None:
            report.findings.append(
                Finding(f"no stored checkpoint is cosigned; {quorum} witness cosignature(s) required", checkpoint=0)
            )
            return
        notes = [(f"stored checkpoint {latest.pk}", cosigned_note(latest).encode())]
    for name, note in notes:
        try:
            found = verify_cosignatures(note, list(witnesses))
        except (NoteError, UnicodeDecodeError) as exc:
            report.findings.append(Finding(f"cannot read its cosignatures: {exc}", file=name))
            continue
        if len(found) < quorum:
            report.findings.append(
                Finding(
                    f"cosigned by {len(found)} of the {len(witnesses)} given witnesses, {quorum} required", file=name
                )
            )
        else:
            report.cosigned.append((name, len(found)))


# -- runs and withdrawals ------------------------------------------------------------------------------------------


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
    "trust",
    "submitted_at",
    "submitted_by_id",
    "submitted_by_name",
    "token_id",
)
_RUN_ENTRY_COLUMNS = ("seq", "entry", "format", "actor", "actor_user", "actor_token")
_DATETIME_COLUMNS = frozenset({"started_at", "submitted_at"})


def _runs_with_entries() -> Iterator[tuple[Any, ...]]:
    """Every run with its run.submitted entry (None columns when it has none), by run id, from a server-side cursor.

    One join streamed CHUNK rows at a time: the database matches a run to its entry by digest (both indexed), so
    memory stays flat at a million runs and there is no query per run."""
    q = connection.ops.quote_name
    columns = [f"s.{q(c)}" for c in _RUN_COLUMNS] + [f"e.{q(c)}" for c in _RUN_ENTRY_COLUMNS]
    sql = (
        f"SELECT {', '.join(columns)} FROM {q(Submission._meta.db_table)} s "  # noqa: S608 (constant names)
        f"LEFT JOIN {q(AuditEntry._meta.db_table)} e ON e.{q('subject')} = s.{q('digest')} AND e.{q('kind')} = %s "
        f"ORDER BY s.{q('id')}, e.{q('seq')}"
    )
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, [AuditKind.RUN_SUBMITTED.value])
        while rows := cursor.fetchmany(CHUNK):
            yield from rows


def _verify_runs(report: Report) -> None:
    """Each run against its canonical text and its logged entry (module docstring, 4)."""
    key = commitment_key()
    width = len(_RUN_COLUMNS)
    previous = None
    for row in _runs_with_entries():
        run = dict(zip(_RUN_COLUMNS, row[:width], strict=True))
        entry = dict(zip(_RUN_ENTRY_COLUMNS, row[width:], strict=True))
        if run["id"] == previous:  # a second run.submitted entry for the same digest
            report.findings.append(
                Finding(
                    f"a second run.submitted audit entry #{entry['seq']} records its digest",
                    run=run["id"],
                    seq=entry["seq"],
                )
            )
            continue
        previous = run["id"]
        report.runs += 1
        for name in _DATETIME_COLUMNS:
            run[name] = _as_datetime(run[name])
        _verify_run_text(report, run)
        if entry["seq"] is None:
            report.findings.append(
                Finding(f"no run.submitted audit entry records its digest {run['digest']}", run=run["id"])
            )
        else:
            _verify_run_entry(report, run, entry, key)


def _as_datetime(value: Any) -> Any:
    """A datetime column read by a raw cursor: PostgreSQL gives aware datetimes, SQLite naive UTC text."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _mismatch(run: int, column: str, stored: Any, expected: Any, source: str) -> Finding:
    return Finding(f"column {column} is {_shown(stored)}, {source} says {_shown(expected)}", run=run, column=column)


def _shown(value: Any) -> str:
    return repr(value.isoformat()) if isinstance(value, datetime) else repr(value)


def _verify_run_text(report: Report, run: dict[str, Any]) -> None:
    """The digest, the JSON document and every column derived from the canonical text, recomputed from it."""
    pk, canonical = run["id"], run["canonical"]
    if (actual := digest_of(canonical.encode())) != run["digest"]:
        report.findings.append(
            Finding(f"the stored text hashes to {actual}, the run's digest is {run['digest']}", run=pk, column="digest")
        )
        return
    parsed = _loads(canonical)
    document = run["document"]
    stored = _loads(document) if isinstance(document, str) else document
    # Most documents come back spelled as sent: one C-speed comparison of sorted dumps (which tells true from 1 and
    # 1.0 from 1) settles them; the rest (JSONB's decimal spellings) are compared number by number.
    if not (
        ((dumped := _sorted_dump(parsed)) is not None and dumped == _sorted_dump(stored)) or same_json(parsed, stored)
    ):
        report.findings.append(Finding("column document differs from the canonical text", run=pk, column="document"))
    expected = summarize(parsed).columns()
    for name in SUMMARY_COLUMNS:
        if expected[name] != run[name]:
            report.findings.append(_mismatch(pk, name, run[name], expected[name], "the canonical text"))
    keys = comparability_keys(parsed)
    for axis, column in KEY_COLUMNS:
        if keys[axis] != run[column]:
            report.findings.append(_mismatch(pk, column, run[column], keys[axis], "the canonical text"))


def _loads(text: str) -> Any:
    """orjson where it can (several times faster); json for what it refuses (integers beyond 64 bits)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _sorted_dump(value: Any) -> bytes | None:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits: the careful comparison decides
        return None


def _verify_run_entry(report: Report, run: dict[str, Any], entry: dict[str, Any], key: CommitmentKey) -> None:
    """The run's row against its run.submitted entry: the entry rebuilt from the row must be the logged one.

    The entry's text is checked against its leaf hash and the signed tree elsewhere; here every field of it that
    the row also holds is compared, column by column."""
    pk, seq, fmt = run["id"], entry["seq"], entry["format"]
    logged = _parse(entry["entry"])
    payload = logged.get("payload") if isinstance(logged.get("payload"), dict) else {}
    source = f"audit entry #{seq}"
    if payload.get("run") != pk and fmt != 1:
        report.findings.append(_mismatch(pk, "id", pk, payload.get("run"), source))
    if (fmt != 1 or "trust" in payload) and payload.get("trust") != run["trust"]:
        report.findings.append(_mismatch(pk, "trust", run["trust"], payload.get("trust"), source))
    if fmt != 1 and logged.get("time") != entry_time(run["submitted_at"]):
        report.findings.append(
            _mismatch(pk, "submitted_at", entry_time(run["submitted_at"]), logged.get("time"), source)
        )
    # Who stored it. Format 3 commits name, user and token in the logged text: recomputed from the run's own row,
    # so a rewrite of the run's columns shows even when the entry's columns were rewritten to match.
    who = {
        "submitted_by_name": ("actor", run["submitted_by_name"]),
        "submitted_by": ("actor_user", run["submitted_by_id"]),
        "token": ("actor_token", run["token_id"]),
    }
    if fmt >= 3:
        committed = actor_commitment(
            seq=seq, actor=run["submitted_by_name"], user=run["submitted_by_id"], token=run["token_id"], key=key
        )
        if logged.get("who") != committed:
            named = [(column, value, entry[field]) for column, (field, value) in who.items() if value != entry[field]]
            if not named:  # the entry's columns were rewritten to match the run: the commitment alone says so
                named = [(column, value, None) for column, (_, value) in who.items()]
            for column, stored, expected in named:
                finding = _who_differs(
                    seq, logged.get("who"), key, "submitted_by_name, submitted_by, token", run=pk, column=column
                )
                detail = f" (the entry's column says {expected!r})" if expected is not None else ""
                report.findings.append(
                    Finding(f"column {column} is {stored!r}: {finding.message}{detail}", run=pk, column=column)
                )
    elif run["submitted_by_name"] != entry["actor"]:  # format 1 and 2 hold the name in an uncommitted column only
        report.findings.append(
            _mismatch(pk, "submitted_by_name", run["submitted_by_name"], entry["actor"], f"{source}'s actor column")
        )


def _verify_run_entries(report: Report) -> None:
    """Every run.submitted entry has its run (subjects are run digests); the other way is _verify_runs'."""
    submitted = AuditEntry.objects.filter(kind=AuditKind.RUN_SUBMITTED)
    for seq, subject in (
        submitted.exclude(subject__in=Submission.objects.values("digest")).order_by("seq").values_list("seq", "subject")
    ):
        report.findings.append(Finding(f"records run {subject}, and no stored run has that digest", seq=seq))


def _verify_withdrawals(report: Report) -> None:
    """Every withdrawal has its run.withdrawn entry with the same reason (and in format 3 the same person and time),
    and every such entry its withdrawal."""
    key = commitment_key()
    entries = {
        subject: (seq, text, fmt, actor, user)
        for seq, subject, text, fmt, actor, user in AuditEntry.objects.filter(kind=AuditKind.RUN_WITHDRAWN).values_list(
            "seq", "subject", "entry", "format", "actor", "actor_user"
        )
    }
    for withdrawal in Withdrawal.objects.select_related("submission").order_by("id"):
        report.withdrawals += 1
        seq, text, fmt, actor, user = entries.pop(withdrawal.submission.digest, (None, None, None, None, None))
        run = withdrawal.submission_id
        if text is None:
            report.findings.append(Finding("its withdrawal has no run.withdrawn audit entry", run=run))
            continue
        logged = _parse(text)
        if not _same_reason(_payload(text), withdrawal.reason):
            report.findings.append(
                Finding(f"its withdrawal reason differs from audit entry #{seq}", run=run, column="withdrawal.reason")
            )
        if fmt is not None and fmt >= 3:
            if logged.get("time") != entry_time(withdrawal.withdrawn_at):
                report.findings.append(
                    _mismatch(
                        run,
                        "withdrawal.withdrawn_at",
                        entry_time(withdrawal.withdrawn_at),
                        logged.get("time"),
                        f"audit entry #{seq}",
                    )
                )
            committed = actor_commitment(
                seq=seq, actor=withdrawal.withdrawn_by_name, user=withdrawal.withdrawn_by_id, key=key
            )
            if logged.get("who") != committed:
                differ = (
                    ("withdrawal.withdrawn_by", withdrawal.withdrawn_by_id != user),
                    ("withdrawal.withdrawn_by_name", withdrawal.withdrawn_by_name != actor),
                )
                columns = [column for column, differs in differ if differs]
                stored = {
                    "withdrawal.withdrawn_by": withdrawal.withdrawn_by_id,
                    "withdrawal.withdrawn_by_name": withdrawal.withdrawn_by_name,
                }
                for column in columns or list(stored):
                    finding = _who_differs(seq, logged.get("who"), key, "withdrawn_by_name, withdrawn_by")
                    report.findings.append(
                        Finding(f"column {column} is {stored[column]!r}: {finding.message}", run=run, column=column)
                    )
        elif withdrawal.withdrawn_by_name != actor:
            report.findings.append(
                _mismatch(
                    run,
                    "withdrawal.withdrawn_by_name",
                    withdrawal.withdrawn_by_name,
                    actor,
                    f"audit entry #{seq}'s actor column",
                )
            )
    for seq, *_ in sorted(entries.values()):
        report.findings.append(Finding("records a withdrawal that is not stored", seq=seq))


def _same_reason(payload: dict[str, object], reason: str) -> bool:
    """Format 1 entries hold the reason, format 2 entries its SHA-256 (reasons are not public)."""
    if "reason_sha256" in payload:
        return payload["reason_sha256"] == withdrawal_reason_digest(reason)
    return payload.get("reason") == reason


def _parse(text: str | None) -> dict[str, Any]:
    try:
        parsed = json.loads(text or "")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _payload(text: str) -> dict[str, object]:
    try:
        payload = json.loads(text).get("payload")
    except (ValueError, AttributeError):
        return {}
    return payload if isinstance(payload, dict) else {}
