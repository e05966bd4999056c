"""Re-verify the whole audit log from the database, as a governance reviewer would, and say what does not match.

What is checked (`verify_log`):
  1. every entry: its text hashes to its stored leaf hash; its text agrees with its columns (seq, time, actor,
     kind, subject); the sequence has no gaps; the head row counts them all;
  2. every stored checkpoint: its signature verifies with a trusted key and its root is the root of the first
     `size` leaves as recomputed from the entry texts now;
  3. every checkpoint file a reviewer kept (signed notes): the same, so a rewrite of the log *and* its stored
     checkpoints still shows against a copy held outside the database;
  4. every run: its canonical text hashes to its digest, its document and indexed columns are read from that
     text, and it has its `run.submitted` entry (and every such entry its run); withdrawals likewise.

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
from protocol.cosignature import verify_cosignatures
from protocol.signed_note import NoteError, VerifierKey, open_note
from protocol.transparency import MerkleTree
from registry.audit.entries import withdrawal_reason_digest
from registry.audit.keys import log_origin, trusted_verifier_keys
from registry.choices import AuditKind
from registry.models import AuditEntry, AuditHead, Checkpoint, Submission, Withdrawal
from registry.selectors.audit import cosigned_note

CHUNK = 10_000
LEAF_PREFIX = b"\x00"  # RFC 9162 leaf hash: SHA-256(0x00 || entry), as protocol.transparency.leaf_hash
SUMMARY_COLUMNS = ("protocol_version", "phase", "workload_name", "workload_version", "scenario_kind",
                   "precision_weights", "precision_activations", "batch_size", "system_name", "accelerator_vendor",
                   "accelerator_model", "accelerator_count", "submitter", "source", "started_at",
                   "headline_metric", "headline_value", "headline_unit", "headline_lower_is_better", "software_summary")


@dataclass(frozen=True)
class Finding:
    """One mismatch. `seq`, `run`, `checkpoint` (a stored checkpoint's id) or `file` says what it is about."""

    message: str
    seq: int | None = None
    run: int | None = None
    checkpoint: int | None = None
    file: str | None = None

    def __str__(self) -> str:
        where = (f"entry #{self.seq}" if self.seq is not None else f"run {self.run}" if self.run is not None
                 else f"checkpoint {self.checkpoint}" if self.checkpoint is not None else f"file {self.file}")
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


def verify_log(*, checkpoint_files: Sequence[tuple[str, bytes]] = (),
               keys: Sequence[str | VerifierKey] | None = None, witnesses: Sequence[str] = (),
               quorum: int = 0) -> Report:
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
    query = (AuditEntry.objects.order_by("seq").annotate(created_text=_time_as_entry_text())
             .values_list("seq", "created_text", "actor", "kind", "subject", "entry", "leaf_hash", "format"))
    for seq, created_text, actor, kind, subject, text, stored_leaf, fmt in _stream(query):
        if seq != expected:
            missing = f"entry #{expected} is" if seq == expected + 1 else f"entries #{expected}..#{seq - 1} are"
            report.findings.append(Finding(f"missing: {missing} not stored", seq=expected))
            expected = seq
        raw = text.encode()
        leaf = sha256(LEAF_PREFIX + raw).digest()
        if leaf.hex() != stored_leaf:
            report.findings.append(Finding("the entry text does not hash to the stored leaf hash", seq=seq))
        # Format 2 entries are public and leave the actor out of the text (registry/audit/entries.py).
        try:
            entry = orjson.loads(raw)
            agrees = (type(entry) is dict and entry.get("seq") == seq and entry.get("kind") == kind
                      and entry.get("subject") == subject and entry.get("time") == created_text
                      and (entry.get("actor") == actor and "v" not in entry if fmt == 1
                           else entry.get("v") == fmt and "actor" not in entry))
        except orjson.JSONDecodeError:  # not JSON, or a number orjson does not take: the careful path decides
            agrees = False
        if not agrees:
            columns = {"seq": seq, "kind": kind, "subject": subject, **({"actor": actor} if fmt == 1 else {}),
                       "v": None if fmt == 1 else fmt}
            if message := _entry_disagrees(text, columns, created_text):
                report.findings.append(Finding(message, seq=seq))
        append(leaf)
        expected += 1
    return leaves


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
        return Func(F("created_at"), template="to_char(%(expressions)s AT TIME ZONE 'UTC', "
                                              "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')", output_field=CharField())
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
            stored if stored.tzinfo else stored.replace(tzinfo=UTC))
    except ValueError:
        return False


def _verify_head(report: Report) -> None:
    head = AuditHead.objects.filter(id=1).values_list("size", flat=True).first()
    last = AuditEntry.objects.order_by("-seq").values_list("seq", flat=True).first()
    table_size = 0 if last is None else last + 1
    if head != table_size:
        report.findings.append(Finding(f"the head row says {head} entries, the table ends at {table_size}",
                                       seq=min(head or 0, table_size)))


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
        return checkpoint.size, (f"it covers {checkpoint.size} entries but the log has only {tree.size}: "
                                 "entries were removed")
    if tree.root(checkpoint.size) != checkpoint.root_hash:
        return checkpoint.size, (f"no longer consistent with the log: the first {checkpoint.size} entries now have "
                                 f"root {tree.root(checkpoint.size).hex()}, the checkpoint signed "
                                 f"{checkpoint.root_hash.hex()}")
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


