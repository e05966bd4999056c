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
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asn1crypto import cms as asn1_cms
from asn1crypto import parser as asn1_parser
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from pyhanko.pdf_utils.decode_limits import DecodeLimits, DocumentDecodeBudget, StreamDecodeLimits
from pyhanko.pdf_utils.misc import PdfDecodeLimitError
from pyhanko.pdf_utils.reader import PdfFileReader
from pyhanko.sign.diff_analysis.policy_api import ModificationLevel
from pyhanko.sign.fields import MDPPerm
from pyhanko.sign.validation import validate_pdf_signature
from pyhanko.sign.validation.status import SignatureCoverageLevel
from pyhanko_certvalidator import ValidationContext

from protocol import canonicalize, digest_of
from protocol.signed_note import NoteError, VerifierKey, open_note
from protocol.transparency import leaf_hash, verify_inclusion
from verifier import ATTACHMENT_NAME, EVIDENCE_KIND, REASON_PREFIX

RunLookup = Callable[[Sequence[str]], Mapping[str, Mapping[str, Any]]]
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# What one verification may inflate. A registry report's largest stream is its evidence JSON (a few MiB for
# hundreds of runs); a Flate bomb of a few hundred KiB inflates to gigabytes. The total is counted per revision
# read (pyHanko gives each historical revision its own budget), and decoding stops at the bound.
MAX_STREAM_BYTES = 32 * 1024 * 1024
MAX_INFLATED_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Check:
    """One verification step: a stable code, whether it passed, and what was found, in words."""

    code: str
    ok: bool
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "ok": self.ok, "message": self.message}


@dataclass
class Verdict:
    """Every check made, what the report says about itself, and the registry's word on each run (if asked)."""

    checks: list[Check] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def reasons(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def add(self, code: str, ok: bool, message: str) -> bool:
        self.checks.append(Check(code, ok, message))
        return ok

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": "VALID" if self.valid else "INVALID",
            "valid": self.valid,
            "reasons": [c.as_dict() for c in self.reasons],
            "checks": [c.as_dict() for c in self.checks],
            "report": self.report,
            "runs": self.runs,
        }

    def lines(self) -> list[str]:
        """Human-readable verdict: the verdict first, then one line per check."""
        head = "VALID" if self.valid else f"INVALID ({len(self.reasons)} reason{'s' * (len(self.reasons) != 1)})"
        return [head, *(f"  [{'ok' if c.ok else 'FAIL'}] {c.code}: {c.message}" for c in self.checks)]


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
        if not _over_bounds(verdict, exc):
            verdict.add(
                "report-checkable",
                False,
                f"the file could not be checked to the end ({type(exc).__name__}"
                f": {_short(exc)}): it is damaged or not a report",
            )
    return verdict


def _over_bounds(verdict: Verdict, exc: BaseException) -> bool:
    """When `exc` (or what caused it) is a decoding bound being hit, say so as the check within-bounds."""
    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, PdfDecodeLimitError):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return False
    if not any(c.code == "within-bounds" for c in verdict.checks):
        verdict.add(
            "within-bounds",
            False,
            f"a compressed stream inflates beyond the verifier's bounds ({_short(seen)}"
            "): it is not a registry report, whose streams are far smaller",
        )
    return True


def _verify(
    verdict: Verdict,
    pdf: bytes,
    certificates: Sequence[x509.Certificate],
    log_keys: Sequence[str | VerifierKey],
    registry: RunLookup | None,
    limits: DecodeLimits,
) -> None:
    try:
        reader = PdfFileReader(io.BytesIO(pdf), strict=False, decode_limits=limits)
        signatures = reader.embedded_signatures
    except Exception as exc:
        if not _over_bounds(verdict, exc):
            verdict.add("pdf-readable", False, f"the file is not a readable PDF: {_short(exc)}")
        return
    verdict.add("pdf-readable", True, f"PDF with {len(pdf):,} bytes")
    if not verdict.add(
        "signature-present", len(signatures) == 1, f"{len(signatures)} signature(s) found; a report has exactly one"
    ):
        return
    reason = _signature_checks(verdict, signatures[0], certificates)
    _container_check(verdict, pdf, signatures[0])
    evidence = _evidence(verdict, reader, reason)
    if evidence is not None:
        _contents(verdict, evidence)
        _log(verdict, evidence, log_keys)
        if registry is not None:
            _registry(verdict, evidence, registry)


# ------------------------------------------------------------------------------------------ the signature


