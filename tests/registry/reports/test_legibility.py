"""Reports a governance reviewer can read: verdicts with their blocking caveats, charts labelled by configuration,
no statistic below its sample minimum, wording per scenario, submitter text drawn as written, run ids throughout."""

from __future__ import annotations

import copy
import io
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from pyhanko.pdf_utils.reader import PdfFileReader

from protocol import comparability
from registry.presentation import charts
from registry.reports.context import conclusion, hardware_words, report_context
from tests.conftest import load_example
from verifier import ATTACHMENT_NAME
from verifier.evidence import attachment

from .conftest import fleet_documents, variant

ODD_NAMES = [
    "lab $x^2$ \\frac{1 h100",
    "C:\\labs\\gpu\\07",
    "מעבדה-ירושלים-01",
    "a-very-long-laboratory-system-name-that-goes-on-" + "and-on-" * 12 + "end",
]


def _samples(doc: dict, n: int) -> dict:
    doc = copy.deepcopy(doc)
    doc["samples"] = {"ttft_ms": {"unit": "ms", "repetitions": [[40.0 + (i % 7) for i in range(n)]]}}
    return doc


# ------------------------------------------------------------------------------------------ charts (no database)


def test_p99_is_not_marked_on_fewer_samples_than_the_protocol_requires():
    few = charts.latency_distribution_chart(_samples(fleet_documents(1)[0], 20))
    assert few is not None and "p50 =" in few and "p99 =" not in few and "p99 not marked: 20 samples" in few
    enough = charts.latency_distribution_chart(_samples(fleet_documents(1)[0], 700))
    assert enough is not None and "p99 =" in enough


def test_a_percentile_without_enough_samples_gets_neither_bars_nor_a_legend_entry():
    docs = fleet_documents(2)
    for doc in docs:
        for block in doc["metrics"].values():
            if isinstance(block, dict) and "p99" in block:
                block["count"] = 500  # p99 needs 662 samples
    svg = charts.latency_percentiles_chart(docs, comparability.compare(docs, "system", resamples=100))
    assert svg is not None and "p95" in svg and "p99" not in svg


def test_latency_is_worded_per_scenario():
    offline = load_example("inference-offline-cpu-int8")
    assert "batch latency" in (charts.latency_percentiles_chart([offline]) or "")
    assert "request latency" not in (charts.latency_percentiles_chart([offline]) or "")
    assert "request latency" in (charts.latency_percentiles_chart(fleet_documents(1)) or "")


def test_submitter_text_is_drawn_as_written_never_as_mathtext():
    docs = [variant(name, 1000.0 + 100 * i, seed=i) for i, name in enumerate(ODD_NAMES)]
    for doc, name in zip(docs, ODD_NAMES, strict=True):  # arms are configurations: the odd text names the hardware
        doc["system"]["accelerators"][0]["model"] = name
    result = comparability.compare(docs, "system", resamples=100, prices={ODD_NAMES[0]: 2.0, ODD_NAMES[2]: 3.0})
    drawn = [
        charts.throughput_chart(result),
        charts.latency_percentiles_chart(docs, result),
        charts.derived_chart(result),
        charts.latency_distribution_chart(docs[0], f"run 7 · {ODD_NAMES[0]}"),
    ]
    assert all(drawn)
    text = "".join(drawn)
    assert "$x^2$" in text and "\\frac{1" in text and "C:\\labs\\gpu\\07" in text and "מעבדה-ירושלים-01" in text


def test_bar_labels_are_never_cut_to_identical_text():
    same_start = "lab-h200-rack-04-node-" * 3
    labels = charts.unique_labels([same_start + "a", same_start + "b", "short", "short"])
    assert len(set(labels)) == 4
    assert all(len(line) <= charts.LABEL_WIDTH + 4 for label in labels for line in label.split("\n"))


def test_the_system_is_named_by_its_accelerator_or_cpu_never_by_a_placeholder():
    assert hardware_words(load_example("inference-server-h100-bf16")) == "1× NVIDIA H100 80GB HBM3"
    assert hardware_words(load_example("inference-offline-cpu-int8")) == "Intel(R) Xeon(R) Platinum 8480+"
    assert "?" not in hardware_words({"system": {"accelerators": [{"model": "X1"}]}})


# ------------------------------------------------------------------------------------------ the conclusion


def _result(outcome: str, caveats: list | None = None, **extra) -> dict:
    return {
        "comparable": True,
        "arms": [{"index": 0, "label": "A", "runs": [0]}, {"index": 1, "label": "B", "runs": [1]}],
        "caveats": caveats or [],
        "pairwise": [],
        "conclusion": {
            "outcome": outcome,
            "statement": f"{outcome.capitalize()}: B delivers 1.2× A's throughput",
            "reasons": [],
            "baseline": 0,
            "focus": [1],
            **extra,
        },
    }


def test_the_cover_states_the_comparisons_own_conclusion_with_its_reasons():
    stated = conclusion(
        _result(
            "not-enough-evidence",
            reasons=[{"code": "too-few-runs", "message": "each arm has 2 summary-only runs", "run": None, "arm": 0}],
        ),
        [31, 32],
    )
    assert stated["outcome"] == "not-enough-evidence" and stated["tone"] == "tentative"
    assert stated["statement"].startswith("Not-enough-evidence") and stated["reasons"] == [
        "each arm has 2 summary-only runs"
    ]
    assert stated["baseline"] == 0 and stated["focus"] == [1]


