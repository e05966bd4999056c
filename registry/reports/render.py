"""HTML to PDF/A-3b with the evidence attached: Django templates (auto-escaped) and WeasyPrint, no network.

Every resource the document needs is inline: the stylesheet is passed as a string, charts are `data:` SVG images
and fonts are the system's (DejaVu, through fontconfig). The URL fetcher refuses every scheme but `data:`, and a
refusal stops the rendering (FatalURLFetchingError), so a report never silently depends on, or leaks to, a server.

WeasyPrint (with fontTools, most of a second) is imported when a report is rendered, not with this module: the
app's tasks import the reports code, so every command, worker and test process would pay for it at start-up.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
from collections.abc import Mapping
from typing import Any

from django.template.loader import render_to_string

from registry.presentation.codepoints import spell_html
from registry.reports import ATTACHMENT_NAME
from registry.reports.glyphs import font_coverage

TEMPLATE = "reports/decision.html"
STYLESHEET = "reports/decision.css"


def offline_fetcher(**options: Any) -> Any:
    """WeasyPrint's URL fetcher (given `options`), serving `data:` URIs only: any other URL (http, https, file,
    ftp...) aborts the rendering."""
    return _offline_fetcher_class()(**options)


@functools.cache
def _offline_fetcher_class() -> type[Any]:
    # Made on first use: it subclasses WeasyPrint's URLFetcher.
    from weasyprint.urls import FatalURLFetchingError, URLFetcher

    class OfflineFetcher(URLFetcher):  # type: ignore[misc]  # weasyprint ships no type hints
        def fetch(self, url: str, headers: Any = None) -> Any:
            if url.startswith("data:"):
                return super().fetch(url, headers)
            raise FatalURLFetchingError(f"report rendering refuses to fetch {url[:80]!r}: reports are self-contained")

    return OfflineFetcher


COVER_END = "cover-end"  # the id of the cover's last line (decision.html): on the first page when the cover fits


def render_html(context: Mapping[str, Any]) -> str:
    """The report's HTML. User text is escaped by Django's autoescaping; charts become data: SVG images; characters
    no installed font draws are written as their code points (registry/presentation/codepoints.py)."""
    import weasyprint  # its version is printed in the report; the PDF is made by render_pdf right after

    charts = [{"title": c["title"], "src": _data_uri(c["svg"])} for c in context.get("charts") or []]
    decision = context.get("decision_answer")
    if decision:  # each of its figures is a list of parts (presentation.charts_report.decision_figures)
        parts = {
            k: [{**p, "src": _data_uri(p["svg"])} for p in decision.get(k) or []] for k in ("pareto", "frontier_chart")
        }
        decision = {**decision, **parts}
    page = {**context, "charts": charts, "decision_answer": decision, "weasyprint_version": weasyprint.__version__}
    # the <title> is the PDF's metadata, not drawn: it keeps the text as submitted
    html, spelled = spell_html(render_to_string(TEMPLATE, page), font_coverage(), keep={"title"})
    if spelled:  # the cover then says what the brackets mean
        page = {**page, "spells_code_points": True}
        html, _ = spell_html(render_to_string(TEMPLATE, page), font_coverage(), keep={"title"})
    return html


def render_pdf(
    context: Mapping[str, Any], *, evidence: bytes, evidence_digest: str, issued_at: dt.datetime | None = None
) -> bytes:
    """The unsigned PDF/A-3b of the report, with `evidence` attached as benchreg-evidence.json (AFRelationship
    Data). Raises FatalURLFetchingError if anything tried to fetch a URL."""
    import weasyprint

    fetcher = offline_fetcher(fail_on_errors=True, allowed_protocols=["data"])
    stylesheet = weasyprint.CSS(string=render_to_string(STYLESHEET), url_fetcher=fetcher, base_url="data:,")
    when = issued_at or dt.datetime.now(dt.UTC)
    attachment = weasyprint.Attachment(
        string=evidence,
        name=ATTACHMENT_NAME,
        url_fetcher=fetcher,
        description=f"benchreg report evidence, {evidence_digest}",
        relationship="Data",
        created=when,
        modified=when,
    )
    options = {
        **weasyprint.DEFAULT_OPTIONS,
        "stylesheets": [stylesheet],
        "attachments": [attachment],
        "pdf_variant": "pdf/a-3b",
    }

    def laid_out(compact: bool) -> Any:
        page = {**context, "compact_cover": compact}
        return weasyprint.HTML(string=render_html(page), url_fetcher=fetcher, base_url="data:,").render(**options)

    document = laid_out(compact=False)
    if COVER_END not in document.pages[0].anchors:
        # The cover is one page: a long question with many gaps to name runs past it, and is set closer instead
        # (decision.css, .cover.compact) rather than leave a second page holding the cover's last lines.
        document = laid_out(compact=True)
    return bytes(document.write_pdf(**options))


def _data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")
