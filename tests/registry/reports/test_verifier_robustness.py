"""Whatever a report file holds, verification answers INVALID with reasons: never a traceback, never a 500.

A seeded fuzz over one real signed report: byte flips spread across the whole file, truncations at every tenth
of it, incremental updates appended, and one flipped byte inside the embedded evidence's compressed stream (the
case that used to end in a zlib traceback). Then the standalone verifier: `benchreg verify` runs without Django,
its settings or database, from the report and the registry's published certificate and log key alone.
"""

from __future__ import annotations

import io
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyhanko.pdf_utils.reader import PdfFileReader

from verifier import ATTACHMENT_NAME

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("django", "celery", "jsonschema", "matplotlib", "weasyprint", "numpy", "rest_framework")


def assert_invalid_with_reasons(rendered, pdf: bytes) -> set[str]:
    verdict = rendered.verify(pdf)  # raising here is the failure this test exists for
    assert not verdict.valid, [i for i, (a, b) in enumerate(zip(pdf, rendered.pdf, strict=False)) if a != b][:3]
    assert verdict.reasons and all(r.message for r in verdict.reasons)
    return {r.code for r in verdict.reasons}


def test_byte_flips_anywhere_in_the_file_are_invalid_never_a_crash(rendered):
    rng = random.Random(2126)
    size = len(rendered.pdf)
    # Evenly spread (every region: header, pages, fonts, attachment, xref, signature, trailer) plus random ones.
    positions = sorted({int(size * k / 40) for k in range(40)} | {rng.randrange(size) for _ in range(40)})
    unexpected = []
    for at in positions:
        pdf = bytearray(rendered.pdf)
        pdf[at] ^= 1 << rng.randrange(8)
        codes = assert_invalid_with_reasons(rendered, bytes(pdf))
        if "report-checkable" in codes:
            unexpected.append(at)
    # The safety net may catch a rare odd case, but the named checks must explain nearly every flip.
    assert len(unexpected) <= len(positions) // 10, unexpected


def test_truncated_files_are_invalid_never_a_crash(rendered):
    size = len(rendered.pdf)
    for cut in [0, 1, 8, 100, *(int(size * k / 10) for k in range(1, 10)), size - 200, size - 30, size - 1]:
        codes = assert_invalid_with_reasons(rendered, rendered.pdf[:cut])
        assert codes & {
            "pdf-readable",
            "signature-present",
            "signature-intact",
            "covers-entire-file",
            "report-checkable",
            "signature-valid",
        }, (cut, codes)


def test_appended_updates_and_garbage_are_invalid(rendered):
    appended = [
        b"%%EOF\n",
        b"\n1 0 obj\n<< /Type /Catalog >>\nendobj\n%%EOF\n",
        bytes(range(256)) * 4,
        b"xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 1 /Prev 999999999 >>\nstartxref\n12\n%%EOF\n",
    ]
    for tail in appended:
        codes = assert_invalid_with_reasons(rendered, rendered.pdf + tail)
        assert "covers-entire-file" in codes or "pdf-readable" in codes, codes


def test_a_flipped_byte_in_the_attached_evidence_stream_is_invalid_with_the_reason(rendered):
    reader = PdfFileReader(io.BytesIO(rendered.pdf))
    spec = dict(zip(*[iter(reader.root["/Names"]["/EmbeddedFiles"]["/Names"])] * 2, strict=True))[ATTACHMENT_NAME]
    raw = spec.get_object()["/EF"]["/F"].get_object().encoded_data
    at = rendered.pdf.index(raw) + len(raw) // 2
    pdf = bytearray(rendered.pdf)
    pdf[at] ^= 0x20
    verdict = rendered.verify(bytes(pdf))
    codes = {r.code for r in verdict.reasons}
    assert not verdict.valid
    assert "signature-intact" in codes
    assert codes & {"evidence-attached", "evidence-digest"}, verdict.lines()
    assert "report-checkable" not in codes, verdict.lines()


