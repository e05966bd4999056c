"""The evidence a decision report carries inside itself: one JSON attachment, hashed and named in the signature.

Layout (kind "benchreg.report-evidence/1"), serialised as RFC 8785 canonical JSON so its digest is reproducible:

    report      id, title, decision, prices, currency, requested_by, requested_at
    registry    log origin, the verifier key that signed the checkpoint and the log's current one (C2SP; they
                differ after a key rotation), the report certificate bundle (PEM) and its SHA-256 fingerprint
    checkpoint  the signed note (C2SP checkpoint) the proofs are against: note text, size, root hash (hex),
                origin and the time it was signed
    comparison  id, digest, and `canonical`: the exact RFC 8785 text of {"inputs", "result"} that hashes to digest
    contract    the comparability contract document and its digest
    runs        in the comparison's order: id, digest, `canonical` (the exact text that hashes to digest),
                submitter, submitted_by, submitted_at, agent, trust (how the run came in: vouched, declared,
                imported; never example), and `audit`: the run's "run.submitted" entry text, its seq (leaf
                index), leaf hash, and the RFC 9162 inclusion proof in the checkpoint's tree
    decision    only in a report issued from a decision: id, title, the answer's number and digest, and
                `canonical`: the exact RFC 8785 text of the answer (candidates, frontier, gaps, cited runs) that
                hashes to digest; every run attached is one the answer cites

Texts that are hashed travel as strings, never re-serialised, so anyone can hash them again byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import protocol
from protocol import comparability
from registry.audit.keys import checkpoint_key, log_origin
from registry.choices import AuditKind
from registry.exceptions import RegistryError
from registry.models import AuditEntry, Checkpoint, DecisionReport, Report, Submission
from registry.reports import EVIDENCE_KIND
from registry.reports.signing import SigningIdentity
from registry.selectors.audit import audit_inclusion, cosigned_note


@dataclass(frozen=True)
class Evidence:
    """The evidence value, its canonical bytes (the attachment) and their digest ('sha256:<hex>')."""

    document: dict[str, Any]
    canonical: bytes
    digest: str


def evidence_build(
    *, report: Report, runs: Sequence[Submission], checkpoint: Checkpoint, identity: SigningIdentity
) -> Evidence:
    """Assemble the evidence of `report` against `checkpoint`. Raises RegistryError if a run is not in the log
    below the checkpoint (then the report cannot prove it, and must not be issued)."""
    contract = comparability.contract_document()
    document = {
        "kind": EVIDENCE_KIND,
        "report": _report_section(report),
        "registry": _registry_section(checkpoint, identity),
        # The note carries the witnesses' cosignature lines, if any: the cosigned checkpoint the report
        # was issued under. Verifiers that know only the log's key ignore those lines.
        "checkpoint": _checkpoint_section(checkpoint),
        "comparison": _comparison_section(report),
        "contract": {"digest": protocol.digest(contract), "document": contract},
        "runs": [_run(i, run, checkpoint) for i, run in enumerate(runs)],
    }
    decision = _decision_section(report)
    if decision is not None:
        document["decision"] = decision
    canonical = protocol.canonicalize(document)
    return Evidence(document, canonical, protocol.digest_of(canonical))


def _report_section(report: Report) -> dict[str, Any]:
    return {
        "id": report.pk,
        "title": report.title,
        "decision": report.decision,
        "prices": dict(report.prices or {}),
        "currency": report.currency,
        "requested_by": report.requested_by_name,
        "requested_at": _iso(report.created_at),
    }


def _registry_section(checkpoint: Checkpoint, identity: SigningIdentity) -> dict[str, Any]:
    return {
        "log_origin": log_origin(),
        "checkpoint_verifier_key": checkpoint.vkey,
        "checkpoint_current_key": checkpoint_key().vkey,
        "report_certificates_pem": identity.public_pem().decode("ascii"),
        "report_certificate_sha256": identity.fingerprint(),
    }


def _checkpoint_section(checkpoint: Checkpoint) -> dict[str, Any]:
    return {
        "note": cosigned_note(checkpoint),
        "id": checkpoint.pk,
        "size": checkpoint.size,
        "root_hash": checkpoint.root_hash,
        "origin": checkpoint.origin,
        "signed_at": _iso(checkpoint.created_at),
    }


def _comparison_section(report: Report) -> dict[str, Any]:
    return {
        "id": report.comparison.pk,
        "digest": report.comparison.digest,
        "canonical": report.comparison.canonical,
    }


def _decision_section(report: Report) -> dict[str, Any] | None:
    """The decision and answer `report` was issued from; None for a report issued from a comparison."""
    issued_from = DecisionReport.objects.filter(report=report).select_related("decision", "answer").first()
    if issued_from is None:
        return None
    answer = issued_from.answer
    return {
        "id": issued_from.decision_id,
        "title": issued_from.decision.title,
        "answer": answer.number,
        "digest": answer.digest,
        "canonical": protocol.canonicalize(answer.answer).decode(),
    }


def _run(position: int, run: Submission, checkpoint: Checkpoint) -> dict[str, Any]:
    audit = _audit_proof(run, checkpoint)
    job = getattr(run, "job", None)
    agent = (run.document.get("provenance") or {}).get("agent") or (job.agent_name if job is not None else None)
    return {
        "position": position,
        "id": run.pk,
        "digest": run.digest,
        "canonical": run.canonical,
        "system": run.system_name,
        "submitter": run.submitter,
        "submitted_by": run.submitted_by_name,
        "submitted_at": _iso(run.submitted_at),
        "agent": agent,
        "trust": run.trust,
        "audit": audit,
        "citations": [c.as_evidence() for c in run.citations.order_by("retrieved_at", "pk")],
    }


def _audit_proof(run: Submission, checkpoint: Checkpoint) -> dict[str, Any]:
    """The run's "run.submitted" entry below the checkpoint and its inclusion proof against the checkpoint's root."""
    entry = _logged_entry(run, checkpoint)
    proof = audit_inclusion(entry=entry.seq, size=checkpoint.size)
    if proof.root_hash.hex() != checkpoint.root_hash:
        raise RegistryError(
            f"the log's root at size {checkpoint.size} differs from the signed checkpoint: run `benchreg audit verify`",
            code="audit-log-inconsistent",
            status=500,
        )
    return {
        "seq": entry.seq,
        "entry": entry.entry,
        "leaf_hash": entry.leaf_hash,
        "tree_size": proof.tree_size,
        "inclusion_proof": [h.hex() for h in proof.proof],
    }


def _logged_entry(run: Submission, checkpoint: Checkpoint) -> AuditEntry:
    entry: AuditEntry | None = (
        AuditEntry.objects.filter(kind=AuditKind.RUN_SUBMITTED, subject=run.digest).order_by("seq").first()
    )
    if entry is None or entry.seq >= checkpoint.size:
        raise RegistryError(
            f"run {run.pk} ({run.digest}) has no run.submitted entry in the audit log below "
            f"checkpoint size {checkpoint.size}",
            code="run-not-logged",
        )
    return entry


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None
