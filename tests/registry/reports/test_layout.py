"""The printed report as laid out: nothing runs past the margin or out of its table cell, the cover is one page, and
the verify command on the signature page pastes into a shell as one command that verifies the report.

Layout is read from WeasyPrint's own boxes (the positions it drew), text from poppler's pdftotext."""

from __future__ import annotations

import io
import json
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import weasyprint
from django.template.loader import render_to_string
from pyhanko.pdf_utils.reader import PdfFileReader

from registry.audit.keys import checkpoint_key
from registry.reports import CERTIFICATE_FILE
from registry.reports.context import report_context
from registry.reports.render import STYLESHEET, render_html
from registry.reports.signing import signing_identity
from verifier import ATTACHMENT_NAME
from verifier.cli import main as verify_main
from verifier.evidence import attachment

from .conftest import variant

pytestmark = pytest.mark.django_db


def _evidence(pdf: bytes) -> dict[str, Any]:
    return json.loads(attachment(PdfFileReader(io.BytesIO(pdf), strict=False), ATTACHMENT_NAME) or b"{}")


def _boxes(box: Any) -> Iterator[Any]:
    yield box
    for child in getattr(box, "children", None) or []:
        yield from _boxes(child)


def overflows(pdf: bytes) -> list[str]:
    """Every table, cell or text the report's HTML lays out past the page's right margin, or past its table cell's
    content edge (so it overlaps the next column), as "page N: what"."""
    context = {**report_context(_evidence(pdf), certificate={}), "evidence_digest": "sha256:" + "0" * 64}
    stylesheet = weasyprint.CSS(string=render_to_string(STYLESHEET))
    document = weasyprint.HTML(string=render_html(context), base_url="data:,").render(stylesheets=[stylesheet])
    found = []
    for number, page in enumerate(document.pages, start=1):
        root = page._page_box  # WeasyPrint's laid-out page: every box with its position and width
        right = root.margin_left + root.width
        for box in _boxes(root):
            name = type(box).__name__
            if name in ("TableBox", "TableCellBox") and box.position_x + box.margin_width() > right + 0.5:
                past = box.position_x + box.margin_width() - right
                found.append(f"page {number}: a {box.element_tag} runs {past:.0f}px past the margin")
            if name == "TableCellBox":
                edge = box.position_x + box.margin_width() - box.padding_right - box.border_right_width
                found += [
                    f"page {number}: {t.text!r} runs out of its cell"
                    for t in _boxes(box)
                    if type(t).__name__ == "TextBox" and t.position_x + t.width > edge + 0.5
                ]
    return found


def _text(pdf: bytes, tmp_path: Path, *pages: str) -> str:
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    return subprocess.run(
        ["pdftotext", *pages, str(path), "-"], capture_output=True, text=True, timeout=60, check=True
    ).stdout


def test_no_table_runs_past_the_margin_and_no_text_out_of_its_cell(rendered):
    assert overflows(rendered.pdf) == []


def test_the_cover_is_one_page_and_says_what_to_conclude_in_words(rendered, tmp_path: Path):
    cover = " ".join(_text(rendered.pdf, tmp_path, "-l", "1").split())
    assert "WHAT YOU CAN CONCLUDE" in cover and "WHAT TO DO NEXT" in cover  # labels are set in capitals
    assert "Appendix B says how to verify it" in cover  # the cover's last line is on its first page
    second = " ".join(_text(rendered.pdf, tmp_path, "-f", "2", "-l", "2").split())
    assert "Summary: the decision" in second
    assert "WHAT YOU CAN CONCLUDE" not in second


def _verify_command(text: str) -> list[str]:
    """The signature page's command as a shell reads it pasted: lines ending in a backslash continue."""
    start = text.index("benchreg verify report.pdf \\")
    lines = []
    for line in text[start:].splitlines():
        lines.append(line.rstrip())
        if not line.rstrip().endswith("\\"):
            break
    return shlex.split("\n".join(lines).replace("\\\n", ""))  # as the shell: a backslash-newline is removed


def test_the_verify_command_pastes_as_one_command_that_verifies_the_report(rendered, tmp_path: Path, monkeypatch):
    """Its log key is never broken across lines, and its certificate is the file the registry hands out by that
    name (the API's download, the demo's copy)."""
    command = _verify_command(_text(rendered.pdf, tmp_path, "-f", "1"))
    assert command[:3] == ["benchreg", "verify", "report.pdf"]
    assert command[command.index("--cert") + 1] == CERTIFICATE_FILE
    assert command[command.index("--log-key") + 1] == checkpoint_key().vkey
    (tmp_path / CERTIFICATE_FILE).write_bytes(signing_identity().public_pem())
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHREG_SERVER", raising=False)
    assert verify_main(command[2:]) == 0


def test_the_certificate_the_demo_writes_is_the_one_the_report_names(settings, tmp_path: Path):
    from registry.management.commands.demo import Command

    settings.DATA_DIR = tmp_path
    command = shlex.split(Command()._verify_command("report.pdf"))
    cert = Path(command[command.index("--cert") + 1])
    assert cert.name == CERTIFICATE_FILE and cert.exists()


def _candidate(system: str, throughput: float, model: str, seed: int) -> dict[str, Any]:
    doc = variant(system, throughput, seed=seed)
    doc["metrics"]["quality"]["target_ratio"] = 0.99
    doc["system"]["accelerators"][0].update(model=model, count=8)
    return doc


def test_a_decision_report_states_the_price_behind_each_cost_and_stays_in_its_columns(
    user, tmp_path: Path, django_capture_on_commit_callbacks
):
    """Issued from a decision with a price for one of two configurations: its cost names the price it came from,
    the other has no cost and says so, the summary page lays out inside its columns, and the cover stays one page."""
    from registry.models import AuditHead
    from registry.services.decision_followups import decision_report
    from registry.services.decisions import decision_create
    from registry.services.reports import report_bytes
    from registry.services.submissions import submission_create

    AuditHead.objects.get_or_create(id=1)
    for i in range(3):
        submission_create(document=_candidate(f"h{i}", 1260.8 + i, "H100", 30 + i), submitted_by=user)
        submission_create(document=_candidate(f"m{i}", 1400.0 + i, "MI300X", 40 + i), submitted_by=user)
    question = {
        "workload": "decoder-small",
        "scenario": "server",
        "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
        "quality": {"target_ratio": 0.99},
        "demand": {"peak": 20000, "sustained": 14000, "unit": "tokens/s"},
        "prices": {"currency": "USD", "system_hour": {"8x H100": 98.32}},
    }
    decision = decision_create(owner=user, title="buy", question=question)
    with django_capture_on_commit_callbacks(execute=True):  # the report renders after commit
        report = decision_report(decision=decision, requested_by=user)
    report.refresh_from_db()
    assert report.status == "ready", report.last_error
    pdf = report_bytes(report)
    assert overflows(pdf) == []
    text = " ".join(_text(pdf, tmp_path).split())
    assert "Cost from 98.32 USD per system-hour for 8x H100, as supplied." in text
    assert "no price stated" in text and "8x H100: 98.32 USD per system-hour, as supplied" in text  # assumptions
    cover = " ".join(_text(pdf, tmp_path, "-l", "1").split())
    assert "WHAT YOU CAN CONCLUDE" in cover and "Appendix B says how to verify it" in cover
    assert "98.32 USD per system-hour" in cover  # the cheapest figure on the cover names its price
