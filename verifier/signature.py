"""The report's signature: intact, valid, by the registry, covering the whole file with no change after signing,
its unsigned container holding nothing but the signature, and its timestamp (when present) by a trusted authority."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from asn1crypto import cms as asn1_cms
from asn1crypto import parser as asn1_parser
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from pyhanko.sign.diff_analysis.policy_api import ModificationLevel
from pyhanko.sign.fields import MDPPerm
from pyhanko.sign.validation import validate_pdf_signature
from pyhanko.sign.validation.status import PdfSignatureStatus, SignatureCoverageLevel
from pyhanko_certvalidator import CertificateValidator, ValidationContext
from pyhanko_certvalidator.errors import PathError, ValidationError

from verifier.verdict import Verdict, iso, over_bounds, short


def signature_checks(verdict: Verdict, sig: Any, certificates: Sequence[x509.Certificate]) -> str:
    """Add the signature checks; return the signed /Reason text (names the evidence digest)."""
    roots = [asn1_x509.Certificate.load(c.public_bytes(serialization.Encoding.DER)) for c in certificates]
    context = ValidationContext(trust_roots=roots, allow_fetching=False, revocation_mode="soft-fail")
    try:
        status = validate_pdf_signature(sig, signer_validation_context=context, ts_validation_context=context)
    except Exception as exc:
        if not over_bounds(verdict, exc):
            verdict.add("signature-valid", False, f"the signature cannot be read or checked: {short(exc)}")
        return ""
    _integrity_checks(verdict, status)
    _signer_check(verdict, status, certificates, context)
    _coverage_checks(verdict, sig, status)
    _timestamp_check(verdict, status)
    verdict.report["signed_at"] = iso(getattr(status, "signer_reported_dt", None))
    return str(sig.sig_object.get("/Reason", ""))


def _integrity_checks(verdict: Verdict, status: Any) -> None:
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


def _signer_check(
    verdict: Verdict, status: Any, certificates: Sequence[x509.Certificate], context: ValidationContext
) -> None:
    """Whether the signer's certificate is one of the registry's and chains to a trusted root: a check of the
    certificate alone. A changed page or signature value is signature-intact's or signature-valid's reason, and must
    not also make the registry's untouched certificate read as untrusted."""
    signer = x509.load_der_x509_certificate(status.signing_cert.dump())
    verdict.report["signer"] = signer.subject.rfc4514_string()
    known = signer in certificates
    ok = known and _chain_verifies(status, context)
    verdict.add(
        "signer-is-registry",
        ok,
        f"signed by {signer.subject.rfc4514_string()}, one of the registry's certificates"
        if ok
        else f"signed by {signer.subject.rfc4514_string()}, which is "
        f"{'not a certificate of this registry' if not known else 'not trusted: its chain does not verify'}",
    )


def _chain_verifies(status: Any, context: ValidationContext) -> bool:
    """Whether the signer's certificate chains to a trusted root, whatever happened to the signed bytes.

    pyHanko's `status.trusted` also demands that the document be intact, and when the signature value does not
    verify it never builds the chain at all; so its chain result is read directly, and built here when skipped."""
    if status.valid:  # pyHanko built and checked the chain; its outcome is these two fields
        return status.trust_problem_indic is None and status.validation_path is not None
    validator = CertificateValidator(status.signing_cert, validation_context=context)
    try:  # the key usage pyHanko demands of a PDF signer
        # pyhanko-certvalidator's method has no annotations; it returns the path or raises
        asyncio.run(validator.async_validate_usage(PdfSignatureStatus.key_usage))  # type: ignore[no-untyped-call]
    except (PathError, ValidationError):
        return False
    return True


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
    _certification_check(verdict, sig, status)


def _certification_check(verdict: Verdict, sig: Any, status: Any) -> None:
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


