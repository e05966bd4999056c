"""The reports API: request, follow, download, verify an upload, fetch the certificate."""

from __future__ import annotations

import pytest
from cryptography import x509

from registry.services.comparisons import comparison_create
from registry.services.submissions import submission_create

from .conftest import fleet_documents

pytestmark = pytest.mark.django_db


@pytest.fixture
def comparison(user):
    runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(2)]
    return comparison_create(runs=runs, axis="system", created_by=user, prices={"lab-h100-01": 3.0})[0]


def test_a_report_is_requested_rendered_downloaded_and_verified(
    api, anonymous, comparison, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            "/api/v1/reports",
            {"comparison": comparison.pk, "title": "GPU choice", "decision": "buy for decoder-small serving"},
            format="json",
        )
    assert response.status_code == 202, response.content
    detail = api.get(response["Location"]).json()
    assert detail["status"] == "ready" and detail["download"], detail
    pdf = api.get(detail["download"])
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    body = b"".join(pdf.streaming_content)
    assert pdf["X-Content-Digest"] == detail["pdf_digest"]
    upload = anonymous.post("/api/v1/reports/verify", {"file": _file(body)}, format="multipart")
    assert upload.status_code == 200 and upload.json()["verdict"] == "VALID", upload.json()
    tampered = anonymous.post("/api/v1/reports/verify", {"file": _file(body + b"%%EOF\n")}, format="multipart")
    assert tampered.json()["verdict"] == "INVALID"


def test_the_certificate_is_public_pem(anonymous):
    response = anonymous.get("/api/v1/reports/certificate")
    assert response.status_code == 200
    certs = x509.load_pem_x509_certificates(response.content)
    assert "benchreg report signing" in certs[0].subject.rfc4514_string()


def test_a_queued_report_cannot_be_downloaded(api, comparison):
    response = api.post(
        "/api/v1/reports", {"comparison": comparison.pk, "title": "t", "decision": "d"}, format="json"
    )  # inside the test transaction: the on-commit render never runs
    assert response.json()["status"] == "queued" and response.json()["download"] is None
    assert api.get(f"/api/v1/reports/{response.json()['id']}/pdf").status_code == 409


def test_bad_requests_are_problem_details(api, anonymous, comparison):
    assert (
        api.post("/api/v1/reports", {"comparison": 999, "title": "t", "decision": "d"}, format="json").status_code
        == 404
    )
    blank = api.post("/api/v1/reports", {"comparison": comparison.pk, "title": " ", "decision": "d"}, format="json")
    assert blank.status_code == 400 and blank["Content-Type"] == "application/problem+json"
    assert anonymous.post(
        "/api/v1/reports", {"comparison": comparison.pk, "title": "t", "decision": "d"}, format="json"
    ).status_code in (401, 403)
    assert anonymous.post("/api/v1/reports/verify", {}, format="multipart").status_code == 400


def _file(data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("report.pdf", data, content_type="application/pdf")
