"""Every figure of a report stays whole on one page, inside the page's content area (never over the running footer),
however many configurations it draws; no heading is left as the last thing on a page.

Read from WeasyPrint's laid-out boxes: `weasyprint.HTML(...).render()` is the layout the PDF is drawn from, so a box's
page and position are where the reader sees it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import weasyprint
from django.template.loader import render_to_string

from protocol import decisions as dec
from registry.reports.context import decision_answer, report_context
from registry.reports.render import STYLESHEET, render_html
from tests.protocol.serving_law import sweep_docs

from .conftest import variant

pytestmark = pytest.mark.django_db

HEADINGS = {"h1", "h2", "h3", "h4"}
SLACK = 0.5  # CSS px: rounding in WeasyPrint's layout


def _walk(box: Any, ancestors: tuple[Any, ...] = ()) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """Every box under `box` in document order, with its ancestors (the page's running header and footer, which
    live in margin boxes, are left out: they are not the document's flow)."""
    if type(box).__name__ == "MarginBox":
        return
    yield box, ancestors
    for child in getattr(box, "children", None) or []:
        yield from _walk(child, (*ancestors, box))


def _bottom(box: Any) -> float:
    return float(box.position_y + box.margin_top + box.border_height())


def laid_out(html: str) -> Any:
    stylesheet = weasyprint.CSS(string=render_to_string(STYLESHEET))
    return weasyprint.HTML(string=html, base_url="data:,").render(stylesheets=[stylesheet])


def figure_problems(document: Any) -> list[str]:
    """Each figure (its chart and caption) that spans pages, runs below the page's content area (over the running
    footer) or above it, or past a side margin, as "page N: what"."""
    pages_of: dict[int, set[int]] = {}
    names: dict[int, str] = {}
    found: set[str] = set()
    for number, page in enumerate(document.pages, start=1):
        root = page._page_box  # WeasyPrint's laid-out page: every box with its page position
        top, left = root.content_box_y(), root.content_box_x()
        bottom, right = top + root.height, left + root.width
        for box, ancestors in _walk(root):
            figure = _figure_of(box, ancestors)
            if figure is None:
                continue
            key = id(figure.element)
            pages_of.setdefault(key, set()).add(number)
            names.setdefault(key, _figure_name(figure))
            if _bottom(box) > bottom + SLACK:
                found.add(f"page {number}: {names[key]} runs {_bottom(box) - bottom:.0f}px into the bottom margin")
            if box.position_y < top - SLACK:
                found.add(f"page {number}: {names[key]} starts in the top margin")
            if box.position_x < left - SLACK or box.position_x + box.margin_width() > right + SLACK:
                found.add(f"page {number}: {names[key]} runs past a side margin")
    found |= {f"pages {sorted(pages)}: {names[key]} is split" for key, pages in pages_of.items() if len(pages) > 1}
    return sorted(found)


def _figure_of(box: Any, ancestors: tuple[Any, ...]) -> Any | None:
    """The figure box that `box` is (or is inside of); an image outside any figure is a figure of its own."""
    for candidate in (*ancestors, box):
        if candidate.element_tag == "figure":
            return candidate
    return box if box.element_tag == "img" else None


def _tags(ancestors: tuple[Any, ...]) -> list[str]:
    return [a.element_tag for a in ancestors]


def _figure_name(figure: Any) -> str:
    """The figure's caption (or its image's alt text), to name it in a failure."""
    caption = figure.element.find("figcaption")
    text = "".join(caption.itertext()) if caption is not None else (figure.element.get("alt") or "")
    return repr(" ".join(text.split())[:70])


def _lines(page: Any) -> list[tuple[Any, tuple[Any, ...]]]:
    """The page's lines of text and its images, in document order, with their ancestors."""
    return [
        (box, ancestors)
        for box, ancestors in _walk(page._page_box)
        if type(box).__name__ in ("LineBox", "BlockReplacedBox", "InlineReplacedBox")
    ]


def stranded_headings(document: Any) -> list[str]:
    """Pages (but the last) whose last line is a heading's: its section starts on the next page."""
    found = []
    for number, page in enumerate(document.pages[:-1], start=1):
        lines = _lines(page)
        heading = next((a for a in lines[-1][1] if a.element_tag in HEADINGS), None) if lines else None
        if heading is not None:
            found.append(f"page {number} ends with the heading {' '.join(heading.element.itertext())!r}")
    return found


def stray_lines(document: Any) -> list[str]:
    """Pages that hold one line and nothing else."""
    return [f"page {n} holds one line" for n, page in enumerate(document.pages, start=1) if len(_lines(page)) == 1]


def layout_problems(html: str) -> list[str]:
    document = laid_out(html)
    return figure_problems(document) + stranded_headings(document) + stray_lines(document)


# ------------------------------------------------------------------------------------------ reports of many


def _candidate(i: int) -> dict[str, Any]:
    """Configuration `i` of many: its own accelerator model (so its own candidate), a system name long enough to
    wrap in a chart's label, TTFT and latency percentiles from enough requests for p99."""
    doc = variant(f"lab-rack{i // 8:02d}-node{i:02d}-accelerated-serving", 900.0 + 37.0 * i, seed=i)
    doc["metrics"]["quality"]["target_ratio"] = 0.99
    # Names as long as real ones ("AMD Instinct MI325X 256GB HBM3e"): each label takes two or three lines.
    doc["system"]["accelerators"][0].update(
        model=f"Accelerator {i:02d}-SXM5 Extended Memory Edition 141GB HBM3e", count=8
    )
    return doc


def _store(user: Any, configurations: int) -> None:
    from registry.models import AuditHead
    from registry.services.submissions import submission_create

    AuditHead.objects.get_or_create(id=1)
    for i in range(configurations):
        submission_create(document=_candidate(i), submitted_by=user)


def report_html(report: Any) -> str:
    """The HTML of a queued report as render_pdf lays it out (its evidence built as issuing builds it; not signed:
    the layout is the same)."""
    from registry.choices import CheckpointReason
    from registry.reports.evidence import evidence_build
    from registry.reports.signing import signing_identity
    from registry.selectors.standing import comparison_members
    from registry.services.audit import checkpoint_sign
    from registry.services.reports import certificate_words

    identity = signing_identity()
    checkpoint = checkpoint_sign(reason=CheckpointReason.REPORT)
    runs = comparison_members(report.comparison)
    evidence = evidence_build(report=report, runs=runs, checkpoint=checkpoint, identity=identity)
    context = report_context(evidence.document, certificate=certificate_words(identity))
    return render_html({**context, "evidence_digest": evidence.digest})


def decision_report_html(user: Any, configurations: int) -> str:
    """The report a decision over `configurations` candidates issues (one run each, priced, so the Pareto chart and
    the cost panel draw every one)."""
    from registry.services.decision_followups import decision_report
    from registry.services.decisions import decision_create

    _store(user, configurations)
    question = {
        "workload": "decoder-small",
        "scenario": "server",
        "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
        "quality": {"target_ratio": 0.99},
        "demand": {"peak": 20000, "sustained": 14000, "unit": "tokens/s"},
        "prices": {"currency": "USD", "system_hour": {"*": 98.32}},
    }
    decision = decision_create(owner=user, title=f"{configurations} configurations", question=question)
    report = decision_report(decision=decision, requested_by=user)  # queued: it renders after commit, never here
    assert len(report.comparison.members.all()) == configurations
    return report_html(report)


@pytest.mark.parametrize("configurations", [8, 20, 40])
def test_every_figure_of_a_decision_report_is_whole_on_one_page_inside_its_margins(user, configurations: int):
    """The report of a decision over many candidates: its Pareto chart, and each results chart (headline, latency
    percentiles, energy and cost) drawn in as many parts as keep each whole on a page."""
    assert layout_problems(decision_report_html(user, configurations)) == []


def test_every_figure_of_a_comparison_report_is_whole_on_one_page_inside_its_margins(user):
    """A report requested on a comparison (not a decision) has the same results charts, kept whole the same way."""
    from registry.models import Submission
    from registry.services.comparisons import comparison_create
    from registry.services.reports import report_request

    _store(user, 20)
    runs = list(Submission.objects.order_by("id"))
    prices = {run.system_name: 3.0 + i for i, run in enumerate(runs)}
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, prices=prices)
    report = report_request(comparison=comparison, title="20 systems", decision="which", requested_by=user)
    assert layout_problems(report_html(report)) == []