def _verify_checkpoint_files(report: Report, tree: MerkleTree, trusted: Sequence[str | VerifierKey],
                             files: Sequence[tuple[str, bytes]]) -> None:
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
        report.findings.append(Finding(f"{problem}{where}" if seq is None else f"{name}: {problem}{where}",
                                       file=name, seq=seq))


def _verify_witnesses(report: Report, files: Sequence[tuple[str, bytes]], witnesses: Sequence[str],
                      quorum: int) -> None:
    """Each checkpoint relied on carries cosignatures by at least `quorum` of the given witnesses."""
    notes = list(files)
    if not notes:
        latest = Checkpoint.objects.filter(cosignatures__isnull=False).order_by("-id").first()
        if latest is None:
            report.findings.append(Finding(f"no stored checkpoint is cosigned; {quorum} witness cosignature(s) "
                                           "required", checkpoint=0))
            return
        notes = [(f"stored checkpoint {latest.pk}", cosigned_note(latest).encode())]
    for name, note in notes:
        try:
            found = verify_cosignatures(note, list(witnesses))
        except (NoteError, UnicodeDecodeError) as exc:
            report.findings.append(Finding(f"cannot read its cosignatures: {exc}", file=name))
            continue
        if len(found) < quorum:
            report.findings.append(Finding(f"cosigned by {len(found)} of the {len(witnesses)} given witnesses, "
                                           f"{quorum} required", file=name))
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
        return (isinstance(stored, dict) and parsed.keys() == stored.keys()
                and all(same_json(v, stored[k]) for k, v in parsed.items()))
    if isinstance(parsed, list):
        return (isinstance(stored, list) and len(parsed) == len(stored)
                and all(same_json(a, b) for a, b in zip(parsed, stored, strict=True)))
    numbers = (int, float)
    if isinstance(parsed, numbers) and not isinstance(parsed, bool):
        if not isinstance(stored, numbers) or isinstance(stored, bool):
            return False
        either_double = isinstance(parsed, float) or isinstance(stored, float)
        return float(parsed) == float(stored) if either_double else parsed == stored
    return type(parsed) is type(stored) and parsed == stored


def _verify_runs(report: Report) -> None:
    rows = Submission.objects.order_by("id").values_list("id", "digest", "canonical", "document", *SUMMARY_COLUMNS)
    for pk, digest, canonical, document, *columns in rows.iterator(chunk_size=1000):
        report.runs += 1
        if (actual := digest_of(canonical.encode())) != digest:
            report.findings.append(Finding(f"the stored text hashes to {actual}, the run's digest is {digest}",
                                           run=pk))
            continue
        parsed = json.loads(canonical)
        if not same_json(parsed, document):
            report.findings.append(Finding("the stored JSON document differs from the canonical text", run=pk))
        expected = summarize(parsed).columns()
        differ = [name for name, value in zip(SUMMARY_COLUMNS, columns, strict=True) if expected[name] != value]
        if differ:
            report.findings.append(Finding(f"columns differ from the canonical text: {', '.join(differ)}", run=pk))


def _verify_run_entries(report: Report) -> None:
    """Every run has its run.submitted entry and every such entry its run (subjects are run digests)."""
    submitted = AuditEntry.objects.filter(kind=AuditKind.RUN_SUBMITTED)
    for pk, digest in (Submission.objects.exclude(digest__in=submitted.values("subject"))
                       .order_by("id").values_list("id", "digest")):
        report.findings.append(Finding(f"no run.submitted audit entry records its digest {digest}", run=pk))
    for seq, subject in (submitted.exclude(subject__in=Submission.objects.values("digest"))
                         .order_by("seq").values_list("seq", "subject")):
        report.findings.append(Finding(f"records run {subject}, and no stored run has that digest", seq=seq))


def _verify_withdrawals(report: Report) -> None:
    """Every withdrawal has its run.withdrawn entry with the same reason, and every such entry its withdrawal."""
    entries = {subject: (seq, text) for seq, subject, text in
               AuditEntry.objects.filter(kind=AuditKind.RUN_WITHDRAWN).values_list("seq", "subject", "entry")}
    for withdrawal in Withdrawal.objects.select_related("submission").order_by("id"):
        report.withdrawals += 1
        seq, text = entries.pop(withdrawal.submission.digest, (None, None))
        run = withdrawal.submission_id
        if text is None:
            report.findings.append(Finding("its withdrawal has no run.withdrawn audit entry", run=run))
        elif not _same_reason(_payload(text), withdrawal.reason):
            report.findings.append(Finding(f"its withdrawal reason differs from audit entry #{seq}", run=run))
    for seq, _ in sorted(entries.values()):
        report.findings.append(Finding("records a withdrawal that is not stored", seq=seq))


def _same_reason(payload: dict[str, object], reason: str) -> bool:
    """Format 1 entries hold the reason, format 2 entries its SHA-256 (reasons are not public)."""
    if "reason_sha256" in payload:
        return payload["reason_sha256"] == withdrawal_reason_digest(reason)
    return payload.get("reason") == reason


def _payload(text: str) -> dict[str, object]:
    try:
        payload = json.loads(text).get("payload")
    except (ValueError, AttributeError):
        return {}
    return payload if isinstance(payload, dict) else {}
