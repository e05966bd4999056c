"""Decision reports from a comparison's page: requested, polled, downloaded, and only by whoever asked."""

from __future__ import annotations

from typing import Any

import pytest

from registry.services.comparisons import comparison_create
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_a_report_is_requested_polled_and_downloaded(
    viewer: Any, fleet: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    client = signed_in(viewer)
    comparison, _ = comparison_create(runs=[fleet["a"], fleet["b"]], axis="system", created_by=viewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/comparisons/{comparison.pk}/reports", {"title": "Serving cluster", "decision": "Buy H200", "prices": ""}
        )
    assert response.status_code == 302
    report = comparison.reports.get()
    assert response["Location"] == f"/comparisons/{comparison.pk}/#report-{report.pk}"
    status = client.get(f"/reports/{report.pk}/status").json()
    assert status["status"] == "ready", status
    assert status["download_url"] == f"/reports/{report.pk}/pdf"
    pdf = client.get(status["download_url"])
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert b"".join(pdf.streaming_content).startswith(b"%PDF")
    page = client.get(f"/comparisons/{comparison.pk}/").content.decode()
    assert f'id="report-{report.pk}"' in page and "Download the signed PDF" in page


def test_prices_must_be_written_as_name_equals_price(viewer: Any, fleet: dict[str, Any]) -> None:
    comparison, _ = comparison_create(runs=[fleet["a"], fleet["b"]], axis="system", created_by=viewer)
    response = signed_in(viewer).post(
        f"/comparisons/{comparison.pk}/reports", {"title": "t", "decision": "d", "prices": "lab-h100-01 three dollars"}
    )
    assert response.status_code == 400 and "configuration = price per system-hour" in response.content.decode()


def test_another_users_report_is_not_found(viewer: Any, django_user_model: Any, fleet: dict[str, Any]) -> None:
    from registry.models import Report

    comparison, _ = comparison_create(runs=[fleet["a"], fleet["b"]], axis="system", created_by=viewer)
    other = django_user_model.objects.create_user("someone-else", password="another-long-password")
    report = Report.objects.create(
        comparison=comparison,
        title="theirs",
        decision="x",
        requested_by=other,
        requested_by_name=other.username,
        created_at=comparison.created_at,
    )
    client = signed_in(viewer)
    assert client.get(f"/reports/{report.pk}/status").status_code == 404
    assert client.get(f"/reports/{report.pk}/pdf").status_code == 404
    assert "theirs" not in client.get(f"/comparisons/{comparison.pk}/").content.decode()
