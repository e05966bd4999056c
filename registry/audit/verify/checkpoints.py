"""`audit verify`, parts 2 and 3: every stored checkpoint and every checkpoint file a reviewer kept (signed notes)
verifies with a trusted key and its root is the root of the first `size` leaves as recomputed from the entry texts
now, so a rewrite of the log *and* its stored checkpoints still shows against a copy held outside the database;
and, when asked, each checkpoint relied on carries enough witnesses' cosignatures."""

from __future__ import annotations

from collections.abc import Sequence

from protocol.cosignature import verify_cosignatures
from protocol.signed_note import NoteError, VerifierKey, open_note
from protocol.transparency import MerkleTree
from registry.audit.keys import log_origin
from registry.audit.verify.entries import CHUNK
from registry.audit.verify.findings import Finding, Report
from registry.models import Checkpoint
from registry.selectors.audit import cosigned_note


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


def verify_stored_checkpoints(report: Report, tree: MerkleTree, trusted: Sequence[str | VerifierKey]) -> None:
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


def verify_checkpoint_files(
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


def verify_witnesses(report: Report, files: Sequence[tuple[str, bytes]], witnesses: Sequence[str], quorum: int) -> None:
    """Each checkpoint relied on carries cosignatures by at least `quorum` of the given witnesses."""
    notes = list(files) or _latest_cosigned(report, quorum)
    for name, note in notes:
        try:
            found = verify_cosignatures(note, list(witnesses))
        except (NoteError, UnicodeDecodeError) as exc:
            report.findings.append(Finding(f"cannot read its cosignatures: {exc}", file=name))
            continue
        if len(found) < quorum:
            message = f"cosigned by {len(found)} of the {len(witnesses)} given witnesses, {quorum} required"
            report.findings.append(Finding(message, file=name))
        else:
            report.cosigned.append((name, len(found)))


def _latest_cosigned(report: Report, quorum: int) -> list[tuple[str, bytes]]:
    """The latest stored checkpoint with its cosignatures; none, and a finding, if no stored checkpoint has any."""
    latest = Checkpoint.objects.filter(cosignatures__isnull=False).order_by("-id").first()
    if latest is None:
        message = f"no stored checkpoint is cosigned; {quorum} witness cosignature(s) required"
        report.findings.append(Finding(message, checkpoint=0))
        return []
    return [(f"stored checkpoint {latest.pk}", cosigned_note(latest).encode())]
