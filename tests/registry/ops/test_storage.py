"""Report files and uploaded archives through Django's storage API, against a local S3-compatible server
(moto's, in a process of its own): a report rendered by one process is served by another that shares no disk
with it, a store that is down answers 503 (never 500), and the whole scale-out topology (two gunicorn web
servers, two Celery workers, each with a data dir of its own, one PostgreSQL, one Redis, one bucket) serves the
same signed reports.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from django.db import connection

from devtools.scratch import database_url
from registry.choices import ReportStatus
from registry.models import Report
from registry.services.comparisons import comparison_create
from registry.services.reports import report_bytes, report_render, report_request
from registry.services.submissions import submission_create
from tests.conftest import ROOT
from tests.registry.ops.services import RegistryServer, free_port
from tests.registry.reports.conftest import PRICES, SIZING, fleet_documents

BROKER = os.environ.get("BENCHREG_TEST_BROKER_URL", "")
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "benchreg-test",
    "AWS_SECRET_ACCESS_KEY": "benchreg-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


class S3Server:
    """moto's S3-compatible server on a free port, in a process of its own; one bucket per test."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url, timeout=2)
                return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("moto's S3 server did not start within 60 s")

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def bucket(self) -> str:
        name = f"benchreg-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        return [o["Key"] for o in self.client().list_objects_v2(Bucket=bucket).get("Contents", [])]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    server = S3Server()
    yield server
    server.stop()


def s3_storages(bucket: str, endpoint: str) -> dict[str, Any]:
    """settings.STORAGES as BENCHREG_S3_BUCKET / BENCHREG_S3_ENDPOINT_URL make it (registry/settings.py)."""
    from botocore.config import Config

    options = {
        "bucket_name": bucket,
        "endpoint_url": endpoint,
        "addressing_style": "path",
        "region_name": "us-east-1",
        "file_overwrite": False,
        "default_acl": None,
        "client_config": Config(connect_timeout=1, read_timeout=5, retries={"max_attempts": 1}),
    }
    from django.conf import settings

    return {
        **settings.STORAGES,
        "reports": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {**options, "location": "reports"}},
        "uploads": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {**options, "location": "uploads"}},
        "artifacts": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {**options, "location": "artifacts"}},
    }


@pytest.fixture
def on_s3(s3: S3Server, settings: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    bucket = s3.bucket()
    settings.STORAGES = s3_storages(bucket, s3.url)
    settings.DATA_DIR = tmp_path
    return bucket


def _report(user: Any, title: str = "On object storage") -> Report:
    runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(3)]
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, prices=PRICES, sizing=SIZING)
    return report_request(comparison=comparison, title=title, decision="d", requested_by=user)


@pytest.mark.django_db
def test_a_report_is_stored_in_the_bucket_and_served_from_it(
    on_s3: str, s3: S3Server, user: Any, api: Any, tmp_path: Path
) -> None:
    from registry.services.reports import report_verify

    report = report_render(report_id=_report(user).pk)
    assert report.status == ReportStatus.READY, report.last_error
    assert s3.keys(on_s3) == [f"reports/{report.pdf_path}"]
    assert not (tmp_path / "reports").exists()  # nothing on this host's disk
    stored = s3.client().get_object(Bucket=on_s3, Key=f"reports/{report.pdf_path}")["Body"].read()
    assert report.pdf_digest == "sha256:" + hashlib.sha256(stored).hexdigest() and report_bytes(report) == stored
    api.force_authenticate(user)
    response = api.get(f"/api/v1/reports/{report.pk}/pdf")
    served = b"".join(response.streaming_content)
    assert response.status_code == 200 and served == stored and response["X-Content-Digest"] == report.pdf_digest
    verdict = report_verify(pdf=served)
    assert verdict.valid, [(c.code, c.message) for c in verdict.reasons]


