"""The text of an audit entry: one pure function, so every writer (the append under the head lock today, a batched
sequencer tomorrow) hashes exactly the same bytes for the same event.

Entry format 2 (every entry appended since migration 0011) is the RFC 8785 canonical JSON of

    {"kind": ..., "payload": {...}, "seq": N, "subject": ..., "time": "YYYY-MM-DDTHH:MM:SS.ffffffZ", "v": 2}

and holds only what may be public: the kind, the sequence number, the time, the subject's public id (a digest or
`agent:<id>`, `job:<id>`, ...) and a payload filtered by `public_payload` (ids, digests, counts; no user names,
token material, withdrawal reasons or free text). The time always has six fractional digits, so a run's
`run.submitted` entry can be rebuilt from the run's public record (`id`, `digest`, `trust`, `submitted_at`,
`audit_seq`).

Format 1 entries (before 0011) also held `actor` and unfiltered payloads (user names, token prefixes, reasons).
They cannot be rewritten (the log is append-only and their hashes are signed); they stay as they are, are still
verified, and their text is served only to callers with the read scope.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import protocol

FORMAT = 2

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
    "series.alert": {"series": "", "schedule": "", "run": "", "previous": "", "metric": "", "ratio": "", "ci_low": "",
                     "ci_high": "", "p_value": "", "direction": ""},
    "import.completed": {"source": "", "round": "", "stored": "", "known": "", "refused": "", "skipped": "",
                         "runs": _SHA},
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
    return (isinstance(value, bool | int) or value is None
            or (isinstance(value, str) and value.startswith("sha256:") and len(value) == 71))


def entry_time(time: datetime) -> str:
    """The entry's time: UTC, always six fractional digits (a naive datetime is taken as UTC)."""
    aware = time if time.tzinfo else time.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entry_text(*, seq: int, time: datetime, kind: str, subject: str, payload: dict[str, Any] | None) -> bytes:
    """The canonical bytes of entry `seq` (format 2): what is hashed into the log and served to anyone.

    Pure: the same arguments give the same bytes. `payload` is filtered by `public_payload` here, so a caller
    cannot publish more than the format allows.
    """
    text = protocol.canonicalize({"v": FORMAT, "seq": seq, "time": entry_time(time), "kind": kind,
                                  "subject": subject, "payload": public_payload(kind, payload)})
    if len(text) > MAX_ENTRY_BYTES:
        raise ValueError(f"audit entry {kind} of {len(text)} bytes: an entry is at most {MAX_ENTRY_BYTES} bytes")
    return text


def withdrawal_reason_digest(reason: str) -> str:
    """How a format-2 `run.withdrawn` entry records the reason (compare with `payload.reason_sha256`)."""
    return _sha256(reason)