@pytest.mark.parametrize("candidates", [8, 20, 40])
def test_a_decision_over_many_load_sweeps_draws_its_frontier_whole_on_each_page(candidates: int):
    """The decision's figures of served models measured as load sweeps: the frontier chart's legend holds one entry
    per candidate, so many candidates take parts, each whole, each captioned as a part."""
    docs: list[dict[str, Any]] = []
    for i in range(candidates):
        model = f"Accelerator {i:02d}-SXM5 Extended Memory Edition 141GB HBM3e"
        docs += sweep_docs((1, 2, 4, 8, 16, 32), sweep=f"sweep-{i:02d}", model=model, u0=80.0 + i, c0=6.0 + i % 5)
    question = dec.Question.from_dict(
        {
            "workload": "decoder-small",
            "scenario": "server",
            "interactivity": {"min_tokens_per_second_per_user": 30},
            "demand": {"value": 20000, "unit": "tokens/s"},
            "prices": {"system_hour": {"*": 100}},
        }
    )
    refs = [{"id": i + 1, "digest": f"sha256:{i}", "url": f"/runs/{i + 1}/"} for i in range(len(docs))]
    answer = dec.answer(question, [dec.Evidence(d, r) for d, r in zip(docs, refs, strict=True)])
    section = {"canonical": json.dumps(answer), "id": 1, "title": "t", "answer": 1, "digest": "sha256:x"}
    context = decision_answer(section)
    assert context is not None and context["frontier_chart"]
    html = render_html({"decision_answer": context})
    assert layout_problems(html) == []
    parts = len(context["frontier_chart"])
    if parts > 1:  # each part says which it is, in its caption
        assert all(f"Part {k} of {parts}." in html for k in range(1, parts + 1))
