"""The audit API as a third party uses it: plain HTTP responses, the public key, and protocol/ functions only."""

from __future__ import annotations

import base64

import pytest

from protocol.signed_note import open_note
from protocol.transparency import leaf_hash, verify_consistency, verify_inclusion
from registry.choices import CheckpointReason
from registry.services.audit import checkpoint_sign
from registry.services.submissions import submission_create, submission_withdraw
from registry.services.tokens import token_create
from tests.registry.services.test_submissions import document_variant

pytestmark = pytest.mark.django_db


def _events(user, document, count: int) -> None:
    for i in range(count):
        run, _ = submission_create(document=document_variant(document, i), submitted_by=user)
        if i % 3 == 2:
            submission_withdraw(submission=run, reason=f"reason {i}", actor=user)


def _open_checkpoint(anonymous) -> tuple:
    vkey = anonymous.get("/api/v1/audit/public-key").json()["verifier_key"]
    note = anonymous.get("/api/v1/audit/checkpoint?format=note")
    assert note["Content-Type"].startswith("text/plain")
    checkpoint, _ = open_note(note.content, [vkey])
    return checkpoint, vkey


def test_a_third_party_verifies_every_entry_with_only_the_public_key(api, anonymous, user, server_example):
    _events(user, server_example, 6)
    checkpoint, _ = _open_checkpoint(anonymous)
    assert checkpoint.size == 1 + 6 + 2  # the fixture's token, six runs, two withdrawals
    for seq in range(checkpoint.size):
        body = api.get(f"/api/v1/audit/inclusion?entry={seq}&size={checkpoint.size}").json()
        entry = body["entry"].encode()
        assert body["leaf_hash"] == leaf_hash(entry).hex()
        proof = [bytes.fromhex(h) for h in body["proof"]]
        assert verify_inclusion(leaf_hash(entry), seq, checkpoint.size, proof, checkpoint.root_hash)
        assert not verify_inclusion(leaf_hash(entry + b" "), seq, checkpoint.size, proof, checkpoint.root_hash)


def test_an_inclusion_proof_defaults_to_the_current_checkpoint_and_shows_public_entries_to_anyone(
    anonymous, user, server_example
):
    _events(user, server_example, 2)
    body = anonymous.get("/api/v1/audit/inclusion?entry=1")
    assert body.status_code == 200, body.content
    body = body.json()
    assert body["tree_size"] == 2 and leaf_hash(body["entry"].encode()).hex() == body["leaf_hash"]
    assert user.username not in body["entry"]
    checkpoint, _ = open_note(
        body["checkpoint"].encode(), [anonymous.get("/api/v1/audit/public-key").json()["verifier_key"]]
    )
    assert checkpoint.root_hash.hex() == body["root_hash"]


def test_a_third_party_checks_that_a_later_checkpoint_extends_an_earlier_one(anonymous, user, server_example):
    _events(user, server_example, 3)
    old, vkey = _open_checkpoint(anonymous)
    for i in range(10, 15):
        submission_create(document=document_variant(server_example, i), submitted_by=user)
    checkpoint_sign(reason=CheckpointReason.MANUAL)
    new, _ = _open_checkpoint(anonymous)
    assert new.size == old.size + 5
    body = anonymous.get(f"/api/v1/audit/consistency?from={old.size}&to={new.size}").json()
    proof = [bytes.fromhex(h) for h in body["proof"]]
    assert verify_consistency(old.size, new.size, old.root_hash, new.root_hash, proof)
    assert body["first_root"] == old.root_hash.hex() and open_note(body["second_checkpoint"].encode(), [vkey])
    assert not verify_consistency(old.size, new.size, new.root_hash, new.root_hash, proof)


def test_the_checkpoint_json_carries_the_root_in_hex_and_base64_and_the_key(anonymous, user):
    body = anonymous.get("/api/v1/audit/checkpoint").json()
    key = anonymous.get("/api/v1/audit/public-key").json()
    assert base64.b64decode(body["root_hash_base64"]).hex() == body["root_hash"]
    assert body["verifier_key"] == key["verifier_key"] and body["origin"] == key["origin"] == "benchreg.test/audit"
    assert base64.b64decode(key["public_key"]) == base64.b64decode(key["verifier_key"].split("+", 2)[2])[1:]
    checkpoint, _ = open_note(body["note"].encode(), [key["verifier_key"]])
    assert (checkpoint.size, checkpoint.root_hash.hex()) == (body["size"], body["root_hash"])


@pytest.mark.parametrize(
    ("query", "parameter", "status"),
    [
        ("inclusion?entry=7&size=2", "/entry", 422),  # well-formed, but not a position the log has
        ("inclusion?entry=0&size=99", "/size", 422),
        ("inclusion?entry=-1", "/entry", 400),  # malformed
        ("inclusion", "/entry", 400),
        ("consistency?from=2&to=1", "/from", 422),
        ("consistency?from=1&to=99", "/to", 422),
        ("consistency?from=x", "/from", 400),
    ],
)
def test_out_of_range_requests_get_problem_details_naming_the_parameter(anonymous, user, query, parameter, status):
    for name in ("first", "second"):
        token_create(user=user, name=name, scopes="read")
    response = anonymous.get(f"/api/v1/audit/{query}")
    assert response.status_code == status
    assert response["Content-Type"] == "application/problem+json"
    assert [e["pointer"] for e in response.json()["errors"]] == [parameter]


def test_the_entry_list_is_public_and_filters_by_kind_and_subject(api, anonymous, user, server_example):
    _events(user, server_example, 3)
    public = anonymous.get("/api/v1/audit/entries")
    assert public.status_code == 200 and all(e["entry"] and e["actor"] is None for e in public.json()["results"])
    assert api.get("/api/v1/audit/entries").json()["results"][0]["actor"] == user.username
    page = anonymous.get("/api/v1/audit/entries?kind=run.withdrawn").json()
    [withdrawn] = page["results"]
    assert withdrawn["kind"] == "run.withdrawn"
    assert leaf_hash(withdrawn["entry"].encode()).hex() == withdrawn["leaf_hash"]
    by_subject = api.get(f"/api/v1/audit/entries?subject={withdrawn['subject']}").json()["results"]
    assert [e["kind"] for e in by_subject] == ["run.submitted", "run.withdrawn"]
    all_entries = api.get("/api/v1/audit/entries?limit=2").json()
    assert [e["seq"] for e in all_entries["results"]] == [0, 1] and all_entries["next"]


def test_the_open_endpoints_ignore_a_bad_token(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token brt_not-a-token")
    for path in ("checkpoint", "public-key", "consistency?from=0"):
        assert client.get(f"/api/v1/audit/{path}").status_code == 200, path
