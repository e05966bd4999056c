"""Checks the audit pages show, made with the same code a reviewer runs offline (protocol.signed_note,
protocol.cosignature, protocol.transparency): a stored checkpoint's signature by the log's trusted keys, each
witness's cosignature on it, and an entry's inclusion proof recomputed from the entry's own text.

Nothing is taken from the row beside what it claims: a checkpoint's size and root come from its verified note, and
an entry's leaf hash from its text, so a rewritten entry, note or cosignature shows as not verified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from protocol.cosignature import parse_cosigner_verifier_key, verify_cosignatures
from protocol.signed_note import Checkpoint as NoteCheckpoint
from protocol.signed_note import NoteError, VerifierKey, open_note
from protocol.transparency import leaf_hash, verify_inclusion
from registry.models import AuditEntry, Checkpoint, Cosignature


@dataclass(frozen=True)
class CheckpointCheck:
    """A stored checkpoint against the trusted keys: `note` is the parsed, verified body (None if it failed)."""

    checkpoint: Checkpoint
    signed: bool
    problem: str | None
    note: NoteCheckpoint | None
    signers: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CosignatureCheck:
    """One witness's stored cosignature, verified against the witness key stored with it."""

    witness: str
    key_id: str
    vkey: str
    time: datetime | None
    verified: bool
    configured: bool


@dataclass(frozen=True)
class InclusionCheck:
    """Entry `seq` against a checkpoint of `size` entries: `verified` only if the proof leads from the leaf hash of
    the entry's text to the root the checkpoint's verified signature covers."""

    seq: int
    size: int
    verified: bool
    problem: str | None
    proof: list[bytes]
    leaf_hash: bytes | None


def checkpoint_check(checkpoint: Checkpoint, trusted: Sequence[str | VerifierKey], origin: str) -> CheckpointCheck:
    """Is this stored checkpoint signed by a trusted key, for this log, and do its columns say what it signs?"""
    try:
        note, signers = open_note(checkpoint.note.encode(), trusted)
    except NoteError as exc:
        return CheckpointCheck(checkpoint, False, f"its signature does not verify with the log's key ({exc})", None)
    problem = None
    if note.origin != origin:
        problem = f"it is signed for another log ({note.origin!r}, not {origin!r})"
    elif note.size != checkpoint.size or note.root_hash.hex() != checkpoint.root_hash:
        problem = "the size or root stored beside it differs from the signed note"
    return CheckpointCheck(checkpoint, problem is None, problem, note if problem is None else None, signers)


def cosignature_checks(checkpoint: Checkpoint, cosignatures: Sequence[Cosignature], configured: set[str]) -> list[
    CosignatureCheck
]:  # fmt: skip
    """Each cosignature line verified on the checkpoint's note with the witness key stored beside it; `configured`
    (the witnesses' verifier keys the registry trusts now) says whether that key is still one of them."""
    out = []
    for cosignature in cosignatures:
        try:
            witness = parse_cosigner_verifier_key(cosignature.vkey)
            found = verify_cosignatures((checkpoint.note + cosignature.line + "\n").encode(), [witness])
        except (NoteError, UnicodeError):
            out.append(CosignatureCheck(cosignature.witness, "", cosignature.vkey, None, False, False))
            continue
        stamp = found.get(witness.vkey)
        out.append(
            CosignatureCheck(
                witness=witness.name,
                key_id=witness.key_id.hex(),
                vkey=witness.vkey,
                time=datetime.fromtimestamp(stamp, UTC) if stamp is not None else None,
                verified=stamp is not None and stamp == cosignature.timestamp,
                configured=witness.vkey in configured,
            )
        )
    return out


def inclusion_check(
    entry: AuditEntry, signed: CheckpointCheck, proof: Sequence[bytes], *, readable: bool
) -> InclusionCheck:
    """Entry `entry` in the checkpoint `signed`, with `proof` (the audit path from the log's tree).

    The leaf is hashed from the entry's text; for a format-1 entry the caller may not read (`readable` False) the
    stored leaf hash is used and the sentence says so. The root is the one under the checkpoint's signature.
    """
    size = signed.checkpoint.size
    path = list(proof)
    if signed.note is None:
        return InclusionCheck(entry.seq, size, False, f"the checkpoint cannot be trusted: {signed.problem}", path, None)
    leaf = leaf_hash(entry.entry.encode()) if readable else bytes.fromhex(entry.leaf_hash)
    if verify_inclusion(leaf, entry.seq, signed.note.size, path, signed.note.root_hash):
        return InclusionCheck(entry.seq, size, True, None, path, leaf)
    if readable and leaf.hex() != entry.leaf_hash:
        why = "the entry's text no longer hashes to the leaf hash stored for it: the entry was changed"
    else:
        why = "the proof does not lead from this entry to the checkpoint's signed root"
    return InclusionCheck(entry.seq, size, False, why, path, leaf)