@pytest.mark.django_db
def test_a_run_s_artifact_is_kept_in_the_bucket_under_its_sha256_and_served_from_it(
    on_s3: str, s3: S3Server, user: Any, api: Any, tmp_path: Path, settings: Any
) -> None:
    from registry.models import RunArtifact
    from tests.registry.artifacts.test_api import EXPORT, SHA, document, put

    run = submission_create(document=document(), submitted_by=user)[0]
    assert put(api, run.pk, SHA, EXPORT).status_code == 201
    assert s3.keys(on_s3) == [f"artifacts/sha256/{SHA[:2]}/{SHA}"] and not (tmp_path / "artifacts").exists()
    response = api.get(f"/api/v1/submissions/{run.pk}/artifacts/{SHA}")
    assert response.status_code == 200 and b"".join(response.streaming_content) == EXPORT
    settings.STORAGES = s3_storages(on_s3, f"http://127.0.0.1:{free_port()}")  # the store goes down
    assert api.get(f"/api/v1/submissions/{run.pk}/artifacts/{SHA}").status_code == 503
    other = submission_create(
        document={**document(), "system": {**document()["system"], "name": "b"}}, submitted_by=user
    )[0]
    refused = put(api, other.pk, SHA, EXPORT)
    assert refused.status_code == 503 and "nothing was stored" in refused.json()["detail"]
    assert RunArtifact.objects.filter(run=other).count() == 0


@pytest.mark.django_db
def test_with_the_store_down_a_download_is_a_503_problem_and_the_report_stays_ready(
    on_s3: str, s3: S3Server, user: Any, api: Any, settings: Any
) -> None:
    report = report_render(report_id=_report(user).pk)
    settings.STORAGES = s3_storages(on_s3, f"http://127.0.0.1:{free_port()}")  # nothing listens there
    api.force_authenticate(user)
    response = api.get(f"/api/v1/reports/{report.pk}/pdf")
    assert response.status_code == 503, response.content
    assert response.json()["code"] == "storage-unavailable" and "Traceback" not in response.content.decode()
    report.refresh_from_db()
    assert report.status == ReportStatus.READY


@pytest.mark.django_db
def test_an_uploaded_mlperf_archive_is_kept_in_the_uploads_storage(on_s3: str, s3: S3Server, admin_client: Any) -> None:
    from registry.models import Submission
    from tests.registry.importers.test_admin_upload import URL, tarball

    upload = tarball()
    content = upload.getvalue()
    upload.name = "round v5.1.tar.gz"
    response = admin_client.post(URL, {"archive": upload, "round": ""})
    assert response.status_code == 200 and "3 stored" in response.content.decode()
    assert Submission.objects.filter(source="import").count() == 3
    [key] = s3.keys(on_s3)
    assert key.startswith("uploads/mlperf/") and key.endswith(".tar.gz")
    assert s3.client().get_object(Bucket=on_s3, Key=key)["Body"].read() == content


# -- the scale-out topology ------------------------------------------------------------------------------------


def _data_dir(root: Path, name: str, keys: Path) -> Path:
    """A process's own data dir; the signing keys are the deployment's secrets, mounted into each (copied here)."""
    folder = root / name
    folder.mkdir()
    shutil.copytree(keys, folder / "keys")
    return folder


