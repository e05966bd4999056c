"""The audit log's pages, public like its API: entries newest first in words, the latest checkpoints with their
signature and each witness's cosignature checked, a run's inclusion proofs checked here (and NOT verified once its
entry is rewritten), the proofs as a file that the page's own offline script verifies, bounded queries, and a clear
400 or 404 for bad parameters."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.db import connection
from django.test import Client

from protocol.cosignature import CosignerKey, cosign
from registry.choices import AuditKind, CheckpointReason
from registry.models import AuditEntry, Checkpoint, Cosignature
from registry.presentation.audit import VERIFY_SCRIPT
from registry.services.audit import audit_append_many, checkpoint_sign
from registry.services.submissions import submission_create, submission_withdraw
from tests.registry.services.test_submissions import document_variant

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]
ROW = re.compile(r'<th scope="row"><span class="visually-hidden">Entry </span>(\d+)</th>')  # an entry's number


@pytest.fixture(autouse=True)
def _checkpoint_key_in_tmp(settings: Any, tmp_path: Path) -> None:
    """Each test signs with a key generated in its own data directory, never the developer's."""
    settings.DATA_DIR = tmp_path
    settings.BENCHREG_CHECKPOINT_KEY = ""
    settings.BENCHREG_LOG_ORIGIN = "benchreg.test/audit"
    settings.BENCHREG_WITNESSES = []


@pytest.fixture
def runs(user: Any, server_example: dict[str, Any]) -> list[Any]:
    """Three runs, the second withdrawn: entries #0..#3; a checkpoint over all four."""
    made = [submission_create(document=document_variant(server_example, i), submitted_by=user)[0] for i in range(3)]
    submission_withdraw(submission=made[1], reason="driver not recorded", actor=user)
    checkpoint_sign(reason=CheckpointReason.MANUAL)
    return made


