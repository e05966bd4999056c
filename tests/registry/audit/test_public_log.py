"""Anyone, without an account, fetches the audit log and verifies it: public entry texts (format 2), a run's
leaf rebuilt from its public record, and the C2SP tlog-tiles layout checked by a client written from the spec."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest

from protocol.audit_entries import entry_text
from registry.choices import AuditKind
from registry.models import AuditEntry, AuditHead
from registry.services.audit import audit_append, checkpoint_sign
from registry.services.submissions import submission_create, submission_withdraw
from registry.services.tokens import token_create
from tests.registry.audit import tlog_client
from tests.registry.services.test_submissions import document_variant

pytestmark = pytest.mark.django_db
PREFIX = "/api/v1/audit/log/"


def test_every_entry_is_public_and_holds_no_user_or_token(user, server_example, anonymous):
    _, plain = token_create(user=user, name="lab script", scopes="submit,read")
    runs = [submission_create(document=document_variant(server_example, i), submitted_by=user)[0] for i in range(2)]
    submission_withdraw(submission=runs[1], reason="driver not recorded", actor=user)
    body = anonymous.get("/api/v1/audit/entries?limit=100").json()["results"]
    assert [e["kind"] for e in body] == ["token.created", "run.submitted", "run.submitted", "run.withdrawn"]
    for e in body:
        assert e["format"] == 3 and e["actor"] is None
        assert json.loads(e["entry"])["who"].startswith("hmac-sha256:")  # committed, not published
        for secret in (user.username, plain[:12], "lab script", "driver not recorded"):
            assert secret not in e["entry"], (secret, e["entry"])


def test_a_runs_leaf_is_rebuilt_from_its_public_record(user, server_example, api, anonymous):
    run, _ = submission_create(document=document_variant(server_example, 1), submitted_by=user)
    record = api.get(f"/api/v1/submissions/{run.pk}").json()
    checkpoint_sign(reason="manual")
    proof = anonymous.get(f"/api/v1/audit/inclusion?entry={record['audit_seq']}").json()
    # Rebuilt with plain json (RFC 8785 equals sorted compact JSON for these ASCII strings and integers). Every
    # field but `who` comes from the run's public record; `who` (the keyed commitment to who stored it) is opaque
    # to a reader and taken from the served entry, whose hash the proof then checks.
    who = json.loads(proof["entry"])["who"]
    assert who.startswith("hmac-sha256:") and user.username not in proof["entry"]
    time = datetime.fromisoformat(record["submitted_at"].replace("Z", "+00:00"))
    rebuilt = json.dumps(
        {
            "kind": "run.submitted",
            "payload": {"run": record["id"], "trust": record["trust"]},
            "seq": record["audit_seq"],
            "subject": record["digest"],
            "time": time.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "v": 3,
            "who": who,
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
    assert proof["leaf_hash"] == hashlib.sha256(b"\x00" + rebuilt).hexdigest()
    assert proof["entry"].encode() == rebuilt


def _format_one_entry(seq: int) -> None:
    """An entry as written before migration 0011 (format 1: it names the actor and a token prefix)."""
    text = json.dumps(
        {
            "actor": "alice",
            "kind": "token.created",
            "payload": {"prefix": "brt_abcdefgh"},
            "seq": seq,
            "subject": f"token:{seq}",
            "time": "2026-01-01T00:00:00Z",
        },
        separators=(",", ":"),
        sort_keys=True,
    )
    AuditEntry.objects.create(
        seq=seq,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        actor="alice",
        kind="token.created",
        subject=f"token:{seq}",
        entry=text,
        leaf_hash=hashlib.sha256(b"\x00" + text.encode()).hexdigest(),
        format=1,
    )
    AuditHead.objects.filter(id=1).update(size=seq + 1)


def test_format_one_entries_keep_their_text_for_readers_only(user, api, anonymous):
    old = AuditHead.objects.get(id=1).size  # the api fixture's own token.created entry comes first
    _format_one_entry(old)
    audit_append(kind=AuditKind.TOKEN_REVOKED, actor="alice", subject="token:0")
    checkpoint_sign(reason="manual")
    public = anonymous.get("/api/v1/audit/entries").json()["results"][old:]
    assert [(e["format"], e["entry"] is None) for e in public] == [(1, True), (3, False)]
    assert "entry" not in anonymous.get(f"/api/v1/audit/inclusion?entry={old}").json()
    assert "alice" in api.get(f"/api/v1/audit/inclusion?entry={old}").json()["entry"]
    size = old + 2
    refused = anonymous.get(PREFIX + f"tile/entries/000.p/{size}")
    assert refused.status_code == 403 and refused["Content-Type"] == "application/problem+json"
    assert api.get(PREFIX + f"tile/entries/000.p/{size}").status_code == 200
    assert anonymous.get(PREFIX + f"tile/0/000.p/{size}").status_code == 200  # hashes stay public
    from django.core.management import call_command

    call_command("audit", "verify", stdout=__import__("io").StringIO())  # both formats verify


def test_format_two_entries_still_verify_and_a_new_entry_commits_its_actor(user):
    """An entry written between migrations 0011 and 0019 (format 2: no `who`) keeps verifying beside format 3."""
    import hashlib as h
    from io import StringIO

    from django.core.management import call_command

    seq = AuditHead.objects.get(id=1).size
    when = datetime(2026, 6, 1, tzinfo=UTC)
    text = entry_text(seq=seq, time=when, kind="token.revoked", subject="token:9", payload={})
    assert json.loads(text)["v"] == 2 and "who" not in json.loads(text)
    AuditEntry.objects.create(
        seq=seq,
        created_at=when,
        actor="alice",
        kind="token.revoked",
        subject="token:9",
        entry=text.decode(),
        leaf_hash=h.sha256(b"\x00" + text).hexdigest(),
        format=2,
    )
    AuditHead.objects.filter(id=1).update(size=seq + 1)
    audit_append(kind=AuditKind.TOKEN_REVOKED, actor="alice", actor_user=user.pk, subject="token:10")
    new = AuditEntry.objects.get(seq=seq + 1)
    assert new.format == 3 and new.actor_user == user.pk and "alice" not in new.entry
    call_command("audit", "verify", stdout=StringIO())


def _get(client):
    def get(path: str) -> tuple[int, dict[str, str], bytes]:
        response = client.get(PREFIX + path)
        return response.status_code, dict(response.headers), response.content

    return get


@pytest.mark.slow  # run early: tests/conftest.py starts slow modules first
def test_a_spec_client_verifies_the_tiles_against_the_signed_checkpoint(user, anonymous):
    for i in range(600):  # two full level-0 tiles, a partial one, and a partial level-1 tile
        audit_append(kind=AuditKind.JOB_STATE, actor="test", subject=f"job:{i}", payload={"job": i})
    checkpoint_sign(reason="manual")
    vkey = anonymous.get("/api/v1/audit/public-key").json()["verifier_key"]
    head, entries, cache = tlog_client.verify_log(_get(anonymous), vkey)
    assert head.size == 600 and json.loads(entries[599])["subject"] == "job:599"
    assert cache["tile/0/000"] == cache["tile/entries/001"] == "public, max-age=31536000, immutable"
    assert "immutable" not in cache["tile/0/002.p/88"] and "immutable" not in cache["tile/1/000.p/2"]
    # A tampered tile is caught by the client.
    real = _get(anonymous)

    def forged(path: str) -> tuple[int, dict[str, str], bytes]:
        status, headers, body = real(path)
        return (status, headers, b"\x00" * 32 + body[32:]) if path == "tile/0/001" else (status, headers, body)

    with pytest.raises(tlog_client.TlogError):
        tlog_client.verify_log(forged, vkey)


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("tile/0/000", 404),  # not 256 entries yet
        ("tile/0/000.p/9", 404),  # only 3
        ("tile/0/000.p/0", 404),
        ("tile/0/x000/001.p/1", 404),  # index 1: the log has no second tile
        ("tile/entries/000.p/3", 200),
        ("tile/0/00", 404),
        ("tile/64/000.p/1", 404),
    ],
)
def test_tile_paths_outside_the_log_or_the_spec_are_404(anonymous, path, status):
    for i in range(3):
        audit_append(kind=AuditKind.JOB_STATE, actor="test", subject=f"job:{i}")
    response = anonymous.get(PREFIX + path)
    assert response.status_code == status, (path, response.content[:200])