@pytest.mark.services
@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not BROKER, reason="needs Redis: set BENCHREG_TEST_BROKER_URL=redis://...")
def test_two_web_servers_and_two_workers_with_no_shared_disk_serve_the_same_reports(
    s3: S3Server, user: Any, token: str, tmp_path: Path, settings: Any
) -> None:
    from registry.audit.keys import checkpoint_key
    from registry.reports.signing import signing_identity
    from registry.services.reports import report_verify

    settings.DATA_DIR = tmp_path / "secrets"
    checkpoint_key(), signing_identity()  # generated once, as an operator would, then given to every process
    keys = tmp_path / "secrets" / "keys"
    bucket, queue = s3.bucket(), f"scaleout-{uuid.uuid4().hex[:8]}"
    base = {
        **os.environ,
        **CREDENTIALS,
        "BENCHREG_S3_BUCKET": bucket,
        "BENCHREG_S3_ENDPOINT_URL": s3.url,
        "BENCHREG_S3_REGION": "us-east-1",
        "BENCHREG_TASK_QUEUE": queue,
        "CELERY_BROKER_URL": BROKER,
        "BENCHREG_REPORTS_PENDING_PER_PERSON": "10",  # four reports of one person are in flight at once
        "SECRET_KEY": "scale-out-test-secret-key-shared-by-every-process",
        "DATABASE_URL": database_url(os.environ["DATABASE_URL"], connection.settings_dict["NAME"]),
    }
    webs = [RegistryServer({**base, "BENCHREG_DATA_DIR": str(_data_dir(tmp_path, f"web-{n}", keys))}) for n in "ab"]
    workers = []
    try:
        for web in webs:
            web.start()
        for n in (1, 2):
            log = tmp_path / f"worker-{n}.log"
            env = {**base, "BENCHREG_DATA_DIR": str(_data_dir(tmp_path, f"worker-{n}", keys))}
            with log.open("ab") as out:
                workers.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "celery",
                            "-A",
                            "registry",
                            "worker",
                            "--pool",
                            "solo",
                            "-Q",
                            queue,
                            "-n",
                            f"w{n}-{queue}@%h",
                            "--without-gossip",
                            "--without-mingle",
                            "-l",
                            "info",
                        ],
                        cwd=ROOT,
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        headers = {"Authorization": f"Token {token}"}
        runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(3)]
        comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, prices=PRICES, sizing=SIZING)
        requested = [
            httpx.post(
                f"{webs[i % 2].url}/api/v1/reports",
                headers=headers,
                timeout=60,
                json={"comparison": comparison.pk, "title": f"Scale-out {i}", "decision": "d"},
            )
            for i in range(4)
        ]
        assert all(r.status_code == 202 for r in requested), [r.text for r in requested]
        ids = [r.json()["id"] for r in requested]
        deadline = time.monotonic() + 300
        while (
            time.monotonic() < deadline
            and Report.objects.filter(pk__in=ids, status__in=[ReportStatus.QUEUED, ReportStatus.RENDERING]).exists()
        ):
            time.sleep(0.5)
        logs = "\n".join((tmp_path / f"worker-{n}.log").read_text()[-3000:] for n in (1, 2))
        reports = list(Report.objects.filter(pk__in=ids))
        assert all(r.status == ReportStatus.READY for r in reports), ([r.last_error for r in reports], logs)
        for report in reports:  # each PDF is served alike by both web servers, whoever rendered it
            served = [
                httpx.get(f"{web.url}/api/v1/reports/{report.pk}/pdf", headers=headers, timeout=60) for web in webs
            ]
            assert [s.status_code for s in served] == [200, 200]
            assert served[0].content == served[1].content
            assert "sha256:" + hashlib.sha256(served[0].content).hexdigest() == report.pdf_digest
            verdict = report_verify(pdf=served[0].content)
            assert verdict.valid, [(c.code, c.message) for c in verdict.reasons]
        assert sorted(s3.keys(bucket)) == sorted(f"reports/{r.pdf_path}" for r in reports)
        assert not list(tmp_path.glob("*/reports/*.pdf"))  # no process kept a report on its own disk
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(timeout=60)
        for web in webs:
            web.stop()
        import redis

        redis.Redis.from_url(BROKER).delete(queue, f"{queue}.unacked")


@pytest.mark.django_db
def test_readyz_names_the_bucket_and_fails_when_it_is_missing(
    on_s3: str, s3: S3Server, anonymous: Any, settings: Any
) -> None:
    ready = anonymous.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"]["storage"]["detail"] == f"ok: bucket {on_s3}"
    settings.STORAGES = s3_storages("no-such-bucket", s3.url)
    missing = anonymous.get("/readyz")
    assert missing.status_code == 503 and missing.json()["checks"]["storage"]["status"] == "failed"
    assert missing["Retry-After"]
