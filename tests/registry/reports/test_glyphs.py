"""Text a report's fonts cannot draw is written as code points (registry/reports/glyphs.py), never as empty boxes,
and the writing cannot be mistaken for other text."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyhanko.pdf_utils.reader import PdfFileReader

from registry.reports.glyphs import (
    CLOSE,
    OPEN,
    font_coverage,
    font_file_coverage,
    fontconfig_coverage,
    spell,
    spell_html,
    spell_strings,
)
from verifier import ATTACHMENT_NAME
from verifier.evidence import attachment

from .conftest import SIZING, variant

NO_FONT = "\U0010fffd"  # plane 16's last private-use character: no font has it
RLO = "\u202e"  # right-to-left override: draws nothing, reverses what follows
LATIN = frozenset(range(0x20, 0x7F)) | {ord(c) for c in "éō②" + OPEN + CLOSE}


def read(spelled: str) -> str:
    """The text a reader recovers from spelled text: each ⟦U+XXXX …⟧ back to its characters."""
    return re.sub(
        f"{OPEN}([^{CLOSE}]*){CLOSE}", lambda m: "".join(chr(int(p[2:], 16)) for p in m.group(1).split()), spelled
    )


def test_what_no_font_has_or_what_draws_nothing_is_written_as_code_points() -> None:
    assert spell("東京-H100-ノード", LATIN) == "⟦U+6771 U+4EAC⟧-H100-⟦U+30CE U+30FC U+30C9⟧"
    assert spell("Tōkyō ② é", LATIN) == "Tōkyō ② é"  # what the fonts have is drawn as written
    assert spell(f"lab{RLO}10h", LATIN) == "lab⟦U+202E⟧10h"  # reorders what follows: shown, not obeyed
    assert spell("a\u200db\u00adc\ufeff", LATIN) == "a⟦U+200D⟧b⟦U+00AD⟧c⟦U+FEFF⟧"  # zero-width and soft hyphen
    assert spell("a\x07b\tc\nd", LATIN) == "a⟦U+0007⟧b\tc\nd"  # a bell is shown; layout whitespace is not
    assert spell("\u2764\ufe0f", LATIN | {0x2764}) == "\u2764\ufe0f"  # a variation selector picks a form
    assert spell(NO_FONT, LATIN) == "⟦U+10FFFD⟧"


def test_a_name_cannot_pass_itself_off_as_another() -> None:
    # The bracket itself is written as a code point, so "⟦U+6771⟧" typed by a submitter never reads as 東.
    assert spell("⟦U+6771⟧", LATIN) == "⟦U+27E6⟧U+6771⟧"
    assert spell("⟦U+6771⟧", LATIN) != spell("東", LATIN)
    assert read(spell("⟦U+6771⟧", LATIN)) == "⟦U+6771⟧"


TEXT = st.lists(st.characters(codec="utf-8") | st.sampled_from([OPEN, CLOSE, "U+", " ", "6771"])).map("".join)


@given(TEXT)
def test_spelled_text_always_reads_back_as_written_and_holds_only_what_the_fonts_draw(text: str) -> None:
    spelled = spell(text, LATIN)
    assert read(spelled) == text
    for char in spelled:
        selector = 0xFE00 <= ord(char) <= 0xFE0F or 0xE0100 <= ord(char) <= 0xE01EF
        assert ord(char) in LATIN or char in "\t\n\r" or selector, repr(char)


def test_html_is_spelled_between_tags_only_and_the_title_keeps_its_text() -> None:
    html = f'<html><head><title>東 a</title></head><body><h1 title="東">東{NO_FONT}</h1><p>é &amp; &#x27E6;</p></body>'
    spelled, count = spell_html(html, LATIN)
    assert spelled == (
        '<html><head><title>東 a</title></head><body><h1 title="東">⟦U+6771 U+10FFFD⟧</h1>'
        "<p>é &amp; &#x27E6;</p></body>"
    )
    assert count == 2
    assert spell_html("<p>plain text, é</p>", LATIN) == ("<p>plain text, é</p>", 0)


def test_what_a_chart_draws_from_is_spelled_keys_and_all() -> None:
    value = {"arms": [{"label": f"x{NO_FONT}", "value": 1.5, "runs": (1, 2)}], f"k{RLO}": None}
    assert spell_strings(value, LATIN) == {
        "arms": [{"label": "x⟦U+10FFFD⟧", "value": 1.5, "runs": (1, 2)}],
        "k⟦U+202E⟧": None,
    }


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
