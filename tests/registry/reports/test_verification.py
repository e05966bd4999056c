"""A signed report verifies; each kind of tampering is INVALID with the reason that names it."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pyhanko.pdf_utils import generic
from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
from pyhanko.pdf_utils.reader import PdfFileReader

import protocol
from protocol import comparability

pytestmark = pytest.mark.django_db


def failed(verdict) -> set[str]:
    return {c.code for c in verdict.reasons}


def test_a_fresh_report_verifies(rendered):
    verdict = rendered.verify()
    assert verdict.valid, verdict.lines()
    assert verdict.as_dict()["verdict"] == "VALID"
    assert verdict.report["evidence_digest"] == rendered.evidence_digest
    assert [r["digest"] for r in verdict.report["runs"]] == rendered.digests
    assert {c.code for c in verdict.checks} >= {
        "signature-intact",
        "signer-is-registry",
        "covers-entire-file",
        "no-changes-after-signing",
        "timestamp",
        "evidence-digest",
        "inclusion-proofs",
    }


def test_a_flipped_byte_breaks_the_signature(rendered):
    pdf = bytearray(rendered.pdf)
    start = pdf.index(b"stream", len(pdf) // 3) + 40  # inside a stream, well within the signed range
    pdf[start] ^= 0x01
    verdict = rendered.verify(bytes(pdf))
    assert not verdict.valid
    assert "signature-intact" in failed(verdict)
    assert "signer-is-registry" not in failed(verdict), verdict.lines()  # the changed bytes are not the certificate


def test_a_changed_signature_value_is_reported(rendered):
    signature = PdfFileReader(io.BytesIO(rendered.pdf)).embedded_signatures[0]
    value = signature.signed_data["signer_infos"][0]["signature"].native
    pdf = rendered.pdf
    for encoded in (value.hex().encode(), value.hex().upper().encode()):
        if encoded in pdf:
            at = pdf.index(encoded) + len(encoded) // 2
            pdf = pdf[:at] + (b"0" if pdf[at : at + 1] != b"0" else b"1") + pdf[at + 1 :]
            break
    assert pdf != rendered.pdf
    verdict = rendered.verify(pdf)
    assert "signature-valid" in failed(verdict)
    assert "signature-intact" not in failed(verdict)  # the content is untouched; the signature is not
    # The certificate is untouched too: its check is made on the certificate alone (pyHanko skips the chain when
    # the signature value fails; it is built on its own then).
    assert "signer-is-registry" not in failed(verdict), verdict.lines()


def test_an_appended_incremental_update_is_reported(rendered):
    writer = IncrementalPdfFileWriter(io.BytesIO(rendered.pdf))
    page_ref, _ = writer.find_page_for_modification(0)
    page = page_ref.get_object()
    note = writer.add_object(
        generic.DictionaryObject(
            {
                generic.NameObject("/Type"): generic.NameObject("/Annot"),
                generic.NameObject("/Subtype"): generic.NameObject("/Text"),
                generic.NameObject("/Rect"): generic.ArrayObject([generic.NumberObject(n) for n in (10, 10, 30, 30)]),
                generic.NameObject("/Contents"): generic.TextStringObject("approved at a lower price"),
            }
        )
    )
    page[generic.NameObject("/Annots")] = generic.ArrayObject([note])
    writer.mark_update(page_ref)
    out = io.BytesIO()
    writer.write(out)
    verdict = rendered.verify(out.getvalue())
    assert {"covers-entire-file", "no-changes-after-signing"} <= failed(verdict)
    assert "signature-intact" not in failed(verdict)  # the signed revision itself is intact


def test_an_edited_attachment_is_reported(rendered):
    writer = IncrementalPdfFileWriter(io.BytesIO(rendered.pdf))
    spec_ref = writer.root["/Names"]["/EmbeddedFiles"]["/Names"].raw_get(1)
    spec = spec_ref.get_object()
    evidence = json.loads(spec["/EF"]["/F"].get_object().data)
    evidence["report"]["decision"] = "buy whatever the vendor says"
    edited = json.dumps(evidence, separators=(",", ":"), sort_keys=True).encode()
    stream = generic.StreamObject(
        {generic.NameObject("/Type"): generic.NameObject("/EmbeddedFile")}, stream_data=edited
    )
    spec["/EF"][generic.NameObject("/F")] = writer.add_object(stream)
    if isinstance(spec_ref, generic.IndirectObject):
        writer.mark_update(spec_ref)
    else:
        _mark_attachment_tree(writer)
    out = io.BytesIO()
    writer.write(out)
    verdict = rendered.verify(out.getvalue())
    assert "evidence-digest" in failed(verdict)
    assert "covers-entire-file" in failed(verdict)
    assert verdict.report["decision"] == "buy whatever the vendor says"  # what it says is shown, and refuted


def _mark_attachment_tree(writer: IncrementalPdfFileWriter) -> None:
    """Write the nearest indirect object holding the (direct) file specification into the update."""
    for holder, key in (
        (writer.root["/Names"]["/EmbeddedFiles"], "/Names"),
        (writer.root["/Names"], "/EmbeddedFiles"),
        (writer.root, "/Names"),
    ):
        ref = holder.raw_get(key)
        if isinstance(ref, generic.IndirectObject):
            writer.mark_update(ref)
            return
    writer.update_root()


def test_another_registrys_certificate_is_not_trusted(rendered):
    from cryptography import x509

    from registry.reports.signing import new_identity_pem

    stranger = x509.load_pem_x509_certificates(new_identity_pem())
    verdict = rendered.verify(certificates=stranger)
    assert "signer-is-registry" in failed(verdict)


def test_another_log_key_does_not_verify_the_checkpoint(rendered):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from protocol.signed_note import verifier_key

    verdict = rendered.verify(log_keys=[verifier_key("benchreg.test/audit", Ed25519PrivateKey.generate().public_key())])
    assert "checkpoint-signature" in failed(verdict)


def test_a_file_that_is_not_a_pdf_is_invalid_not_a_crash(rendered):
    verdict = rendered.verify(b"%PDF-1.7\nnot really")
    assert not verdict.valid and failed(verdict) & {"pdf-readable", "signature-present"}


@pytest.mark.services
def test_poppler_agrees_that_a_fresh_signature_is_intact(rendered, tmp_path: Path):
    if shutil.which("pdfsig") is None:
        pytest.skip("pdfsig (poppler-utils) is not installed")
    path = tmp_path / "report.pdf"
    path.write_bytes(rendered.pdf)
    out = subprocess.run(["pdfsig", str(path)], capture_output=True, text=True, timeout=60).stdout
    assert "Signature is Valid" in out
    assert "Total document signed" in out
    assert "ETSI.CAdES.detached" in out


@pytest.mark.services
def test_poppler_sees_the_appended_update(rendered, tmp_path: Path):
    if shutil.which("pdfsig") is None:
        pytest.skip("pdfsig (poppler-utils) is not installed")
    path = tmp_path / "report.pdf"
    path.write_bytes(rendered.pdf + b"\n% appended\n")
    out = subprocess.run(["pdfsig", str(path)], capture_output=True, text=True, timeout=60).stdout
    assert "Total document signed" not in out


@pytest.mark.services
def test_the_text_holds_the_decision_every_run_digest_and_the_contract(rendered, tmp_path: Path):
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    path = tmp_path / "report.pdf"
    path.write_bytes(rendered.pdf)
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, timeout=60).stdout
    flat = " ".join(text.split())
    squeezed = "".join(text.split())
    assert rendered.decision in flat
    for digest in rendered.digests:
        assert digest in squeezed
    contract = comparability.contract_document()
    assert f"comparability contract version {contract['version']}" in flat
    assert contract["$id"] in squeezed and protocol.digest(contract) in squeezed
    assert "Held identical (controlled)" in flat
    assert rendered.evidence_digest in squeezed