def container_check(verdict: Verdict, pdf: bytes, sig: Any) -> None:
    """The one span the signature cannot cover, its own /Contents, must hold exactly the signature: its DER in
    upper-case hex as the registry writes it, then zero padding. Otherwise bytes could be changed there (a hex
    digit's case, a bag certificate, the padding) and the file would still pass as signed."""
    start, length, end, _ = (int(x) for x in sig.sig_object["/ByteRange"])
    inner = pdf[start + length + 1 : end - 1]
    try:
        raw = bytes.fromhex(inner.decode("ascii"))
        _, _, _, header, contents, _ = asn1_parser.parse(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        verdict.add("signature-container", False, f"the signature container is not hex-encoded DER: {short(exc)}")
        return
    # (parse errors of the certificates below propagate to verify_report's net, which reports them as INVALID)
    size = len(header) + len(contents)
    exact = inner == raw[:size].hex().upper().encode() + b"0" * (len(inner) - 2 * size)
    broken = _unsigned_certificate_problems(raw[:size]) if exact else []
    _container_verdict(verdict, exact, broken)


def _container_verdict(verdict: Verdict, exact: bool, broken: list[str]) -> None:
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
        return [f"the signature container is not well-formed: {short(exc).splitlines()[0]}"]
    signed = info["content"]
    tokens = _timestamp_tokens(signed)
    for data in (signed, *tokens):  # the digest-algorithm set is unsigned too: it must name what the signers use
        used = {si["digest_algorithm"]["algorithm"].native for si in data["signer_infos"]}
        if {a["algorithm"].native for a in data["digest_algorithms"]} != used:
            return ["the signature container's digest-algorithm list differs from the algorithms its signers use"]
    bags = [signed["certificates"], *(token["certificates"] for token in tokens)]
    certificates = [c.chosen for bag in bags for c in bag or []]
    if asn1_cms.ContentInfo.load(der).dump(force=True) != der:  # re-encoded from its values: DER is unique
        return ["the signature container is not the DER encoding of what it holds: it was altered"]
    for data in (signed, *tokens):
        if not _versions_as_rfc5652_says(data):
            return ["a version number in the signature container is not the one RFC 5652 sets: it was altered"]
        if not all(_names_exactly(info["sid"], certificates) for info in data["signer_infos"]):
            return [
                "a signer's identifier in the signature container does not name its certificate byte for byte: it "
                "was altered (the identifier is not signed, and verifiers match names loosely)"
            ]
    return _unverified([x509.load_der_x509_certificate(c.dump()) for c in certificates])


def _versions_as_rfc5652_says(data: Any) -> bool:
    """SignedData's and each SignerInfo's version are unsigned numbers that RFC 5652 (5.1, 5.3) fixes from the rest
    of the structure; a verifier ignores them, so a changed one would leave the file verifying."""
    infos = data["signer_infos"]
    if any(i["version"].native != ("v1" if i["sid"].name == "issuer_and_serial_number" else "v3") for i in infos):
        return False
    kinds = {c.name for c in data["certificates"] or []}
    if "other" in kinds:
        wanted = "v5"
    elif "v2_attr_cert" in kinds:
        wanted = "v4"
    elif (
        "v1_attr_cert" in kinds
        or any(i["version"].native == "v3" for i in infos)
        or data["encap_content_info"]["content_type"].native != "data"
    ):
        wanted = "v3"
    else:
        wanted = "v1"
    return bool(data["version"].native == wanted)


def _names_exactly(sid: Any, certificates: list[Any]) -> bool:
    """Whether a SignerInfo's `sid` names one carried certificate exactly: the issuer's encoding byte for byte and
    the serial number (or the subject key identifier). No signature covers the sid, and signature verifiers match
    it as RFC 5280 compares names, ignoring case: a flipped bit that changed a letter's case there left the file
    verifying."""
    if sid.name == "issuer_and_serial_number":
        issuer, serial = sid.chosen["issuer"].dump(), sid.chosen["serial_number"].native
        return any(c["tbs_certificate"]["issuer"].dump() == issuer and c.serial_number == serial for c in certificates)
    return any(c.key_identifier == sid.chosen.native for c in certificates)


def _timestamp_tokens(signed: Any) -> list[Any]:
    """The signed data of each timestamp token in the signer infos' unsigned attributes."""
    return [
        token["content"]
        for info in signed["signer_infos"]
        for attr in info["unsigned_attrs"] or []
        if attr["type"].native == "signature_time_stamp_token"
        for token in attr["values"]
    ]


def _unverified(carried: list[x509.Certificate]) -> list[str]:
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
    verdict.report["timestamp"] = iso(token.timestamp)
    verdict.add(
        "timestamp",
        ok,
        f"timestamp {iso(token.timestamp)} by a trusted timestamp authority"
        if ok
        else "the timestamp token does not verify or its authority is not trusted",
    )