def _signature_checks(verdict: Verdict, sig: Any, certificates: Sequence[x509.Certificate]) -> str:
    """Add the signature checks; return the signed /Reason text (names the evidence digest)."""
    roots = [asn1_x509.Certificate.load(c.public_bytes(serialization.Encoding.DER)) for c in certificates]
    context = ValidationContext(trust_roots=roots, allow_fetching=False, revocation_mode="soft-fail")
    try:
        status = validate_pdf_signature(sig, signer_validation_context=context, ts_validation_context=context)
    except Exception as exc:
        if not _over_bounds(verdict, exc):
            verdict.add("signature-valid", False, f"the signature cannot be read or checked: {_short(exc)}")
        return ""
    verdict.add(
        "signature-intact",
        bool(status.intact),
        "the signed bytes are unchanged"
        if status.intact
        else "the file's bytes were changed after signing: they no longer hash to the signed digest",
    )
    verdict.add(
        "signature-valid",
        bool(status.valid),
        "the signature verifies with the signer's key"
        if status.valid
        else "the signature value does not verify (the signature was altered or forged)",
    )
    _signer_check(verdict, status, certificates)
    _coverage_checks(verdict, sig, status)
    _timestamp_check(verdict, status)
    verdict.report["signed_at"] = _iso(getattr(status, "signer_reported_dt", None))
    return str(sig.sig_object.get("/Reason", ""))


def _signer_check(verdict: Verdict, status: Any, certificates: Sequence[x509.Certificate]) -> None:
    signer = x509.load_der_x509_certificate(status.signing_cert.dump())
    verdict.report["signer"] = signer.subject.rfc4514_string()
    known = signer in certificates
    ok = known and bool(status.trusted)
    verdict.add(
        "signer-is-registry",
        ok,
        f"signed by {signer.subject.rfc4514_string()}, one of the registry's certificates"
        if ok
        else f"signed by {signer.subject.rfc4514_string()}, which is "
        f"{'not a certificate of this registry' if not known else 'not trusted: its chain does not verify'}",
    )


def _coverage_checks(verdict: Verdict, sig: Any, status: Any) -> None:
    coverage = status.coverage
    whole = coverage == SignatureCoverageLevel.ENTIRE_FILE
    if whole:
        words = "the signature covers the entire file"
    elif coverage == SignatureCoverageLevel.ENTIRE_REVISION:
        words = (
            "content was appended after the signed revision (an incremental update): the signature covers "
            "only the file as it was at signing"
        )
    else:
        words = "the signature leaves parts of the file uncovered"
    verdict.add("covers-entire-file", whole, words)
    level, docmdp = status.modification_level, sig.docmdp_level
    certified = docmdp == MDPPerm.NO_CHANGES
    unchanged = level in (None, ModificationLevel.NONE) and bool(status.docmdp_ok)
    verdict.add(
        "no-changes-after-signing",
        certified and unchanged,
        "a certification signature that permits no changes, and none were made"
        if certified and unchanged
        else (
            "not a certification signature forbidding changes"
            if not certified
            else f"changes after signing ({getattr(level, 'name', level)}) break the certification"
        ),
    )