def test_a_blocking_caveat_turns_a_green_verdict_into_inconclusive_naming_the_run_id():
    unsteady = [{"run": 1, "code": "steady-state-not-reached", "message": "steady state was not reached: drift"}]
    stated = conclusion(_result("distinguishable", unsteady), [31, 32])
    assert stated["outcome"] == "inconclusive" and stated["tone"] == "tentative"
    assert stated["statement"].startswith("Inconclusive: 1 of the 2 runs (run 32)")
    assert stated["reasons"] == ["run 32: steady state was not reached: drift"]
    calm = conclusion(_result("distinguishable", [{"run": 0, "code": "no-raw-samples", "message": "x"}]), [31, 32])
    assert calm["outcome"] == "distinguishable" and calm["tone"] == "clear"


def test_a_refused_comparison_concludes_nothing():
    assert conclusion({"comparable": False}, [1, 2])["outcome"] == "refused"


# ------------------------------------------------------------------------------------------ the rendered report


@pytest.mark.django_db
def test_the_report_names_runs_by_id_and_captions_every_figure_once(rendered):
    reader = PdfFileReader(io.BytesIO(rendered.pdf), strict=False)
    evidence = json.loads(attachment(reader, ATTACHMENT_NAME) or b"{}")
    ids = [r["id"] for r in evidence["runs"]]
    context = report_context(evidence, certificate={})
    assert [r["label"] for r in context["runs"]] == [f"Run {i}" for i in ids]
    assert sorted(i for arm in context["arms"] for i in arm["runs"]) == sorted(ids)
    titles = [c["title"] for c in context["charts"]]
    assert len(titles) == len(set(titles)) >= 3
    assert all("?" not in r["accelerator"] for r in context["runs"])


@pytest.mark.django_db
def test_the_pdf_lists_its_attachment_once_and_info_agrees_with_xmp(rendered, tmp_path: Path):
    reader = PdfFileReader(io.BytesIO(rendered.pdf), strict=False)
    assert len(reader.root["/AF"]) == 1
    xmp = reader.root["/Metadata"].get_object().data.decode()
    info = reader.trailer_view["/Info"]
    producer = re.search(r'Producer="([^"]+)"', xmp) or re.search(r"<pdf:Producer>([^<]+)<", xmp)
    assert producer and producer.group(1) == str(info["/Producer"])
    creator = re.search(r'CreatorTool="([^"]+)"', xmp) or re.search(r"<xmp:CreatorTool>([^<]+)<", xmp)
    assert creator and creator.group(1) == str(info["/Creator"])
    if shutil.which("pdfdetach") is None:
        pytest.skip("pdfdetach/pdffonts (poppler-utils) are not installed")
    path = tmp_path / "report.pdf"
    path.write_bytes(rendered.pdf)
    listed = subprocess.run(["pdfdetach", "-list", str(path)], capture_output=True, text=True, timeout=60).stdout
    assert listed.splitlines()[0] == "1 embedded files" and ATTACHMENT_NAME in listed
    fonts = subprocess.run(["pdffonts", str(path)], capture_output=True, text=True, timeout=60).stdout.splitlines()[2:]
    assert fonts and all(" yes " in f for f in fonts)  # every font embedded


@pytest.mark.django_db
def test_an_unsteady_report_with_odd_names_says_inconclusive_on_its_cover(settings, user, tmp_path: Path):
    """A real report: every run unsteady (steady state is controlled, so all or none), with system names holding
    `$`, backslashes, right-to-left text and 150 characters. The cover says inconclusive with the run ids; the
    names render in the PDF's text as written."""
    from registry.models import AuditHead
    from registry.services.comparisons import comparison_create
    from registry.services.reports import report_bytes, report_render, report_request
    from registry.services.submissions import submission_create

    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    AuditHead.objects.get_or_create(id=1)
    docs = []
    for i, name in enumerate(ODD_NAMES[:3]):
        doc = variant(name, 1200.0 + 150 * i, seed=10 + i)
        doc["conditions"]["steady_state"].update(reached=False, reasons=["block medians drift by 9%"])
        docs.append(doc)
    runs = [submission_create(document=d, submitted_by=user)[0] for d in docs]
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user)
    report = report_render(
        report_id=report_request(
            comparison=comparison, title="Unsteady $x$ \\ עברית", decision="pick one", requested_by=user
        ).pk
    )
    assert report.status == "ready", report.last_error
    path = Path(tempfile.mkdtemp()) / "report.pdf"
    path.write_bytes(report_bytes(report))

    def page(number: int) -> str:
        return " ".join(
            subprocess.run(
                ["pdftotext", "-f", str(number), "-l", str(number), "-layout", str(path), "-"],
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout.split()
        )

    cover, summary = page(1), page(2)
    assert "inconclusive" in cover.lower() and "distinguishable from noise" not in cover, cover
    assert "all 3 runs kept changing speed" in cover and "Do not choose on these numbers." in cover
    assert "block medians" not in cover  # the engineering detail is inside, each run named by its id
    assert "Appendix B says how to verify it" in cover  # the cover is one page
    for run in runs:
        assert f"run {run.pk}" in summary
    assert summary.count("never reached steady state (block medians drift by 9%)") == len(runs)  # once per run
    text = " ".join(
        subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, timeout=60).stdout.split()
    )
    assert "$x^2$" in text and "C:\\labs\\gpu\\07" in text
    assert "ירושלים" in text or "םילשורי" in text  # poppler may give right-to-left text in visual order