def test_the_verify_endpoint_answers_invalid_for_a_damaged_attachment_not_500(rendered, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    reader = PdfFileReader(io.BytesIO(rendered.pdf))
    spec = dict(zip(*[iter(reader.root["/Names"]["/EmbeddedFiles"]["/Names"])] * 2, strict=True))[ATTACHMENT_NAME]
    raw = spec.get_object()["/EF"]["/F"].get_object().encoded_data
    at = rendered.pdf.index(raw) + 7
    pdf = rendered.pdf[:at] + bytes([rendered.pdf[at] ^ 0xFF]) + rendered.pdf[at + 1 :]
    for body in (pdf, rendered.pdf[: len(rendered.pdf) // 2], b"%PDF-1.7\n" + os.urandom(2000)):
        answer = client.post(
            "/api/v1/reports/verify", {"file": SimpleUploadedFile("r.pdf", body, content_type="application/pdf")}
        )
        assert answer.status_code == 200, answer.content[:300]
        assert answer.json()["verdict"] == "INVALID" and answer.json()["reasons"]


# ------------------------------------------------------------------------------------------ standalone verifier


def _benchreg(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE", "BENCHREG"))}
    return subprocess.run(
        [sys.executable, "-c", "import sys; from registry.cli import main; sys.exit(main())", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**clean, **(env or {})},
    )


def _published(rendered, tmp_path: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization

    cert = tmp_path / "registry-report-cert.pem"
    cert.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in rendered.certificates))
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(rendered.pdf)
    return cert, pdf


def test_benchreg_verify_needs_only_the_report_and_the_published_keys(rendered, tmp_path: Path):
    cert, pdf = _published(rendered, tmp_path)
    done = _benchreg("verify", str(pdf), "--cert", str(cert), "--log-key", rendered.log_keys[0])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VALID" in done.stdout.splitlines()[1] and "no registry consulted" in done.stdout
    assert done.stderr == ""  # no library's warning either (pyHanko's import of cryptography's DSA: verifier/__init__)
    tampered = tmp_path / "tampered.pdf"
    tampered.write_bytes(rendered.pdf[: len(rendered.pdf) - 500])
    done = _benchreg("verify", str(tampered), "--cert", str(cert), "--log-key", rendered.log_keys[0])
    assert done.returncode == 1 and done.stdout.startswith("INVALID"), done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_benchreg_verify_never_starts_django_nor_loads_heavy_libraries(rendered, tmp_path: Path):
    cert, pdf = _published(rendered, tmp_path)
    code = (
        "import sys; from registry.cli import main; rc = main(sys.argv[1:]); "
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}); "
        "print('HEAVY', heavy); sys.exit(rc)"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "verify",
            str(pdf),
            "--offline",
            "--cert",
            str(cert),
            "--log-key",
            rendered.log_keys[0],
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("DJANGO")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "HEAVY []" in done.stdout


def test_benchreg_verify_says_what_is_missing_without_a_traceback(tmp_path: Path):
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(b"%PDF-1.7\n")
    done = _benchreg("verify", str(pdf), "--offline")
    assert done.returncode == 2 and "--cert and --log-key" in done.stderr and "Traceback" not in done.stderr
    done = _benchreg("verify", str(tmp_path / "absent.pdf"), "--offline")
    assert done.returncode == 2 and "cannot read" in done.stderr
    done = _benchreg("verify", str(pdf), "--server", "http://127.0.0.1:9")
    assert done.returncode == 2 and "cannot ask http://127.0.0.1:9" in done.stderr and "Traceback" not in done.stderr


def _page_flipped(pdf: bytes) -> bytes:
    """The report with one byte changed inside its first page's content stream: what the page shows, not the
    evidence nor the signature."""
    page = PdfFileReader(io.BytesIO(pdf)).root["/Pages"]["/Kids"][0].get_object()
    contents = page["/Contents"]
    stream = (contents[0] if isinstance(contents, list) else contents).get_object()
    at = pdf.index(stream.encoded_data) + len(stream.encoded_data) // 2
    return pdf[:at] + bytes([pdf[at] ^ 0x01]) + pdf[at + 1 :]


def test_benchreg_verify_names_a_changed_page_and_keeps_the_untouched_certificate_trusted(rendered, tmp_path: Path):
    cert, _ = _published(rendered, tmp_path)
    tampered = tmp_path / "tampered.pdf"
    tampered.write_bytes(_page_flipped(rendered.pdf))
    done = _benchreg("verify", str(tampered), "--cert", str(cert), "--log-key", rendered.log_keys[0])
    assert done.returncode == 1 and "INVALID (1 reason)" in done.stdout, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    failed = [line for line in lines if "[FAIL]" in line]
    assert len(failed) == 1 and "signature-intact: the report's pages" in failed[0], failed
    assert "the attached evidence is unchanged" in failed[0]
    # The certificate was not touched: its check says so, on the certificate alone.
    assert any("[ok] signer-is-registry: signed by" in line for line in lines), done.stdout


@pytest.mark.parametrize(
    "key",
    ["garbage", "benchreg.test/audit+bdf0e3ea+AczdjjXXX", "benchreg.test/audit+zzzzzzzz+AczdjjXXX"],
    ids=["no-parts", "short-key", "bad-id"],
)
def test_benchreg_verify_a_malformed_log_key_is_a_usage_error_not_invalid(rendered, tmp_path: Path, key: str):
    cert, pdf = _published(rendered, tmp_path)
    done = _benchreg("verify", str(pdf), "--cert", str(cert), "--log-key", key)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "INVALID" not in done.stdout and "Traceback" not in done.stderr
    assert f"--log-key: {key!r} is not an audit-log verifier key" in done.stderr, done.stderr


def test_benchreg_verify_a_log_key_of_another_id_is_a_usage_error(rendered, tmp_path: Path):
    """A key whose ID does not match its name and key (a hand-edited key) is caught before the report is read."""
    cert, pdf = _published(rendered, tmp_path)
    name, key_id, encoded = rendered.log_keys[0].split("+", 2)  # base64 may hold a "+" too
    other = f"{name}+{int(key_id, 16) ^ 1:08x}+{encoded}"
    done = _benchreg("verify", str(pdf), "--cert", str(cert), "--log-key", other)
    assert done.returncode == 2 and "INVALID" not in done.stdout, done.stdout + done.stderr
    assert "is not an audit-log verifier key" in done.stderr and "key ID" in done.stderr, done.stderr


def _signed_data_region(pdf: bytes) -> tuple[int, bytes, Any]:
    """(offset of the signature's hex in the file, its DER, the parsed CMS SignedData)."""
    from asn1crypto import cms

    start, length, end, _ = (int(x) for x in re.search(rb"/ByteRange\s*\[([\d\s]+)\]", pdf).group(1).split())
    hex_start = start + length + 1
    der = bytes.fromhex(pdf[hex_start : end - 1].decode("ascii"))
    info = cms.ContentInfo.load(der)
    size = len(info.dump())
    return hex_start, der[:size], info["content"]


def _with_der_byte(pdf: bytes, hex_start: int, at: int, value: int) -> bytes:
    """The file with byte `at` of the signature's DER set to `value` (in the upper-case hex the registry writes)."""
    out = bytearray(pdf)
    out[hex_start + 2 * at : hex_start + 2 * at + 2] = f"{value:02X}".encode()
    return bytes(out)


@pytest.mark.parametrize("signer", ["report", "timestamp"])
def test_a_letter_whose_case_changed_in_a_signers_identifier_is_invalid(rendered, signer):
    """A SignerInfo's sid (issuer and serial) is covered by no signature, and verifiers match names ignoring case:
    a bit that turned `b` into `B` there left the report VALID. It must name its certificate byte for byte."""
    hex_start, der, signed = _signed_data_region(rendered.pdf)
    info = signed["signer_infos"][0]
    if signer == "timestamp":
        (token,) = [a["values"][0] for a in info["unsigned_attrs"] if a["type"].native == "signature_time_stamp_token"]
        info = token["content"]["signer_infos"][0]
    issuer = info["sid"].chosen["issuer"].dump()
    letter = next(i for i, byte in enumerate(issuer) if 0x61 <= byte <= 0x7A)  # a lower-case ASCII letter
    at = der.find(info["sid"].dump()) + info["sid"].dump().find(issuer) + letter
    pdf = _with_der_byte(rendered.pdf, hex_start, at, der[at] ^ 0x20)
    codes = assert_invalid_with_reasons(rendered, pdf)
    assert "signature-container" in codes, codes


def test_a_signer_infos_version_changed_is_invalid(rendered):
    """SignerInfo's version is unsigned and fixed by RFC 5652 (1 with an issuer-and-serial sid): changed, the report
    is INVALID, not VALID because verifiers ignore it."""
    hex_start, der, signed = _signed_data_region(rendered.pdf)
    info = signed["signer_infos"][0]
    assert info["version"].native == "v1"
    at = der.find(info.dump()) + len(info.dump()) - len(info.contents) + 2  # INTEGER 02 01 <value>: the value
    assert der[at] == 1
    codes = assert_invalid_with_reasons(rendered, _with_der_byte(rendered.pdf, hex_start, at, 3))
    assert "signature-container" in codes, codes
