"""The report's summary states the comparison's own conclusion (protocol.comparability `result["conclusion"]`), with
its reasons, in one box; the cover says what it means in plain words (tests/registry/reports/test_plain_words.py)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pyhanko.pdf_utils.reader import PdfFileReader

from verifier import ATTACHMENT_NAME
from verifier.evidence import attachment

pytestmark = pytest.mark.django_db


def test_the_summary_states_the_stored_conclusion_and_its_reasons(rendered, tmp_path: Path):
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    evidence = json.loads(attachment(PdfFileReader(io.BytesIO(rendered.pdf), strict=False), ATTACHMENT_NAME) or b"")
    stated = json.loads(evidence["comparison"]["canonical"])["result"]["conclusion"]
    path = tmp_path / "report.pdf"
    path.write_bytes(rendered.pdf)
    cover = " ".join(
        subprocess.run(
            ["pdftotext", "-f", "2", "-l", "2", str(path), "-"], capture_output=True, text=True, timeout=60
        ).stdout.split()
    )
    assert " ".join(stated["statement"].split()) in cover
    for reason in stated["reasons"]:
        assert " ".join(reason["message"].split())[:60] in cover
