"""Text a report's fonts cannot draw is written as code points (registry/reports/glyphs.py), never as empty boxes;
the writing itself is checked in tests/registry/presentation/test_codepoints.py."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from pyhanko.pdf_utils.reader import PdfFileReader

from registry.presentation.codepoints import CLOSE, OPEN
from registry.reports.glyphs import font_coverage, font_file_coverage, fontconfig_coverage
from verifier import ATTACHMENT_NAME
from verifier.evidence import attachment

from .conftest import SIZING, variant

NO_FONT = "\U0010fffd"  # plane 16's last private-use character: no font has it
RLO = "\u202e"  # right-to-left override: draws nothing, reverses what follows


def test_the_installed_fonts_have_the_report_text_and_the_brackets() -> None:
    fonts = font_coverage()
    assert {ord(c) for c in "Aé×÷≥–—·•≈±µ°" + OPEN + CLOSE} <= fonts  # DejaVu, which the report's stylesheet names
    assert ord(NO_FONT) not in fonts


def test_fontconfig_and_the_font_files_agree_on_what_is_drawn() -> None:
    """Two readings of the same fonts: fontconfig's (its cache, fast) and the files' character maps (where
    fontconfig's tools are not installed)."""
    listed = fontconfig_coverage()
    if listed is None:
        pytest.skip("fc-list (fontconfig) is not installed")
    assert listed == font_file_coverage()


@pytest.mark.django_db
def test_a_report_on_systems_named_beyond_its_fonts_writes_them_out_and_keeps_them_in_its_evidence(
    user: Any,
) -> None:
    from registry.models import AuditHead
    from registry.reports.context import report_context
    from registry.services.comparisons import comparison_create
    from registry.services.reports import report_bytes, report_render, report_request
    from registry.services.submissions import submission_create

    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    AuditHead.objects.get_or_create(id=1)
    names = [f"lab{RLO}10h-{NO_FONT}", "lab-⟦U+6771⟧-02", "lab-mi300-03"]
    docs = []
    for i, name in enumerate(names):
        doc = variant(name, 1260.8 + 150 * i, seed=i)
        doc["system"]["accelerators"][0]["model"] = f"accel-{i}{NO_FONT}"  # configurations are named by it
        docs.append(doc)
    runs = [submission_create(document=d, submitted_by=user)[0] for d in docs]
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, sizing=SIZING)
    title = f"Servers for Tōkyō {NO_FONT}"
    report = report_render(
        report_id=report_request(comparison=comparison, title=title, decision="pick one", requested_by=user).pk
    )
    assert report.status == "ready", report.last_error
    pdf = report_bytes(report)
    path = Path(tempfile.mkdtemp()) / "report.pdf"
    path.write_bytes(pdf)
    # -layout: without it pdftotext joins a word broken after a hyphen and drops the hyphen
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, timeout=60).stdout
    words = " ".join(text.split())

    assert NO_FONT not in text and RLO not in text  # nothing on a page is drawn as an empty box or obeyed unseen
    assert "Servers for Tōkyō ⟦U+10FFFD⟧" in words
    assert "lab⟦U+202E⟧10h-" in words  # a narrow cell breaks the name after its hyphen
    assert "lab-⟦U+27E6⟧U+6771⟧-02" in words
    assert "written as Unicode code points in white square brackets, such as ⟦U+0041⟧ for A" in words
    evidence = json.loads(attachment(PdfFileReader(io.BytesIO(pdf), strict=False), ATTACHMENT_NAME))
    stored = {json.loads(r["canonical"])["system"]["name"] for r in evidence["runs"]}
    assert stored == set(names)  # the evidence holds the names as submitted
    context = report_context(evidence, certificate={})
    drawn = "".join(chart["svg"] for chart in context["charts"])
    assert drawn and "accel-0⟦U+10FFFD⟧" in drawn and NO_FONT not in drawn


@pytest.mark.django_db
def test_an_ordinary_report_writes_no_code_points(user: Any) -> None:
    """The report's own words and figures are all in its fonts: the brackets appear only for submitted text."""
    from registry.models import AuditHead

    from .conftest import make_report

    AuditHead.objects.get_or_create(id=1)
    report = make_report(user)
    from registry.services.reports import report_bytes

    path = Path(tempfile.mkdtemp()) / "report.pdf"
    path.write_bytes(report_bytes(report))
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, timeout=60).stdout
    assert text and OPEN not in text and "code points" not in text
