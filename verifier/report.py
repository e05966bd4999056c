"""Verify a decision report PDF: VALID only when every check passes; otherwise INVALID with each failed check.

Plain Python, no Django: the caller passes the registry's report certificates, the audit log's verifier keys and,
optionally, `registry`, a function answering for run digests whether the registry holds them and whether they were
withdrawn (from the local database, or over HTTP). Whatever the file holds (truncated, flipped bytes, appended
updates, a damaged attachment stream), the answer is a verdict, never an exception. Runs are named by their registry
run id, as the report and its evidence name them. Checks, each with a stable code:

  report-checkable          (only when it fails) the file broke the verifier somewhere unexpected; says where
  within-bounds             (only when it fails) a compressed stream inflates beyond the verifier's bounds (a Flate
                            bomb): nothing past that point is checked, and no more than the bounds is inflated

  pdf-readable              the file parses as a PDF
  signature-present         exactly one signature
  signature-intact          the signed byte ranges hash to the digest the signature covers
  signature-valid           the CMS signature verifies with the signer's public key
  signer-is-registry        the signer's certificate is one of the registry's and chains to a trusted root
  signature-container       the signature's /Contents holds exactly its DER (upper-case hex) and zero padding
  covers-entire-file        the signature covers every byte: nothing was appended (no incremental update)
  no-changes-after-signing  a certification signature forbidding changes (DocMDP 1), and no change was found
  timestamp                 when a timestamp token is present, it is intact and by a trusted TSA
  evidence-attached         the evidence JSON is attached
  evidence-digest           it hashes to the digest named in the signed /Reason (the one printed in the report)
  evidence-contents         each run text hashes to its digest; comparison and contract likewise; runs match
  checkpoint-signature      the embedded checkpoint is signed by a trusted audit-log key
  inclusion-proofs          each run's log entry is about that run, and its inclusion proof verifies
  runs-in-registry          (with `registry`) every run exists in this registry
  runs-not-withdrawn        (with `registry`) no run has been withdrawn since; each withdrawal is reported

This module runs the checks in that order and asks the registry; the signature checks are verifier/signature.py,
the evidence checks verifier/evidence.py, the checkpoint and inclusion proofs verifier/audit_log.py, and the
verdict they add to verifier/verdict.py.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cryptography import x509
from pyhanko.pdf_utils.decode_limits import DecodeLimits, DocumentDecodeBudget, StreamDecodeLimits
from pyhanko.pdf_utils.reader import PdfFileReader

from protocol.numbers import number
from protocol.signed_note import VerifierKey
from verifier.audit_log import log_checks
from verifier.evidence import contents_check, read_evidence
from verifier.signature import container_check, signature_checks
from verifier.verdict import Verdict, over_bounds, run_name, short

RunLookup = Callable[[Sequence[str]], Mapping[str, Mapping[str, Any]]]
# What one verification may inflate. A registry report's largest stream is its evidence JSON (a few MiB for
# hundreds of runs); a Flate bomb of a few hundred KiB inflates to gigabytes. The total is counted per revision
# read (pyHanko gives each historical revision its own budget), and decoding stops at the bound.
MAX_STREAM_BYTES = 32 * 1024 * 1024
MAX_INFLATED_BYTES = 64 * 1024 * 1024


def load_certificates(pem: bytes) -> list[x509.Certificate]:
    """Every certificate in a PEM bundle (the registry serves its bundle at /api/v1/reports/certificate)."""
    return x509.load_pem_x509_certificates(pem)


def verify_report(
    pdf: bytes,
    *,
    certificates: Sequence[x509.Certificate],
    log_keys: Sequence[str | VerifierKey],
    registry: RunLookup | None = None,
    max_stream_bytes: int = MAX_STREAM_BYTES,
    max_inflated_bytes: int = MAX_INFLATED_BYTES,
) -> Verdict:
    """Check `pdf` as described in the module docstring. Never raises for a bad file: that is a failed check.

    No stream inflates to more than `max_stream_bytes`, nor all streams of a revision to more than
    `max_inflated_bytes`; past either, decoding stops and the verdict is INVALID with the check within-bounds."""
    verdict = Verdict()
    limits = DecodeLimits(
        per_stream=StreamDecodeLimits(max_output_size=max_stream_bytes),
        document_budget=DocumentDecodeBudget(base_allowance=max_inflated_bytes, max_ratio=0),
    )
    try:
        _verify(verdict, pdf, certificates, log_keys, registry, limits)
    except Exception as exc:  # any malformed input must end as INVALID with its reason
        if not over_bounds(verdict, exc):
            _uncheckable(verdict, exc)
    return verdict


def _uncheckable(verdict: Verdict, exc: Exception) -> None:
    verdict.add(
        "report-checkable",
        False,
        f"the file could not be checked to the end ({type(exc).__name__}: {short(exc)}): it is damaged or not a report",
    )


def _verify(
    verdict: Verdict,
    pdf: bytes,
    certificates: Sequence[x509.Certificate],
    log_keys: Sequence[str | VerifierKey],
    registry: RunLookup | None,
    limits: DecodeLimits,
) -> None:
    opened = _read_pdf(verdict, pdf, limits)
    if opened is None:
        return
    reader, signatures = opened
    count = len(signatures)
    if not verdict.add("signature-present", count == 1, f"{count} signature(s) found; a report has exactly one"):
        return
    reason = signature_checks(verdict, signatures[0], certificates)
    container_check(verdict, pdf, signatures[0])
    evidence = read_evidence(verdict, reader, reason)
    if evidence is not None:
        _evidence_checks(verdict, evidence, log_keys, registry)
    _name_the_change(verdict)


def _name_the_change(verdict: Verdict) -> None:
    """When the signed bytes changed, say what changed: the evidence checks know whether the attached evidence still
    hashes to the digest the signature names. If it does, the change is in what the pages show (or the file's
    structure), not in the evidence; the reader should not take it for an edit of the runs, nor the reverse."""
    intact = verdict.check("signature-intact")
    if intact is None or intact.ok:
        return
    digest = verdict.check("evidence-digest")
    why = "the signed bytes no longer hash to the digest the signature covers"
    if digest is not None and digest.ok:
        words = (
            f"the report's pages or the file's structure were changed after signing ({why}); the attached evidence "
            "is unchanged: it still hashes to the digest the signature names"
        )
    elif digest is not None:
        words = f"the attached evidence was changed after signing: it no longer hashes to its signed digest ({why})"
    else:
        words = f"the file was changed after signing ({why}), its attached evidence too: it cannot be read"
    verdict.amend("signature-intact", words)


def _evidence_checks(
    verdict: Verdict, evidence: dict[str, Any], log_keys: Sequence[str | VerifierKey], registry: RunLookup | None
) -> None:
    contents_check(verdict, evidence)
    log_checks(verdict, evidence, log_keys)
    if registry is not None:
        _registry(verdict, evidence, registry)


def _read_pdf(verdict: Verdict, pdf: bytes, limits: DecodeLimits) -> tuple[PdfFileReader, list[Any]] | None:
    """(the reader, its embedded signatures), with the pdf-readable check; None when unreadable."""
    try:
        reader = PdfFileReader(io.BytesIO(pdf), strict=False, decode_limits=limits)
        signatures = reader.embedded_signatures
    except Exception as exc:
        if not over_bounds(verdict, exc):
            verdict.add("pdf-readable", False, f"the file is not a readable PDF: {short(exc)}")
        return None
    verdict.add("pdf-readable", True, f"PDF with {number(len(pdf))} bytes")
    return reader, list(signatures)


def _registry(verdict: Verdict, evidence: Mapping[str, Any], registry: RunLookup) -> None:
    named = list(evidence.get("runs") or [])
    digests = [str(r.get("digest")) for r in named]
    try:
        found = registry(digests)
    except Exception as exc:
        verdict.add("runs-in-registry", False, f"the registry could not be asked: {short(exc)}")
        return
    missing, withdrawn = _run_statuses(verdict, named, digests, found)
    verdict.add(
        "runs-in-registry",
        not missing,
        f"not in this registry: {', '.join(missing)}" if missing else f"all {len(digests)} runs exist in this registry",
    )
    verdict.add("runs-not-withdrawn", not withdrawn, "; ".join(withdrawn) or "no run has been withdrawn")


def _run_statuses(
    verdict: Verdict, named: list[Any], digests: list[str], found: Mapping[str, Mapping[str, Any]]
) -> tuple[list[str], list[str]]:
    """Record each run's status in the verdict; (the runs missing, the runs withdrawn), described."""
    missing, withdrawn = [], []
    for position, digest in enumerate(digests):
        status = dict(found.get(digest) or {"exists": False})
        verdict.runs.append({"position": position, "digest": digest, **status})
        name = run_name(named[position])
        if not status.get("exists"):
            missing.append(f"{name} ({digest[:19]}…)")
        elif status.get("withdrawn"):
            w = status["withdrawn"]
            why = f": {w['reason']}" if w.get("reason") else ""
            withdrawn.append(f"{name} ({digest[:19]}…) was withdrawn on {str(w.get('at'))[:10]}{why}")
    return missing, withdrawn
