"""What a reader sees of one run and one configuration is the same on every page and in the report.

The demo measured one machine with 1 and with 2 BLAS threads: the system comparison pooled them as "one
configuration, 112 samples/s", the matrix showed 111.7 (a value neither setting reached) and the history hid a 7x
drop among "software may differ". And one run read 292.2 (catalogue, run page), 293.2 (comparison) and 293.25 (PDF).
"""

from __future__ import annotations

import copy
import html
import json
import re
from typing import Any

import pytest
from django.template.loader import render_to_string

from protocol import comparability
from registry.reports.context import report_context
from registry.services.comparisons import comparison_create
from registry.services.submissions import submission_create
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db


def _text(page: Any) -> str:
    assert page.status_code == 200
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page.content.decode(), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def _threads(doc: dict[str, Any], threads: int, batch_ms: list[float], name: str = "lab-cpu-03") -> dict[str, Any]:
    """An offline CPU run with `threads` BLAS threads and three repetitions of 10 batch times each: its reported
    throughput is the pooled one, the geometric mean of its repetitions' throughputs a little higher."""
    out = copy.deepcopy(doc)
    out["system"]["name"] = name
    out["software"]["settings"] = {"numpy.blas_threads": threads}
    batch = out["workload"]["shape"]["batch_size"]
    reps = [[ms] * 10 for ms in batch_ms]
    out["samples"] = {"latency_ms": {"unit": "ms", "repetitions": reps}}
    flat = sorted(x for r in reps for x in r)
    out["metrics"]["latency_ms"] = {
        "count": 30,
        "method": "nearest-rank",
        "unit": "ms",
        "min": flat[0],
        "mean": sum(flat) / 30,
        "p50": flat[14],
        "max": flat[-1],
    }
    out["metrics"]["throughput"]["value"] = round(batch * 1000.0 * 30 / sum(sum(r) for r in reps), 4)
    out["provenance"].update(started_at=f"2026-11-2{threads}T10:00:00Z", finished_at=f"2026-11-2{threads}T10:05:00Z")
    return out


@pytest.fixture
def two_settings(submitter: Any, offline_example: dict[str, Any]) -> tuple[Any, Any]:
    one, _ = submission_create(document=_threads(offline_example, 1, [100.0, 110.0, 120.0]), submitted_by=submitter)
    two, _ = submission_create(document=_threads(offline_example, 2, [700.0, 760.0, 800.0]), submitted_by=submitter)
    return one, two


def test_runs_on_one_system_with_other_settings_are_never_pooled_on_any_page(viewer, submitter, two_settings):
    one, two = two_settings
    assert one.comparability_key == two.comparability_key  # settings are only disclosed on the system axis
    comparison, _ = comparison_create(runs=[one, two], axis="system", created_by=submitter)
    arms = comparison.result["arms"]
    assert [(a["runs"], a["label"].rsplit(", ", 1)[-1]) for a in arms] == [
        ([0], "BLAS threads 1"),
        ([1], "BLAS threads 2"),
    ]
    assert comparison.result["conclusion"]["outcome"] != "single-configuration"
    client = signed_in(viewer)
    page = _text(client.get(f"/comparisons/{comparison.pk}/"))
    assert "They form 2 configurations" in page and "only when they agree" in page
    matrix = _text(client.get("/matrix/"))
    # the cell is one setting's run, named, with the other counted beside it: never the mean of both
    pooled = (one.headline_value * two.headline_value) ** 0.5
    assert f"{pooled:,.1f}" not in matrix and f"{pooled:,.2f}" not in matrix
    shown = [run for run in (one, two) if f"{run.headline_value:,.4g} samples/s" in matrix]
    assert len(shown) == 1 and "+1 more" in matrix
    assert f"BLAS threads {shown[0].document['software']['settings']['numpy.blas_threads']} ·" in matrix
    history = _text(client.get(f"/runs/{one.pk}/history/"))
    assert "1 run " in history and "BLAS threads 2 (1 run)" in history
    assert f"{two.headline_value:,.1f}" not in history  # the other setting is a link, never a point of this history


def test_one_run_reads_one_headline_on_every_page_and_in_the_report(viewer, submitter, offline_example):
    one, _ = submission_create(document=_threads(offline_example, 1, [100.0, 110.0, 120.0]), submitted_by=submitter)
    other = _threads(offline_example, 1, [90.0, 95.0, 99.0], name="lab-cpu-09")
    other["system"]["host"]["cpu_model"] = "AMD EPYC 9654"
    two, _ = submission_create(document=other, submitted_by=submitter)
    shown = f"{one.headline_value:,.1f} samples/s"  # four significant digits: "290.9 samples/s"
    client = signed_in(viewer)
    comparison, _ = comparison_create(runs=[one, two], axis="system", created_by=submitter)
    estimate = comparison.result["runs"][0]["headline"]["value"]
    assert f"{estimate:.1f}" != f"{one.headline_value:.1f}"  # the statistics' estimate is another statistic
    pages = {
        "catalogue": _text(client.get("/")),
        "run": _text(client.get(f"/runs/{one.pk}/")),
        "matrix": _text(client.get("/matrix/")),
        "history": _text(client.get(f"/runs/{one.pk}/history/")),
        "comparison": _text(client.get(f"/comparisons/{comparison.pk}/")),
        "report": _report_text(comparison),
    }
    for where, text in pages.items():
        assert shown in text, where
        if where != "run":  # the run page's raw JSON shows the document as written
            assert f"{one.headline_value:.3f}" not in text, where  # one rounding rule, never two decimals
    # where a page shows the geometric mean of the repetitions instead, it says so beside it
    for where in ("comparison", "history"):
        assert f"{estimate:,.1f}" in pages[where] and "geometric mean of" in pages[where].lower(), where
    assert f"{estimate:,.1f}" in pages["report"] and "geometric mean of 3 repetitions" in pages["report"]


def _report_text(comparison: Any) -> str:
    """The report's words for this comparison, rendered from evidence as the PDF is (without signing it)."""
    runs = [cr.submission for cr in comparison.members.select_related("submission").order_by("position")]
    evidence = {
        "report": {"id": 1, "title": "t", "decision": "d", "requested_by": "u", "requested_at": "2026-11-26"},
        "registry": {},
        "checkpoint": {},
        "comparison": {"canonical": comparison.canonical, "digest": comparison.digest},
        "contract": {"digest": "sha256:0", "document": comparability.contract_document()},
        "runs": [
            {"id": r.pk, "position": i, "canonical": json.dumps(r.document), "trust": r.trust}
            for i, r in enumerate(runs)
        ],
    }
    context = report_context(evidence, certificate={})
    return _text_of(render_to_string("reports/decision.html", context))


def _text_of(markup: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def test_the_comparison_page_says_axes_and_outcomes_in_words_never_codes(viewer, submitter, two_settings):
    """It read "the iso-quality under test" and "Conclusion: Not-enough-evidence"."""
    one, two = two_settings
    comparison, _ = comparison_create(runs=[one, two], axis="iso-quality", created_by=submitter)
    assert comparison.result["conclusion"]["outcome"] in ("not-enough-evidence", "distinguishable", "inconclusive")
    page = _text(signed_in(viewer).get(f"/comparisons/{comparison.pk}/"))
    assert "by equal quality" in page and "iso-quality" not in page
    assert "-evidence" not in page and "single-configuration" not in page
    assert "))" not in page.replace("(R))", "")
