"""Witnesses: `benchreg witness` runs as its own process with its own key and state; the registry asks it to
cosign each checkpoint with a consistency proof; it refuses a checkpoint that forks what it saw, and says so."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from devtools.witnesses import ROOT, new_key, witness
from protocol.cosignature import verify_cosignatures
from protocol.signed_note import Checkpoint as NoteCheckpoint
from protocol.signed_note import sign_note
from registry.audit.keys import checkpoint_key, log_origin
from registry.choices import AuditKind, CheckpointReason
from registry.models import Cosignature
from registry.services.audit import audit_append, checkpoint_sign
from registry.services.witnesses import WitnessRefused, cosignature_request, witnesses_configured

pytestmark = pytest.mark.django_db


def _grow(n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        audit_append(kind=AuditKind.JOB_STATE, actor="test", subject=f"job:{i}", payload={"job": i})


def _sign(capture) -> object:
    with capture(execute=True):
        return checkpoint_sign(reason=CheckpointReason.MANUAL)


def _verify(*args: str) -> tuple[bool, str]:
    out = io.StringIO()
    try:
        call_command("audit", "verify", *args, stdout=out)
    except CommandError as exc:
        return False, f"{out.getvalue()}\n{exc}"
    return True, out.getvalue()


def test_the_registry_gets_cosignatures_and_publishes_them(
    tmp_path, settings, anonymous, django_capture_on_commit_callbacks
):
    with (
        witness(tmp_path / "w1", "witness.test/w1", checkpoint_key().vkey) as w1,
        witness(tmp_path / "w2", "witness.test/w2", checkpoint_key().vkey) as w2,
    ):
        settings.BENCHREG_WITNESSES = [w1.setting, w2.setting]
        settings.BENCHREG_WITNESS_QUORUM = 2
        _grow(3)
        first = _sign(django_capture_on_commit_callbacks)
        _grow(2, 3)
        second = _sign(django_capture_on_commit_callbacks)  # sent with a consistency proof from size 3
        assert Cosignature.objects.filter(checkpoint=first).count() == 2
        assert Cosignature.objects.filter(checkpoint=second).count() == 2
        note = anonymous.get("/api/v1/audit/log/checkpoint").content
        assert note.startswith(f"{log_origin()}\n5\n".encode())
        assert set(verify_cosignatures(note, [w1.vkey, w2.vkey])) == {w1.vkey, w2.vkey}
        held = httpx.get(f"{w1.url}/checkpoint", params={"origin": log_origin()}).content
        assert held.startswith(f"{log_origin()}\n5\n".encode()) and verify_cosignatures(held, [w1.vkey])

        ok, out = _verify("--witness", w1.vkey, "--witness", w2.vkey, "--require-witnesses", "2")
        assert ok and "cosigned by 2 of the given witnesses" in out, out
        _, stranger = new_key(tmp_path, "witness.test/stranger")
        ok, out = _verify("--witness", w1.vkey, "--witness", stranger, "--require-witnesses", "2")
        assert not ok and "cosigned by 1 of the 2 given witnesses, 2 required" in out, out


def _post(url: str, old: int, proof: list[bytes], note: bytes) -> httpx.Response:
    lines = [f"old {old}", *(base64.b64encode(p).decode() for p in proof)]
    return httpx.post(f"{url}/add-checkpoint", content=("\n".join(lines) + "\n\n").encode() + note)


def _forged(size: int, root: bytes) -> bytes:
    key = checkpoint_key()
    return sign_note(NoteCheckpoint(log_origin(), size, root).body(), key.name, key.signer.private_key)


def test_a_witness_refuses_a_forked_checkpoint_and_says_so(tmp_path, settings, django_capture_on_commit_callbacks):
    with witness(tmp_path / "w1", "witness.test/w1", checkpoint_key().vkey) as w1:
        settings.BENCHREG_WITNESSES = [w1.setting]
        _grow(4)
        good = _sign(django_capture_on_commit_callbacks)
        assert Cosignature.objects.filter(checkpoint=good).exists()

        # Same size, another root: a split view. 409 with the size the witness holds.
        same = _post(w1.url, 4, [], _forged(4, b"\x11" * 32))
        assert (same.status_code, same.headers["content-type"], same.text) == (409, "text/x.tlog.size", "4\n")
        # A larger tree that does not extend what the witness cosigned: 422, with the reason.
        fork = _post(w1.url, 4, [b"\x22" * 32, b"\x33" * 32], _forged(6, b"\x44" * 32))
        assert fork.status_code == 422 and "not consistent with the checkpoint 4 this witness cosigned" in fork.text
        # What the witness holds did not move.
        held = httpx.get(f"{w1.url}/checkpoint", params={"origin": log_origin()}).content
        assert held.startswith(f"{log_origin()}\n4\n".encode())

        # The registry's own client says so too: a checkpoint of a rewritten log is refused.
        settings.BENCHREG_LOG_ORIGIN = log_origin()
        other = _forged(4, b"\x55" * 32)
        from registry.models import Checkpoint

        forked = Checkpoint.objects.create(
            size=4,
            root_hash="55" * 32,
            origin=log_origin(),
            note=other.decode(),
            vkey=checkpoint_key().vkey,
            reason="manual",
            created_at=good.created_at,
        )
        with pytest.raises(WitnessRefused, match="it holds another root at size 4"):
            cosignature_request(checkpoint=forked, witness=witnesses_configured()[0])


def test_a_witness_refuses_unknown_logs_bad_signatures_and_malformed_requests(tmp_path):
    with witness(tmp_path / "w1", "witness.test/w1", checkpoint_key().vkey) as w1:
        unknown = httpx.post(
            f"{w1.url}/add-checkpoint",
            content=b"old 0\n\nother.log\n1\n"
            + base64.b64encode(b"\x00" * 32)
            + b"\n\n\xe2\x80\x94 other.log AAAAAAAA\n",
        )
        assert unknown.status_code == 404 and "unknown log" in unknown.text
        note = _forged(1, b"\x01" * 32)
        bad = note.replace(b"\n1\n", b"\n2\n", 1)  # the signature no longer covers the body
        assert _post(w1.url, 0, [], bad).status_code == 403
        assert httpx.post(f"{w1.url}/add-checkpoint", content=b"new 0\n\n" + note).status_code == 400
        assert _post(w1.url, 0, [b"\x00" * 32], note).status_code == 422  # a proof from 0 must be empty
        assert _post(w1.url, 0, [], note).status_code == 200


def test_a_witness_key_readable_by_others_is_refused(tmp_path):
    key, _ = new_key(tmp_path, "witness.test/loose")
    key.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "registry.cli",
            "witness",
            "serve",
            "--key",
            str(key),
            "--log-key",
            checkpoint_key().vkey,
            "--state",
            str(tmp_path / "s.json"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "readable or writable by group or others" in done.stderr
    assert not Path(tmp_path / "s.json").exists()
