"""A run's artifacts through the API: upload the file its document names, download it as readable as the run;
every refusal in words with nothing stored (no row, no file)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from registry.models import AuditEntry, RunArtifact
from registry.models.artifacts import storage_name
from registry.services.submissions import submission_create
from registry.services.tokens import token_create
from tests.conftest import load_example

pytestmark = pytest.mark.django_db

EXPORT = b'{"index": 0, "outcome": "completed"}\n{"index": 1, "outcome": "completed"}\n'
SHA = hashlib.sha256(EXPORT).hexdigest()


def document(data: bytes = EXPORT, name: str = "level-requests.jsonl", size: int | None = None) -> dict[str, Any]:
    doc = load_example("inference-server-h100-bf16")
    doc["protocol"] = "benchreg.submission/1.3"
    doc["provenance"]["artifacts"] = [
        {
            "name": name,
            "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
            "bytes": len(data) if size is None else size,
            "media_type": "application/jsonl",
            "format": "benchreg.serving.requests/1",
        }
    ]
    return doc


@pytest.fixture
def data_dir(settings: Any, tmp_path: Path) -> Path:
    settings.DATA_DIR = tmp_path
    return tmp_path


@pytest.fixture
def run(user: Any, data_dir: Path) -> Any:  # after DATA_DIR moves: the audit commitment key lives there
    return submission_create(document=document(), submitted_by=user)[0]


def put(client: APIClient, run_id: int, sha: str, body: bytes) -> Any:
    return client.put(
        f"/api/v1/submissions/{run_id}/artifacts/{sha}", data=body, content_type="application/octet-stream"
    )


def stored_files(data_dir: Path) -> list[Path]:
    return (
        sorted(p for p in (data_dir / "artifacts").rglob("*") if p.is_file())
        if (data_dir / "artifacts").exists()
        else []
    )


def nothing_stored(data_dir: Path) -> bool:
    return not RunArtifact.objects.exists() and stored_files(data_dir) == []


def test_the_named_export_is_kept_once_audited_and_downloaded_as_uploaded(api, run, data_dir, client, user):
    audits = AuditEntry.objects.count()
    first = put(api, run.pk, SHA, EXPORT)
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["sha256"] == f"sha256:{SHA}" and body["bytes"] == len(EXPORT) and body["name"] == "level-requests.jsonl"
    assert body["format"] == "benchreg.serving.requests/1" and body["url"].endswith(f"/artifacts/{SHA}")
    assert stored_files(data_dir) == [data_dir / "artifacts" / storage_name(f"sha256:{SHA}")]
    entry = AuditEntry.objects.order_by("-seq").first()
    assert AuditEntry.objects.count() == audits + 1 and entry.kind == "artifact.stored"
    assert entry.subject == run.digest and f'"sha256":"sha256:{SHA}"' in entry.entry

    again = put(api, run.pk, SHA, EXPORT)  # the same bytes: the same row, nothing new
    assert again.status_code == 200 and again.json()["stored_at"] == body["stored_at"]
    assert RunArtifact.objects.count() == 1 and AuditEntry.objects.count() == audits + 1

    got = api.get(f"/api/v1/submissions/{run.pk}/artifacts/{SHA}")
    assert got.status_code == 200 and b"".join(got.streaming_content) == EXPORT
    assert got["Content-Type"] == "application/jsonl" and got["ETag"] == f'"sha256:{SHA}"'
    assert got["Content-Length"] == str(len(EXPORT))
    detail = api.get(f"/api/v1/submissions/{run.pk}").json()
    assert detail["artifacts"][0]["stored"] is True and detail["artifacts"][0]["url"].endswith(SHA)


def test_two_runs_naming_the_same_file_share_one_copy(api, run, user, data_dir):
    other = submission_create(
        document={**document(), "system": {**document()["system"], "name": "b"}}, submitted_by=user
    )[0]
    assert put(api, run.pk, SHA, EXPORT).status_code == 201
    assert put(api, other.pk, SHA, EXPORT).status_code == 201
    assert RunArtifact.objects.count() == 2 and len(stored_files(data_dir)) == 1


@pytest.mark.parametrize(
    ("sha", "body", "status", "words"),
    [
        (SHA, EXPORT[:-1] + b"X", 422, f"hash to sha256:{hashlib.sha256(EXPORT[:-1] + b'X').hexdigest()}, not to"),
        (SHA, EXPORT + b"\n", 422, f"the document names level-requests.jsonl as {len(EXPORT)} bytes"),
        (SHA, b"", 422, f"the document names level-requests.jsonl as {len(EXPORT)} bytes"),
        (hashlib.sha256(b"other").hexdigest(), b"other", 409, "names no artifact with sha256:"),
        ("not-a-sha", EXPORT, 400, "is not a sha256"),
    ],
)
def test_bytes_that_are_not_the_named_file_are_refused_in_words_and_nothing_is_stored(
    api, run, data_dir, sha, body, status, words
):
    response = put(api, run.pk, sha, body)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json" and words in response.json()["detail"]
    assert nothing_stored(data_dir)


def test_a_body_over_the_limit_is_413_and_nothing_is_stored(api, run, data_dir, settings):
    settings.MAX_ARTIFACT_BYTES = len(EXPORT) - 1
    response = put(api, run.pk, SHA, EXPORT)
    assert response.status_code == 413 and "at most 73 bytes" in response.json()["detail"]
    assert nothing_stored(data_dir)


def test_a_stream_longer_than_its_content_length_claims_stops_at_the_limit(run, data_dir, settings, user):
    """The cap holds on what is read, not on what the client declared."""
    from registry.services.artifacts import ArtifactTooLarge, artifact_store

    settings.MAX_ARTIFACT_BYTES = 10

    class Endless:
        def read(self, n: int) -> bytes:
            return b"x" * min(n, 7)

    with pytest.raises(ArtifactTooLarge):
        artifact_store(run=run, sha256=f"sha256:{SHA}", stream=Endless(), declared_length=None, uploaded_by=user)
    assert nothing_stored(data_dir)


def test_a_failure_after_the_file_is_written_leaves_neither_row_nor_file(api, run, data_dir, monkeypatch):
    from registry.services import artifacts

    def boom(**kwargs: Any) -> Any:
        raise RuntimeError("the audit queue is gone")

    monkeypatch.setattr(artifacts, "audit_append", boom)
    with pytest.raises(RuntimeError):
        put(api, run.pk, SHA, EXPORT)
    assert nothing_stored(data_dir)


def test_who_may_not_submit_is_refused_and_a_run_not_visible_is_404(run, data_dir, django_user_model, anonymous):
    viewer = django_user_model.objects.create_user("vera", password="pw-for-tests-only")
    viewer.groups.add(Group.objects.get_or_create(name="viewer")[0])
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=viewer, name='r', scopes='read')[1]}")
    assert put(reader, run.pk, SHA, EXPORT).status_code == 403
    assert put(anonymous, run.pk, SHA, EXPORT).status_code == 401
    assert anonymous.get(f"/api/v1/submissions/{run.pk}/artifacts/{SHA}").status_code == 401
    assert nothing_stored(data_dir)
    assert reader.get(f"/api/v1/submissions/{run.pk + 999}/artifacts/{SHA}").status_code == 404


def test_a_named_file_not_uploaded_is_404_in_words(api, run, data_dir):
    response = api.get(f"/api/v1/submissions/{run.pk}/artifacts/{SHA}")
    assert response.status_code == 404 and "level-requests.jsonl" in response.json()["detail"]
    assert "not uploaded" in response.json()["detail"]


def test_stored_bytes_that_no_longer_hash_to_their_sha256_are_not_served_whole(api, run, data_dir):
    from registry.services.artifacts import ArtifactCorrupt

    assert put(api, run.pk, SHA, EXPORT).status_code == 201
    (data_dir / "artifacts" / storage_name(f"sha256:{SHA}")).write_bytes(EXPORT[:-1] + b"X")
    response = api.get(f"/api/v1/submissions/{run.pk}/artifacts/{SHA}")
    with pytest.raises(ArtifactCorrupt):
        b"".join(response.streaming_content)


def test_an_export_larger_than_any_json_body_is_streamed_in(user, data_dir, api, settings):
    big = b"x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024 * 1024)
    run = submission_create(document=document(big), submitted_by=user)[0]
    sha = hashlib.sha256(big).hexdigest()
    assert put(api, run.pk, sha, big).status_code == 201
    assert (data_dir / "artifacts" / storage_name(f"sha256:{sha}")).read_bytes() == big


def test_the_run_page_lists_each_named_file_stored_or_not(api, run, data_dir, client, user, django_user_model):
    client.force_login(user)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "level-requests.jsonl" in page and "named by the document, not uploaded" in page
    assert f"/api/v1/submissions/{run.pk}/artifacts/{SHA}" not in page
    assert put(api, run.pk, SHA, EXPORT).status_code == 201
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert f'href="/api/v1/submissions/{run.pk}/artifacts/{SHA}"' in page and "not uploaded" not in page
    assert f"{len(EXPORT)} bytes" in page and f"sha256:{SHA}" in page
    assert client.get(f"/api/v1/submissions/{run.pk}/artifacts/{SHA}").status_code == 200  # the link, signed in


def test_the_upload_s_audit_entry_passes_audit_verify(data_dir, api, run):  # the token's entry too under data_dir's key
    import io

    from django.core.management import call_command

    assert put(api, run.pk, SHA, EXPORT).status_code == 201
    out = io.StringIO()
    call_command("audit", "verify", stdout=out)  # raises CommandError on any entry it cannot account for
    assert "artifact.stored" in AuditEntry.objects.values_list("kind", flat=True)
