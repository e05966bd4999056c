"""The audit entry format (protocol.audit_entries): pure, public, and readable in every format a log holds."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from protocol.audit_entries import (
    FORMAT,
    FORMATS,
    RUN_SUBMITTED,
    RUN_WITHDRAWN,
    WHO_WIDEST,
    CommitmentKey,
    actor_commitment,
    commitment_checker,
    commits_actor,
    differing_fields,
    entry_head,
    entry_payload,
    entry_text,
    entry_time,
    field_value,
    is_submission_of,
    parse_entry,
    public_payload,
    run_submitted_entry,
    run_submitted_fields,
    who_key_id,
    withdrawal_entry,
    withdrawal_fields,
    withdrawal_reason_matches,
)


def test_entry_text_is_pure_and_publishes_no_names_tokens_or_reasons():
    when = datetime(2026, 11, 23, 6, 0, tzinfo=UTC)
    args = {
        "seq": 3,
        "time": when,
        "kind": "run.withdrawn",
        "subject": "sha256:" + "a" * 64,
        "payload": {"run": 4, "reason": "the lab's driver was wrong", "token": "brt_secret", "user": "alice"},
    }
    text = entry_text(**args)
    assert text == entry_text(**args)
    entry = json.loads(text)
    assert entry == {
        "v": 2,
        "seq": 3,
        "time": "2026-11-23T06:00:00.000000Z",
        "kind": "run.withdrawn",
        "subject": "sha256:" + "a" * 64,
        "payload": {
            "run": 4,
            "reason_sha256": "sha256:" + hashlib.sha256(b'"the lab\'s driver was wrong"').hexdigest(),
        },
    }
    # A kind nobody listed keeps numbers, booleans and digests only.
    assert public_payload("decision.made", {"n": 1, "ok": True, "who": "bob", "of": "sha256:" + "b" * 64}) == {
        "n": 1,
        "ok": True,
        "of": "sha256:" + "b" * 64,
    }


KEY = CommitmentKey(b"k" * 32)
WHEN = datetime(2026, 11, 23, 6, 0, 0, 500, tzinfo=UTC)
DIGEST = "sha256:" + "c" * 64


def test_a_commitment_names_its_key_and_is_bound_to_the_entry_and_the_actor():
    who = actor_commitment(seq=7, actor="alice", user=3, token=None, key=KEY)
    assert who.startswith(f"hmac-sha256:{KEY.key_id}:") and len(who) == len(WHO_WIDEST)
    assert who_key_id(who) == KEY.key_id and who_key_id(None) is None and who_key_id("sha256:x") is None
    assert who != actor_commitment(seq=8, actor="alice", user=3, key=KEY)
    assert who != actor_commitment(seq=7, actor="alice", user=None, token=3, key=KEY)
    assert who != actor_commitment(seq=7, actor="alice", user=3, key=CommitmentKey(b"o" * 32))


def test_the_checker_accepts_exactly_the_commitments_actor_commitment_makes_under_keys_of_every_length():
    # Keys shorter than, equal to and longer than SHA-256's 64-byte block (RFC 2104 hashes a longer one first).
    for secret in (b"", b"k" * 32, b"q" * 64, b"z" * 65, bytes(range(200))):
        key = CommitmentKey(secret)
        check = commitment_checker(key)
        for seq, actor, user, token in ((0, "alice", None, None), (7, "bob\nsmith", 3, 9), (2**40, "é", None, 4)):
            who = actor_commitment(seq=seq, actor=actor, user=user, token=token, key=key)
            assert check(who, seq, actor, user, token)
            assert not check(who, seq + 1, actor, user, token)
            assert not check(who, seq, actor + "x", user, token)
            assert not check(who, seq, actor, token, user) or user == token
            assert not check(who.upper(), seq, actor, user, token) and not check(None, seq, actor, user, token)
        assert not check(actor_commitment(seq=1, actor="a", key=CommitmentKey(secret + b"!")), 1, "a", None, None)


def test_format_three_carries_who_and_format_two_does_not():
    args = {"seq": 1, "time": WHEN, "kind": RUN_SUBMITTED, "subject": DIGEST, "payload": {"run": 4, "trust": "vouched"}}
    three = parse_entry(entry_text(**args, who=WHO_WIDEST))
    two = parse_entry(entry_text(**args))
    assert three["v"] == FORMAT == 3 and three["who"] == WHO_WIDEST
    assert two["v"] == 2 and "who" not in two
    assert three["time"] == "2026-11-23T06:00:00.000500Z" == entry_time(WHEN.replace(tzinfo=None))


def test_each_format_says_which_head_fields_it_holds():
    assert entry_head(1, seq=1, kind="k", subject="s", actor="alice") == {
        "seq": 1,
        "kind": "k",
        "subject": "s",
        "actor": "alice",
        "v": None,
    }
    for fmt in (2, 3):
        assert entry_head(fmt, seq=1, kind="k", subject="s", actor="alice") == {
            "seq": 1,
            "kind": "k",
            "subject": "s",
            "v": fmt,
        }
    assert [commits_actor(fmt) for fmt in FORMATS] == [False, False, True]


def test_a_run_entry_is_rebuilt_from_the_run_and_differences_are_named():
    rebuilt = run_submitted_entry(seq=5, digest=DIGEST, run=4, trust="declared", submitted_at=WHEN)
    logged = {**rebuilt, "payload": {"run": 9, "trust": "declared"}}
    assert differing_fields(logged, rebuilt, run_submitted_fields(3, logged)) == [("payload.run", 4, 9)]
    assert differing_fields(rebuilt, rebuilt, run_submitted_fields(2, rebuilt)) == []
    assert run_submitted_fields(1, {"payload": {"run": 9}}) == ()
    assert run_submitted_fields(1, {"payload": {"trust": "declared"}}) == ("payload.trust",)
    assert field_value({"payload": "not an object"}, "payload.run") is None


def test_a_submission_entry_is_recognised_by_kind_subject_and_number():
    entry = parse_entry(entry_text(seq=5, time=WHEN, kind=RUN_SUBMITTED, subject=DIGEST, payload={}))
    assert is_submission_of(entry, digest=DIGEST, seq=5)
    assert not is_submission_of(entry, digest=DIGEST, seq=6)
    assert not is_submission_of({**entry, "kind": RUN_WITHDRAWN}, digest=DIGEST, seq=5)
    assert parse_entry("[1]") == {} and parse_entry("not json") == {} and entry_payload({"payload": 3}) == {}


def test_a_withdrawal_reason_is_matched_in_clear_in_format_one_and_by_digest_after():
    rebuilt = withdrawal_entry(seq=2, digest=DIGEST, run=4, reason="wrong driver", withdrawn_at=WHEN)
    assert withdrawal_reason_matches(entry_payload(rebuilt), "wrong driver")
    assert not withdrawal_reason_matches(entry_payload(rebuilt), "another reason")
    assert withdrawal_reason_matches({"reason": "wrong driver"}, "wrong driver")
    assert withdrawal_fields(3) == ("time",) and withdrawal_fields(2) == ()
