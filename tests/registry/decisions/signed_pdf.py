"""A decision report as its reader gets it: the signed PDF, its signature checked, its words as pdftotext reads them."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from registry.services.reports import report_bytes, report_verify


def signed_report_words(report: Any, tmp_path: Path, *, last_page: int | None = None) -> str:
    """The report's words (up to `last_page`), whitespace collapsed, after its signature is checked valid; the PDF
    is left at tmp_path/report.pdf to look at."""
    pdf = report_bytes(report)
    assert report_verify(pdf=pdf).valid
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    pages = ["-l", str(last_page)] if last_page else []
    text = subprocess.run(
        ["pdftotext", "-layout", *pages, str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    return " ".join(text.split())
