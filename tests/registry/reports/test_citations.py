"""A signed report cites each run MLCommons published by MLCommons' own words (result ID, suite, version, division,
benchmark, scenario, retrieval date), in the evidence it signs and on the page a reader reads; a comparison page
names the result ID beside the run."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from django.utils import timezone
from pyhanko.pdf_utils.reader import PdfFileReader

from registry.models import PublishedCitation
from registry.services.comparisons import comparison_create
from registry.services.reports import report_bytes, report_render, report_request
from registry.services.submissions import submission_create
from tests.registry.reports.conftest import PRICES, SIZING, fleet_documents
from verifier import ATTACHMENT_NAME
from verifier.evidence import attachment

pytestmark = pytest.mark.django_db


def _cite(run, result_id: str) -> PublishedCitation:
    return PublishedCitation.objects.create(
        submission=run,
        table_name="summary_results.json",
        table_digest="sha256:" + "0" * 64,
        round="v5.1",
        result_id=result_id,
        unique_id=f"datacenter/closed/Lab/{run.system_name}",
        details="https://github.com/mlcommons/inference_results_v5.1/tree/main/closed/Lab",
        suite="datacenter",
        division="closed",
        submitter="Lab",
        system=run.system_name,
        benchmark="decoder-small",
        scenario="Offline",
        location=f"closed/Lab/results/{run.system_name}/decoder-small/Offline",
        retrieved_at=timezone.now(),
    )


def test_a_signed_report_and_a_comparison_cite_the_published_results(user, client, django_user_model, tmp_path: Path):
    runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(3)]
    _cite(runs[0], "5.1-0042")
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, prices=PRICES, sizing=SIZING)
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-for-tests-only"))
    page = client.get(f"/comparisons/{comparison.pk}/").content.decode()
    assert "Inference v5.1 result 5.1-0042" in page
    assert 'href="https://github.com/mlcommons/inference_results_v5.1/tree/main/closed/Lab"' in page

    report = report_render(
        report_id=report_request(comparison=comparison, title="t", decision="d", requested_by=user).pk
    )
    assert report.status == "ready", report.last_error
    pdf = report_bytes(report)
    evidence = json.loads(attachment(PdfFileReader(io.BytesIO(pdf), strict=False), ATTACHMENT_NAME) or b"")
    cited = [r["citations"] for r in evidence["runs"]]
    assert [[c["result_id"] for c in run] for run in cited] == [["5.1-0042"], [], []]
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    text = " ".join(
        subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, timeout=60).stdout.split()
    )
    assert "Published results cited" in text
    assert (
        f"Run {runs[0].pk}: MLPerf Inference v5.1 Closed, result 5.1-0042: decoder-small, Offline (datacenter;" in text
    )