def _container_check(verdict: Verdict, pdf: bytes, sig: Any) -> None:
    """The one span the signature cannot cover, its own /Contents, must hold exactly the signature: its DER in
    upper-case hex as the registry writes it, then zero padding. Otherwise bytes could be changed there (a hex
    digit's case, a bag certificate, the padding) and the file would still pass as signed."""
    start, length, end, _ = (int(x) for x in sig.sig_object["/ByteRange"])
    inner = pdf[start + length + 1 : end - 1]
    try:
        raw = bytes.fromhex(inner.decode("ascii"))
        _, _, _, header, contents, _ = asn1_parser.parse(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        verdict.add("signature-container", False, f"the signature container is not hex-encoded DER: {_short(exc)}")
        return
    # (parse errors of the certificates below propagate to verify_report's net, which reports them as INVALID)
    size = len(header) + len(contents)
    exact = inner == raw[:size].hex().upper().encode() + b"0" * (len(inner) - 2 * size)
    broken = _unsigned_certificate_problems(raw[:size]) if exact else []
    verdict.add(
        "signature-container",
        exact and not broken,
        "the signature container holds the signature and zero padding only, and every certificate it carries is intact"
        if exact and not broken
        else "; ".join(broken)
        or "the signature container was altered outside the signature itself (its encoding or padding differs "
        "from what the registry writes)",
    )


def _unsigned_certificate_problems(der: bytes) -> list[str]:
    """Certificates travel in the CMS (and timestamp token) certificate sets, which no signature covers: each must
    still carry a valid signature by its issuer (another carried certificate, or itself), so none was altered."""
    info = asn1_cms.ContentInfo.load(der)
    try:
        _ = info.native  # parse every part: verifiers parse lazily, so a damaged unsigned part would go unseen
    except (ValueError, TypeError, KeyError) as exc:
        return [f"the signature container is not well-formed: {_short(exc).splitlines()[0]}"]
    signed = info["content"]
    bags = [signed["certificates"]]
    for info in signed["signer_infos"]:
        for attr in info["unsigned_attrs"] or []:
            if attr["type"].native == "signature_time_stamp_token":
                bags += [token["content"]["certificates"] for token in attr["values"]]
    tokens = [
        token["content"]
        for info in signed["signer_infos"]
        for attr in info["unsigned_attrs"] or []
        if attr["type"].native == "signature_time_stamp_token"
        for token in attr["values"]
    ]
    for data in (signed, *tokens):  # the digest-algorithm set is unsigned too: it must name what the signers use
        used = {si["digest_algorithm"]["algorithm"].native for si in data["signer_infos"]}
        if {a["algorithm"].native for a in data["digest_algorithms"]} != used:
            return ["the signature container's digest-algorithm list differs from the algorithms its signers use"]
    carried = [x509.load_der_x509_certificate(c.chosen.dump()) for bag in bags for c in bag or []]
    problems = []
    for cert in carried:
        issuers = [c for c in carried if c.subject == cert.issuer]
        if not any(_issued_by(cert, issuer) for issuer in issuers):
            problems.append(
                f"the carried certificate of {cert.subject.rfc4514_string()} does not verify under its "
                "issuer: it was altered"
            )
    return problems


def _issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _timestamp_check(verdict: Verdict, status: Any) -> None:
    token = status.timestamp_validity
    if token is None:
        verdict.add("timestamp", True, "no timestamp token: the signing time is the signer's own claim")
        return
    ok = bool(token.intact and token.valid and token.trusted)
    verdict.report["timestamp"] = _iso(token.timestamp)
    verdict.add(
        "timestamp",
        ok,
        f"timestamp {_iso(token.timestamp)} by a trusted timestamp authority"
        if ok
        else "the timestamp token does not verify or its authority is not trusted",
    )


# ------------------------------------------------------------------------------------------ the evidence


def _evidence(verdict: Verdict, reader: PdfFileReader, reason: str) -> dict[str, Any] | None:
    try:
        data = _attachment(reader, ATTACHMENT_NAME)
    except Exception as exc:  # a damaged stream: zlib, PDF syntax, recursion in the name tree
        if _over_bounds(verdict, exc):
            return None
        verdict.add(
            "evidence-attached",
            False,
            f"{ATTACHMENT_NAME} is attached but cannot be read (its stream is "
            f"damaged: {type(exc).__name__}: {_short(exc)})",
        )
        return None
    if not verdict.add(
        "evidence-attached",
        data is not None,
        f"{ATTACHMENT_NAME} attached" if data is not None else f"no {ATTACHMENT_NAME} attached",
    ):
        return None
    assert data is not None
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    found = _DIGEST.search(reason) if reason.startswith(REASON_PREFIX) else None
    signed = found.group(0) if found else None
    verdict.report["evidence_digest"] = signed
    verdict.add(
        "evidence-digest",
        signed == actual,
        f"the evidence hashes to {actual}, the digest the signature names"
        if signed == actual
        else f"the evidence hashes to {actual}, but the signed digest is {signed or 'missing'}: the attachment "
        "was replaced or edited",
    )
    try:
        evidence = json.loads(data)
    except ValueError as exc:
        verdict.add("evidence-contents", False, f"the evidence is not JSON: {_short(exc)}")
        return None
    if not isinstance(evidence, dict) or evidence.get("kind") != EVIDENCE_KIND:
        verdict.add("evidence-contents", False, f"the evidence is not a {EVIDENCE_KIND} document")
        return None
    runs, report = evidence.get("runs"), evidence.get("report")
    if not isinstance(report, dict) or not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        verdict.add("evidence-contents", False, "the evidence lacks its report or runs sections")
        return None
    verdict.report.update({k: report.get(k) for k in ("id", "title", "decision", "requested_by")})
    verdict.report["runs"] = [{"id": r.get("id"), "digest": r.get("digest"), "system": r.get("system")} for r in runs]
    decision = evidence.get("decision")
    if isinstance(decision, dict):
        verdict.report["decision"] = {k: decision.get(k) for k in ("id", "title", "answer", "digest")}
    return evidence


def _attachment(reader: PdfFileReader, name: str) -> bytes | None:
    """The embedded file called `name` in the document's EmbeddedFiles name tree (latest revision)."""
    try:
        tree = reader.root["/Names"]["/EmbeddedFiles"]
    except (KeyError, TypeError):
        return None
    for key, spec in _name_tree(tree):
        spec = spec.get_object()
        if name in (key, str(spec.get("/UF", "")), str(spec.get("/F", ""))):
            return bytes(spec["/EF"]["/F"].get_object().data)
    return None


def _name_tree(node: Any, depth: int = 0) -> list[tuple[str, Any]]:
    node = node.get_object()
    pairs = list(node.get("/Names", []))
    out = [(str(pairs[i]), pairs[i + 1]) for i in range(0, len(pairs) - 1, 2)]
    if depth < 8:
        for kid in node.get("/Kids", []):
            out += _name_tree(kid, depth + 1)
    return out


def _contents(verdict: Verdict, evidence: Mapping[str, Any]) -> None:
    problems = []
    runs = evidence.get("runs") or []
    for run in runs:
        if digest_of(str(run.get("canonical", "")).encode()) != run.get("digest"):
            problems.append(f"{_run_name(run)}: its text does not hash to {run.get('digest')}")
    comparison = evidence.get("comparison") or {}
    text = str(comparison.get("canonical", ""))
    if digest_of(text.encode()) != comparison.get("digest"):
        problems.append("the comparison text does not hash to its digest")
    else:
        listed = ((json.loads(text).get("inputs") or {}).get("runs")) or []
        if listed != [r.get("digest") for r in runs]:
            problems.append("the runs attached are not the runs the comparison names")
    contract = evidence.get("contract") or {}
    if digest_of(canonicalize(contract.get("document"))) != contract.get("digest"):
        problems.append("the contract does not hash to its digest")
    decision = evidence.get("decision")
    if decision is not None:
        problems += _decision_problems(decision, runs)
    verdict.add(
        "evidence-contents",
        not problems,
        "; ".join(problems)
        or f"{len(runs)} run texts, the comparison{', the decision answer' if decision is not None else ''} "
        "and the contract hash to their digests",
    )


def _decision_problems(decision: Any, runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """A report issued from a decision carries the answer it states: its text must hash to its digest, and every
    run attached must be one that answer cites (the report compares the cited runs, never others)."""
    text = str(decision.get("canonical", "")) if isinstance(decision, dict) else ""
    if not isinstance(decision, dict) or digest_of(text.encode()) != decision.get("digest"):
        return ["the decision answer does not hash to its digest"]
    try:
        cited = set(json.loads(text).get("cited") or [])
    except (ValueError, AttributeError):
        return ["the decision answer is not a JSON object"]
    strays = [_run_name(r) for r in runs if r.get("digest") not in cited]
    return [f"{', '.join(strays)} not cited by the decision answer"] if strays else []


def _log(verdict: Verdict, evidence: Mapping[str, Any], log_keys: Sequence[str | VerifierKey]) -> None:
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
        return f"{_run_name(run)}: its log entry or proof is malformed"
    if (
        entry.get("kind") != "run.submitted"
        or entry.get("subject") != run.get("digest")
        or entry.get("seq") != audit.get("seq")
    ):
        return f"{_run_name(run)}: log entry #{audit.get('seq')} is not this run's submission"
    if not verify_inclusion(
        leaf_hash(text.encode()), int(audit.get("seq", -1)), checkpoint.size, proof, checkpoint.root_hash
    ):
        return f"{_run_name(run)}: the inclusion proof of entry #{audit.get('seq')} does not verify"
    return None


# ------------------------------------------------------------------------------------------ the registry


def _registry(verdict: Verdict, evidence: Mapping[str, Any], registry: RunLookup) -> None:
    named = list(evidence.get("runs") or [])
    digests = [str(r.get("digest")) for r in named]
    try:
        found = registry(digests)
    except Exception as exc:
        verdict.add("runs-in-registry", False, f"the registry could not be asked: {_short(exc)}")
        return
    missing, withdrawn = [], []
    for position, digest in enumerate(digests):
        status = dict(found.get(digest) or {"exists": False})
        verdict.runs.append({"position": position, "digest": digest, **status})
        name = _run_name(named[position])
        if not status.get("exists"):
            missing.append(f"{name} ({digest[:19]}…)")
        elif status.get("withdrawn"):
            w = status["withdrawn"]
            why = f": {w['reason']}" if w.get("reason") else ""
            withdrawn.append(f"{name} ({digest[:19]}…) was withdrawn on {str(w.get('at'))[:10]}{why}")
    verdict.add(
        "runs-in-registry",
        not missing,
        f"not in this registry: {', '.join(missing)}" if missing else f"all {len(digests)} runs exist in this registry",
    )
    verdict.add("runs-not-withdrawn", not withdrawn, "; ".join(withdrawn) or "no run has been withdrawn")


def _run_name(run: Mapping[str, Any]) -> str:
    """A run as the report names it everywhere: by its registry run id."""
    return f"run {run.get('id')}" if run.get("id") is not None else f"the run at position {run.get('position')}"


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else None


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 200 else text[:199] + "…"
