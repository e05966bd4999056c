"""The host administrator's rewrite, against the real server: a superuser rewrites an entry together with its leaf
hash and deletes every stored checkpoint (and cosignature). Verification against the checkpoints a witness cosigned
(fetched over HTTP while the log grew) fails and names the first bad entry; the witness refuses the rewritten log."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from devtools.witnesses import witness
from protocol.cosignature import verify_cosignatures
from protocol.transparency import MerkleTree, leaf_hash
from registry.audit.keys import checkpoint_key, log_origin
from registry.choices import CheckpointReason
from registry.models import AuditEntry, Cosignature
from registry.selectors import audit as audit_selectors
from registry.services.audit import checkpoint_sign
from registry.services.submissions import submission_create
from registry.services.witnesses import WitnessRefused, cosignature_request, witnesses_configured
from tests.registry.services.test_submissions import document_variant

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _as_superuser(*statements: tuple[str, list]) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")  # the append-only triggers are off
        for sql, params in statements:
            cursor.execute(sql, params)
        cursor.execute("SET session_replication_role = DEFAULT")


def test_a_rewritten_entry_and_deleted_checkpoints_fail_against_the_witnessed_checkpoints(
    live_server, settings, user, server_example, tmp_path
):
    with witness(tmp_path / "w", "witness.test/governance", checkpoint_key().vkey) as w:
        settings.BENCHREG_WITNESSES = [w.setting]
        kept: list[Path] = []
        runs = []
        for i in range(4):  # after each run a checkpoint, cosigned; a reviewer keeps each published one
            runs.append(submission_create(document=document_variant(server_example, i), submitted_by=user)[0])
            checkpoint_sign(reason=CheckpointReason.MANUAL)
            note = httpx.get(f"{live_server.url}/api/v1/audit/log/checkpoint").content
            assert verify_cosignatures(note, [w.vkey]), note
            kept.append(tmp_path / f"cosigned-{i}.note")
            kept[-1].write_bytes(note)
        files = [arg for path in kept for arg in ("--checkpoint", str(path))]
        witnessed = ("--witness", w.vkey, "--require-witnesses", "1")
        call_command("audit", "verify", *files, *witnessed, stdout=io.StringIO())  # all well so far

        # The rewrite: the third run's trust, and its entry to match, with a matching leaf hash (verify compares
        # the two); then the evidence of the old heads goes: every stored checkpoint and cosignature.
        row = AuditEntry.objects.get(subject=runs[2].digest, kind="run.submitted")
        forged = json.dumps(
            {**json.loads(row.entry), "payload": {"run": runs[2].pk, "trust": "vouched"}},
            separators=(",", ":"),
            sort_keys=True,
        )
        _as_superuser(
            (
                "UPDATE registry_auditentry SET entry = %s, leaf_hash = %s WHERE seq = %s",
                [forged, leaf_hash(forged.encode()).hex(), row.seq],
            ),
            ("UPDATE registry_submission SET trust = 'vouched' WHERE id = %s", [runs[2].pk]),
            ("DELETE FROM registry_cosignature", []),
            ("DELETE FROM registry_checkpoint", []),
        )

        out = io.StringIO()
        call_command("audit", "verify", stdout=out)  # the database alone no longer shows anything
        assert "OK" in out.getvalue()

        out = io.StringIO()
        with pytest.raises(CommandError):
            call_command("audit", "verify", *files, *witnessed, stdout=out)
        assert f"first mismatching entry: #{row.seq}:" in out.getvalue(), out.getvalue()
        assert f"(entry #{row.seq} was changed)" in out.getvalue()

        # The registry, restarted after the rewrite (no tree cached from before it), signs the rewritten log anew;
        # the witness refuses it and says why.
        audit_selectors.shared_tree.tree = MerkleTree()
        settings.BENCHREG_WITNESSES = []
        rewritten = checkpoint_sign(reason=CheckpointReason.MANUAL)
        settings.BENCHREG_WITNESSES = [w.setting]
        with pytest.raises(WitnessRefused, match="another root"):
            cosignature_request(checkpoint=rewritten, witness=witnesses_configured()[0])
        assert not Cosignature.objects.filter(checkpoint=rewritten).exists()
        held = httpx.get(f"{w.url}/checkpoint", params={"origin": log_origin()}).content
        assert held.split(b"\n\n")[0] == kept[-1].read_bytes().split(b"\n\n")[0]  # it still holds the honest head
        assert rewritten.root_hash.encode() not in held
