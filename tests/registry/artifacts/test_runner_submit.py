"""`benchreg run serving --submit` against a live registry: each level's per-request export is uploaded after its
document is accepted, and a refused upload is said in words with the export left on disk."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from registry.models import RunArtifact
from registry.services.submissions import submission_create
from registry.services.tokens import token_create
from tests.registry.artifacts.test_api import document
from tests.runners.serving.test_cli import DEPLOYMENT, run_serving

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def submit_token(user: Any) -> str:
    return token_create(user=user, name="runner", scopes="submit")[1]  # a runner's token: submit, no read


def _exports(out: Path) -> list[Path]:
    return sorted(out.glob("*-requests-*.jsonl"))


def test_each_level_s_export_is_uploaded_after_its_document(
    endpoint, live_server, submit_token, tmp_path, settings, capsys
):
    settings.DATA_DIR = tmp_path / "data"
    out = tmp_path / "out"
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2")
    code = run_serving(url, out, "--request-rates", "4", *DEPLOYMENT, "--submit", "--server", live_server.url,
                       "--token", submit_token)  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    (export,) = _exports(out)
    row = RunArtifact.objects.get()
    assert (
        row.sha256 == "sha256:" + hashlib.sha256(export.read_bytes()).hexdigest() and row.bytes == export.stat().st_size
    )
    assert f"artifact {export.name} of run {row.run_id}: uploaded: {row.bytes:,} bytes" in printed
    (doc_path,) = out.glob("*.json")
    assert json.loads(doc_path.read_text())["provenance"]["artifacts"][0]["sha256"] == row.sha256


def test_a_refused_upload_is_said_and_the_export_stays(endpoint, live_server, submit_token, tmp_path, settings, capsys):
    settings.DATA_DIR = tmp_path / "data"
    settings.MAX_ARTIFACT_BYTES = 10
    out = tmp_path / "out"
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2")
    code = run_serving(url, out, "--request-rates", "4", *DEPLOYMENT, "--submit", "--server", live_server.url,
                       "--token", submit_token)  # fmt: skip
    printed = capsys.readouterr().out
    (export,) = _exports(out)
    assert code == 1
    assert "stored as run" in printed and f"artifact {export.name} of run" in printed
    assert "not uploaded: the document names" in printed and "at most 10 bytes" in printed
    assert f"it stays at {export}" in printed and export.stat().st_size > 10
    assert not RunArtifact.objects.exists()


def test_recompute_serving_takes_the_run_from_the_registry(
    endpoint, live_server, submit_token, user, tmp_path, settings, capsys
):
    from runners.serving import export

    settings.DATA_DIR = tmp_path / "data"
    out = tmp_path / "out"
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2")
    assert run_serving(url, out, "--request-rates", "4", *DEPLOYMENT, "--submit", "--server", live_server.url,
                       "--token", submit_token) == 0  # fmt: skip
    run_id = RunArtifact.objects.get().run_id
    reader = token_create(user=user, name="buyer", scopes="read")[1]
    capsys.readouterr()
    assert export.main(["--server", live_server.url, "--token", reader, "--run", str(run_id)]) == 0
    said = capsys.readouterr().out
    assert f"every figure of run {run_id}" in said and "from " + live_server.url in said
    # a run whose document names an export that was never uploaded, and one that does not exist: said, exit 2
    named_only = submission_create(document=document(), submitted_by=user)[0]
    assert export.main(["--server", live_server.url, "--token", reader, "--run", str(named_only.pk)]) == 2
    assert "level-requests.jsonl" in (err := capsys.readouterr().err) and "it was not uploaded" in err
    assert export.main(["--server", live_server.url, "--token", reader, "--run", str(run_id + 99)]) == 2
    assert f"run {run_id + 99}:" in capsys.readouterr().err
