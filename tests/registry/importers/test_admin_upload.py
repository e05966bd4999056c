"""The admin upload imports a tree like the command, and refuses archives that try to escape."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from registry.models import Submission
from tests.conftest import SHARED

pytestmark = pytest.mark.django_db
SAMPLE = SHARED / "data" / "mlperf"
URL = "/admin/registry/submission/import-mlperf/"


@pytest.fixture
def admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("boss", password="pw-for-tests-only")
    client.force_login(admin)
    return client


def tarball() -> io.BytesIO:
    if not SAMPLE.exists():
        pytest.skip("the shared MLPerf sample tree is not beside this checkout")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(SAMPLE, arcname="mlperf")
    buffer.seek(0)
    buffer.name = "amd.tar.gz"
    return buffer


def test_an_admin_uploads_a_tree_and_reads_the_report(admin_client):
    response = admin_client.post(URL, {"archive": tarball(), "round": ""})
    assert response.status_code == 200
    text = response.content.decode()
    assert "3 stored" in text and "mlperf_log_summary.txt" in text
    assert Submission.objects.filter(source="import").count() == 3
    again = admin_client.post(URL, {"archive": tarball(), "round": ""})
    assert "3 known" in again.content.decode() and Submission.objects.count() == 3


def test_an_archive_that_escapes_its_folder_is_refused(admin_client, tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../../etc/evil.txt", "x")
    buffer.seek(0)
    buffer.name = "evil.zip"
    response = admin_client.post(URL, {"archive": buffer})
    assert response.status_code == 200
    assert "must stay inside" in response.content.decode()
    assert not Submission.objects.exists()


def test_the_upload_page_is_not_for_viewers(client, django_user_model):
    viewer = django_user_model.objects.create_user("viewer", password="pw-for-tests-only", is_staff=False)
    client.force_login(viewer)
    assert client.get(URL).status_code in (302, 404)
