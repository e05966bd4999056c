"""The text of an audit entry: one pure function, so every writer (the append under the head lock today, a batched
sequencer tomorrow) hashes exactly the same bytes for the same event.

Entry format 3 (every entry appended since migration 0019) is the RFC 8785 canonical JSON of

    {"kind": ..., "payload": {...}, "seq": N, "subject": ..., "time": "YYYY-MM-DDTHH:MM:SS.ffffffZ", "v": 3,
     "who": "hmac-sha256:<key id>:<hex>"}

and holds only what may be public: the kind, the sequence number, the time, the subject's public id (a digest or
`agent:<id>`, `job:<id>`, ...), a payload filtered by `public_payload` (ids, digests, counts; no user names,
token material, withdrawal reasons or free text), and `who`: a keyed commitment to who did it (`actor_commitment`:
HMAC-SHA256, under a key only the registry holds, of the actor's name, user id and token id and the entry's number).
The commitment is in the hashed text, so rewriting the actor columns afterwards no longer matches it; without the key
nobody can test a guessed name against it. The time always has six fractional digits, so a run's `run.submitted`
entry can be checked against the run's public record (`id`, `digest`, `trust`, `submitted_at`, `audit_seq`).

Format 2 entries (migrations 0011 to 0019) are the same without `who`: their actor is not committed. Format 1 entries
(before 0011) also held `actor` and unfiltered payloads (user names, token prefixes, reasons). Neither can be
rewritten (the log is append-only and their hashes are signed); they stay as they are, are still verified, and
format-1 texts are served only to callers with the read scope.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime
from typing import Any

import protocol
from registry.audit.keys import CommitmentKey, commitment_key

FORMAT = 3
WHO_PREFIX = "hmac-sha256:"
WHO_WIDEST = WHO_PREFIX + "0" * 8 + ":" + "0" * 64  # every commitment has this length

# What each kind's payload may publish. A key mapped to a function publishes the function of the value.
_SHA = "sha256"


MAX_ENTRY_BYTES = 0xFFFF  # a tlog-tiles entry bundle prefixes each entry with a uint16 length


def _sha256(value: Any) -> str:
    """`sha256:` and the hex SHA-256 of the value's canonical JSON (a string hashes with its quotes)."""
    return "sha256:" + hashlib.sha256(protocol.canonicalize(value)).hexdigest()


PUBLIC_KEYS: dict[str, dict[str, str]] = {
    "run.submitted": {"run": "", "trust": ""},
    "run.withdrawn": {"run": "", "reason": _SHA},
    "comparison.created": {"comparison": "", "axis": "", "runs": ""},
    "report.issued": {"report": "", "comparison": "", "evidence": "", "checkpoint_size": ""},
    "agent.enrolled": {"embedded": ""},
    "agent.revoked": {},
    "enrolment.created": {"expires_at": ""},
    "token.created": {"scopes": ""},
    "token.revoked": {},
    "job.state": {"job": "", "status": "", "plan": "", "run": "", "digest": "", "attempt": ""},
    # An import lists up to thousands of run digests; each run has its own run.submitted entry anyway.
    "schedule.changed": {"action": "", "plan": "", "cron": "", "paused": ""},
    "schedule.fired": {"due_at": "", "variant": "", "status": "", "plan": ""},
    "series.alert": {
        "series": "",
        "schedule": "",
        "run": "",
        "previous": "",
        "metric": "",
        "ratio": "",
        "ci_low": "",
        "ci_high": "",
        "p_value": "",
        "direction": "",
    },
    "import.completed": {
        "source": "",
        "round": "",
        "stored": "",
        "known": "",
        "refused": "",
        "skipped": "",
        "runs": _SHA,
    },
}


def public_payload(kind: str, payload: dict[str, Any] | None) -> dict[str, Any]:
    """The part of an event's payload that may be public.

    Known kinds keep the keys listed in PUBLIC_KEYS (a hashed key `k` becomes `k_sha256`: a reader holding the
    value can check it, nobody else learns it). A kind not listed keeps only numbers, booleans and `sha256:`
    digests, so a new kind never publishes a name or a secret by accident.
    """
    payload = payload or {}
    allowed = PUBLIC_KEYS.get(kind)
    if allowed is None:
        return {k: v for k, v in payload.items() if _is_plainly_public(v)}
    public: dict[str, Any] = {}
    for key, value in payload.items():
        if key not in allowed:
            continue
        if allowed[key] == _SHA:
            public[f"{key}_sha256"] = _sha256(value)
        else:
            public[key] = value
    return public


def _is_plainly_public(value: Any) -> bool:
    return (
        isinstance(value, bool | int)
        or value is None
        or (isinstance(value, str) and value.startswith("sha256:") and len(value) == 71)
    )


def entry_time(time: datetime) -> str:
    """The entry's time: UTC, always six fractional digits (a naive datetime is taken as UTC)."""
    aware = time if time.tzinfo else time.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def actor_commitment(
    *, seq: int, actor: str, user: int | None = None, token: int | None = None, key: CommitmentKey | None = None
) -> str:
    """`hmac-sha256:<key id>:<hex>`: HMAC-SHA256 of who did entry `seq` (the actor's name, the user's and the API
    token's ids, each None when there is none), under the registry's commitment key.

    Bound to `seq`, so a commitment cannot be moved to another entry; keyed, so nobody without the key can check a
    guessed user name against the public entry (user names are few and guessable: a plain or salted hash would not
    hide them). The key id says which key it was made under.
    """
    key = key or commitment_key()
    # The message: the number, the user id and the token id (empty when none), one a line, then the name's UTF-8
    # bytes. Only the name can hold a newline and it comes last, so no two different actors give the same message.
    message = f"{seq}\n{'' if user is None else user}\n{'' if token is None else token}\n{actor}".encode()
    return f"{WHO_PREFIX}{key.key_id}:{hmac.digest(key.secret, message, 'sha256').hex()}"


def entry_text(
    *, seq: int, time: datetime, kind: str, subject: str, payload: dict[str, Any] | None, who: str | None = None
) -> bytes:
    """The canonical bytes of entry `seq`: what is hashed into the log and served to anyone.

    With `who` (an `actor_commitment`) the entry has format 3, as every writer gives it; without, it is the format-2
    text of an entry written before migration 0019 (for rebuilding and checking those). Pure: the same arguments give
    the same bytes. `payload` is filtered by `public_payload` here, so a caller cannot publish more than the format
    allows.
    """
    entry = {
        "v": 2,
        "seq": seq,
        "time": entry_time(time),
        "kind": kind,
        "subject": subject,
        "payload": public_payload(kind, payload),
    }
    if who is not None:
        entry.update(v=FORMAT, who=who)
    text = protocol.canonicalize(entry)
    if len(text) > MAX_ENTRY_BYTES:
        raise ValueError(f"audit entry {kind} of {len(text)} bytes: an entry is at most {MAX_ENTRY_BYTES} bytes")
    return text


def withdrawal_reason_digest(reason: str) -> str:
    """How a format-2 `run.withdrawn` entry records the reason (compare with `payload.reason_sha256`)."""
    return _sha256(reason)
