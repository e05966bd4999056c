"""The audit entry format (protocol.audit_entries): pure, public, and readable in every format a log holds."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from protocol.audit_entries import entry_text, public_payload


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