def _page(path: str, status: int = 200) -> str:
    response = Client().get(path)  # anonymous: the log is public
    assert response.status_code == status, (path, response.status_code, response.content[:500])
    return response.content.decode()


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _superuser(sql: str, params: list[Any]) -> None:
    """Rewrite a row below the ORM, as a database superuser could (the append-only triggers switched off)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = replica")
        cursor.execute(sql, params)
        if connection.vendor == "postgresql":
            cursor.execute("SET session_replication_role = DEFAULT")


def test_anyone_reads_the_entries_newest_first_in_words_with_their_subjects_linked(runs: list[Any]) -> None:
    html = _page("/audit/")
    text = _text(html.split('id="entries-heading"', 1)[1])
    assert text.index("run withdrawn") < text.index("run submitted")  # #3 (the withdrawal) comes first
    assert f'href="/runs/{runs[1].pk}/"' in html and f'href="/audit/runs/{runs[1].pk}/"' in html
    entry = AuditEntry.objects.get(seq=0)
    assert f'title="{entry.leaf_hash}">{entry.leaf_hash[:12]}…</code>' in html  # short, the full value on hover
    assert f'data-copy="{entry.leaf_hash}"' in html
    assert "committed, not published" in text and "lab-7" not in text  # who: the commitment, not the actor's name
    assert f"The log holds {AuditEntry.objects.count()} entries" in _text(html)


def test_a_reader_with_the_read_scope_sees_who_by_name_as_in_the_api(runs: list[Any], user: Any) -> None:
    client = Client()
    client.force_login(user)
    entries = _text(client.get("/audit/").content.decode().split('id="entries-heading"', 1)[1])
    assert "lab-7" in entries and "committed, not published" not in entries


def test_the_latest_checkpoint_shows_its_root_its_verified_signature_and_each_witness_checked(
    runs: list[Any], settings: Any
) -> None:
    checkpoint = Checkpoint.objects.order_by("-id").first()
    assert checkpoint is not None
    good, forged = (CosignerKey(f"witness.test/{n}", Ed25519PrivateKey.generate()) for n in ("gov", "lab"))
    body = checkpoint.note[: checkpoint.note.index("\n\n") + 1].encode()
    _cosignature(checkpoint, good, cosign(body, good, 1_790_000_000))
    # a line signed by another key, stored under the lab witness's key: it must not pass for the lab's cosignature
    _cosignature(
        checkpoint, forged, cosign(body, CosignerKey(forged.name, Ed25519PrivateKey.generate()), 1_790_000_000)
    )
    settings.BENCHREG_WITNESSES = [f"http://127.0.0.1:9 {good.public.vkey}"]
    text = _text(_page("/audit/"))
    assert f"Checkpoint of size {checkpoint.size}" in text and checkpoint.root_hash in text
    assert "signature verified" in text
    assert (
        f"witness.test/gov {good.public.key_id.hex()} 2026-09-21 14:13:20 verified witness.test/gov cosigned it" in text
    )
    assert f"witness.test/lab {forged.public.key_id.hex()}" in text
    assert "witness.test/lab: cosignature NOT verified" in text


def _cosignature(checkpoint: Checkpoint, key: CosignerKey, line: str) -> None:
    from datetime import UTC, datetime

    Cosignature.objects.create(
        checkpoint=checkpoint, witness=key.name, vkey=key.public.vkey, line=line.rstrip("\n"),
        timestamp=1_790_000_000, created_at=datetime.now(UTC),
    )  # fmt: skip


def test_a_checkpoint_whose_note_was_rewritten_says_its_signature_is_not_verified(runs: list[Any]) -> None:
    checkpoint = Checkpoint.objects.order_by("-id").first()
    assert checkpoint is not None
    forged = checkpoint.note.replace(f"\n{checkpoint.size}\n", f"\n{checkpoint.size + 1}\n", 1)
    _superuser("UPDATE registry_checkpoint SET note = %s WHERE id = %s", [forged, checkpoint.pk])
    text = _text(_page("/audit/"))
    assert "signature NOT verified" in text
    text = _text(_page(f"/audit/runs/{runs[0].pk}/"))
    assert "Entry 0 is NOT verified" in text and "the checkpoint cannot be trusted" in text


def test_a_runs_entries_are_proved_included_in_the_latest_checkpoint_in_words(runs: list[Any]) -> None:
    text = _text(_page(f"/audit/runs/{runs[1].pk}/"))
    submitted, withdrawn = (
        AuditEntry.objects.get(subject=runs[1].digest, kind=k).seq
        for k in (AuditKind.RUN_SUBMITTED, AuditKind.RUN_WITHDRAWN)
    )
    assert f"Entry {submitted} is included in the checkpoint of size 4 — proof verified." in text
    assert f"Entry {withdrawn} is included in the checkpoint of size 4 — proof verified." in text
    assert "NOT verified" not in text
    assert "signature verified" in text and runs[1].digest in text


def test_a_rewritten_entry_shows_not_verified_and_says_it_was_changed(runs: list[Any]) -> None:
    seq = AuditEntry.objects.get(subject=runs[0].digest).seq
    _superuser(
        "UPDATE registry_auditentry SET entry = replace(entry, '\"declared\"', '\"vouched\"') WHERE seq = %s", [seq]
    )
    assert '"vouched"' in AuditEntry.objects.get(seq=seq).entry
    text = _text(_page(f"/audit/runs/{runs[0].pk}/"))
    assert f"Entry {seq} is NOT verified against the checkpoint of size 4" in text
    assert "the entry was changed" in text
    assert f"Entry {seq} is included" not in text
    assert "Entry" in _text(_page(f"/audit/runs/{runs[2].pk}/")) and "proof verified" in _text(
        _page(f"/audit/runs/{runs[2].pk}/")
    )  # the other runs' entries still verify


def test_an_entry_rewritten_with_its_leaf_hash_still_shows_not_verified(runs: list[Any]) -> None:
    """A superuser who rewrites the entry and the hash stored beside it changes the tree: its root is no longer the
    root the checkpoint signed."""
    from protocol.transparency import leaf_hash

    row = AuditEntry.objects.get(subject=runs[2].digest)
    text = row.entry.replace('"declared"', '"vouched"')
    _superuser(
        "UPDATE registry_auditentry SET entry = %s, leaf_hash = %s WHERE seq = %s",
        [text, leaf_hash(text.encode()).hex(), row.seq],
    )
    page = _text(_page(f"/audit/runs/{runs[2].pk}/"))
    assert f"Entry {row.seq} is NOT verified against the checkpoint of size 4" in page
    assert "the proof does not lead from this entry to the checkpoint's signed root" in page


def test_the_downloaded_proofs_verify_offline_with_the_pages_own_script(runs: list[Any], tmp_path: Path) -> None:
    response = Client().get(f"/audit/runs/{runs[1].pk}/proofs.json")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="audit-run-{runs[1].pk}-proofs.json"'
    proofs = json.loads(response.content)
    assert [e["kind"] for e in proofs["entries"]] == ["run.submitted", "run.withdrawn"]
    vkey = proofs["verifier_key"]
    assert vkey in _page(f"/audit/runs/{runs[1].pk}/")  # the page prints the key the script needs
    ok = _offline(tmp_path / "good.json", proofs, vkey)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count("included in the checkpoint of size 4") == 2
    proofs["entries"][0]["entry"] = proofs["entries"][0]["entry"].replace('"declared"', '"vouched"')
    bad = _offline(tmp_path / "bad.json", proofs, vkey)
    assert bad.returncode == 1 and "NOT VERIFIED" in bad.stdout


def _offline(path: Path, proofs: dict[str, Any], vkey: str) -> subprocess.CompletedProcess[str]:
    path.write_text(json.dumps(proofs))
    return subprocess.run(
        [sys.executable, "-", str(path), vkey], input=VERIFY_SCRIPT, capture_output=True, text=True, cwd=ROOT,
        timeout=60, check=False,
    )  # fmt: skip


def test_an_entry_newer_than_the_checkpoint_is_said_to_be_not_covered_yet(
    runs: list[Any], user: Any, server_example: dict[str, Any]
) -> None:
    late, _ = submission_create(document=document_variant(server_example, 9), submitted_by=user)
    text = _text(_page(f"/audit/runs/{late.pk}/"))
    assert "Entry 4 is newer than the latest checkpoint (size 4); the next checkpoint, signed within 300 s" in text
    assert json.loads(Client().get(f"/audit/runs/{late.pk}/proofs.json").content)["not_yet_covered"] == [4]


def test_the_filters_show_one_kind_or_one_runs_entries(runs: list[Any]) -> None:
    text = _text(_page("/audit/?kind=run.withdrawn").split('id="entries-heading"', 1)[1])
    assert "run withdrawn" in text and "run submitted" not in text
    html = _page(f"/audit/?run={runs[2].pk}")
    rows = ROW.findall(html.split("entries-heading", 1)[1])
    assert rows == [str(AuditEntry.objects.get(subject=runs[2].digest).seq)]


def test_pages_of_entries_walk_the_whole_log_newest_first_without_overlap(
    runs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("registry.web.audit.PAGE_SIZE", 3)
    events = [{"kind": AuditKind.JOB_STATE, "actor": "t", "subject": f"job:{i}", "payload": {}} for i in range(6)]
    audit_append_many(events=events)  # entries #4..#9
    seen, path = [], "/audit/"
    while path:
        html = _page(path)
        seen += [int(n) for n in ROW.findall(html.split("entries-heading", 1)[1])]
        older = re.search(r'href="([^"]+)" rel="next"', html)
        path = older.group(1).replace("&amp;", "&") if older else ""
    assert seen == list(range(9, -1, -1))
    html = _page("/audit/?before=3")
    newer = re.search(r'href="([^"]+)" rel="prev"', html)
    assert newer and newer.group(1) == "/audit/?after=2"
    assert ROW.findall(_page("/audit/?after=2").split("entries-heading", 1)[1]) == [
        "5", "4", "3",
    ]  # fmt: skip


def test_a_page_of_entries_costs_the_same_few_queries_however_long_the_log(
    runs: list[Any], django_assert_max_num_queries: Any
) -> None:
    Client().get("/audit/")  # the process's Merkle tree and key are warm, as on a running server
    with django_assert_max_num_queries(8):
        assert Client().get("/audit/").status_code == 200
    audit_append_many(events=[{"kind": AuditKind.JOB_STATE, "actor": "t", "subject": f"job:{i}"} for i in range(120)])
    checkpoint_sign(reason=CheckpointReason.MANUAL)
    Client().get(f"/audit/runs/{runs[0].pk}/")
    with django_assert_max_num_queries(8):
        assert Client().get("/audit/?kind=job.state&before=100").status_code == 200
    with django_assert_max_num_queries(8):
        assert Client().get(f"/audit/?run={runs[0].pk}").status_code == 200
    with django_assert_max_num_queries(7):
        assert Client().get(f"/audit/runs/{runs[0].pk}/").status_code == 200


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("kind=run.deleted", "kind: 'run.deleted' is not a kind of entry (one of run.submitted, run.withdrawn"),
        ("before=abc", "before: a whole number from 0 to 9223372036854775807 is required (got 'abc')"),
        ("before=%C2%B2", "before: a whole number"),
        ("after=-1", "after: a whole number"),
        ("before=" + "9" * 5000, "before: a whole number"),
        ("run=1.5", "run: a whole number"),
        ("before=3&after=1", "before, after: give one of them, not both"),
        ("page=2", "'page': not a parameter of this page"),
    ],
)
def test_bad_parameters_get_a_400_page_that_names_them(runs: list[Any], query: str, words: str) -> None:
    assert words in _text(_page(f"/audit/?{query}", status=400))


def test_an_unknown_run_is_a_404_page_that_says_so(runs: list[Any]) -> None:
    assert "There is no run 999999 in the registry" in _page("/audit/?run=999999", status=404)
    assert "There is no run 999999 in the registry" in _page("/audit/runs/999999/", status=404)
    assert "There is no run 999999" in _page("/audit/runs/999999/proofs.json", status=404)


def test_the_navigation_and_the_footer_lead_to_the_audit_log(runs: list[Any], user: Any) -> None:
    assert 'href="/audit/">the audit log</a>' in _page("/audit/")  # the footer, for readers without an account
    client = Client()
    client.force_login(user)
    html = client.get("/audit/").content.decode()
    assert '<a href="/audit/" aria-current="page">Audit log</a>' in html
