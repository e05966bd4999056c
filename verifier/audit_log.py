"""The report's audit-log proofs: the embedded checkpoint is signed by a trusted audit-log key, and each run's
`run.submitted` entry (read with protocol.audit_entries) is about that run and included in it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from protocol.audit_entries import is_submission_of
from protocol.signed_note import NoteError, VerifierKey, open_note
from protocol.transparency import leaf_hash, verify_inclusion
from verifier.verdict import Verdict, run_name


def log_checks(verdict: Verdict, evidence: Mapping[str, Any], log_keys: Sequence[str | VerifierKey]) -> None:
    note = str((evidence.get("checkpoint") or {}).get("note", ""))
    try:
        checkpoint, _ = open_note(note.encode(), list(log_keys))
    except NoteError as exc:
        verdict.add("checkpoint-signature", False, f"the audit-log checkpoint does not verify: {exc}")
        return
    verdict.add(
        "checkpoint-signature",
        True,
        f"checkpoint of {checkpoint.size} entries signed by the audit log's key ({checkpoint.origin})",
    )
    failures = [f for run in evidence.get("runs") or [] if (f := _inclusion_failure(run, checkpoint))]
    verdict.add(
        "inclusion-proofs",
        not failures,
        "; ".join(failures) or f"every run's log entry is included in the checkpoint of {checkpoint.size} entries",
    )


def _inclusion_failure(run: Mapping[str, Any], checkpoint: Any) -> str | None:
    audit = run.get("audit") or {}
    text = str(audit.get("entry", ""))
    try:
        entry = json.loads(text)
        proof = [bytes.fromhex(h) for h in audit.get("inclusion_proof") or []]
    except (ValueError, TypeError):
        return f"{run_name(run)}: its log entry or proof is malformed"
    if not is_submission_of(entry, digest=run.get("digest"), seq=audit.get("seq")):
        return f"{run_name(run)}: log entry #{audit.get('seq')} is not this run's submission"
    if not verify_inclusion(
        leaf_hash(text.encode()), int(audit.get("seq", -1)), checkpoint.size, proof, checkpoint.root_hash
    ):
        return f"{run_name(run)}: the inclusion proof of entry #{audit.get('seq')} does not verify"
    return None
