"""The text of an audit entry: how every writer builds it and every reader (`audit verify`, the standalone report
verifier, anyone fetching the public log) rebuilds and reads it. Pure: the same arguments give the same bytes.
docs/protocol.md ("Audit entries") is the normative description.

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
(before 0011) have no `v`, hold `actor` and unfiltered payloads (user names, token prefixes, reasons). Neither can be
rewritten (the log is append-only and their hashes are signed); they stay as they are, are still verified
(`entry_head`, `run_submitted_fields`, `withdrawal_reason_matches` say what each format holds), and format-1 texts are
served only to callers with the read scope.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from protocol.canonical import canonicalize

FORMAT = 3  # what every writer writes
FORMATS = (1, 2, 3)  # what a reader meets in a log
RUN_SUBMITTED = "run.submitted"
RUN_WITHDRAWN = "run.withdrawn"
WHO_PREFIX = "hmac-sha256:"
WHO_WIDEST = WHO_PREFIX + "0" * 8 + ":" + "0" * 64  # every commitment has this length
MAX_ENTRY_BYTES = 0xFFFF  # a tlog-tiles entry bundle prefixes each entry with a uint16 length

# What each kind's payload may publish. A key mapped to _SHA publishes the SHA-256 of its value's canonical JSON.
_SHA = "sha256"


@dataclass(frozen=True)
class CommitmentKey:
    """The HMAC key of actor commitments, and its public id (so a commitment names the key it was made under)."""

    secret: bytes

    @functools.cached_property  # read once per entry by `audit verify`: computed once per key
    def key_id(self) -> str:
        """8 hex digits of SHA-256 of the key: names the key, reveals nothing usable about it."""
        return hashlib.sha256(b"benchreg audit commitment key\n" + self.secret).hexdigest()[:8]


def _sha256(value: Any) -> str:
    """`sha256:` and the hex SHA-256 of the value's canonical JSON (a string hashes with its quotes)."""
    return "sha256:" + hashlib.sha256(canonicalize(value)).hexdigest()


PUBLIC_KEYS: dict[str, dict[str, str]] = {
    RUN_SUBMITTED: {"run": "", "trust": ""},
    RUN_WITHDRAWN: {"run": "", "reason": _SHA},
    "comparison.created": {"comparison": "", "axis": "", "runs": ""},
    "report.issued": {"report": "", "comparison": "", "evidence": "", "checkpoint_size": ""},
    "agent.enrolled": {"embedded": ""},
    "agent.revoked": {},
    "enrolment.created": {"expires_at": ""},
    "token.created": {"scopes": ""},
    "token.revoked": {},
    "job.state": {"job": "", "status": "", "plan": "", "run": "", "digest": "", "attempt": ""},
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
    # An import lists up to thousands of run digests; each run has its own run.submitted entry anyway.
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


def public_payload(kind: str, payload: Mapping[str, Any] | None) -> dict[str, Any]:
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
    *, seq: int, actor: str, user: int | None = None, token: int | None = None, key: CommitmentKey
) -> str:
    """`hmac-sha256:<key id>:<hex>`: HMAC-SHA256 of who did entry `seq` (the actor's name, the user's and the API
    token's ids, each None when there is none), under the registry's commitment key.

    Bound to `seq`, so a commitment cannot be moved to another entry; keyed, so nobody without the key can check a
    guessed user name against the public entry (user names are few and guessable: a plain or salted hash would not
    hide them). The key id says which key it was made under.
    """
    # The message: the number, the user id and the token id (empty when none), one a line, then the name's UTF-8
    # bytes. Only the name can hold a newline and it comes last, so no two different actors give the same message.
    message = f"{seq}\n{'' if user is None else user}\n{'' if token is None else token}\n{actor}".encode()
    return f"{WHO_PREFIX}{key.key_id}:{hmac.digest(key.secret, message, 'sha256').hex()}"


def commitment_checker(key: CommitmentKey) -> Callable[[object, int, str, int | None, int | None], bool]:
    """`check(who, seq, actor, user, token)`: whether `who` is `actor_commitment(...)` of those under `key`.

    The same message and HMAC as actor_commitment, with the key's prefix and the HMAC's keyed inner and outer
    SHA-256 states (RFC 2104) made once: `audit verify` asks this of every format-3 entry and run, so it is the
    per-entry cost of committing who did it. `hmac.digest` sets the key up and looks the digest up in OpenSSL on
    every call, about twice the two hashes themselves."""
    prefix, (inner, outer) = f"{WHO_PREFIX}{key.key_id}:", _hmac_sha256_states(key.secret)

    def check(who: object, seq: int, actor: str, user: int | None, token: int | None) -> bool:
        if type(who) is not str:
            return False
        digest = inner.copy()
        digest.update(f"{seq}\n{'' if user is None else user}\n{'' if token is None else token}\n{actor}".encode())
        mac = outer.copy()
        mac.update(digest.digest())
        expected: str = prefix + mac.hexdigest()
        return who == expected

    return check


_HMAC_BLOCK = 64  # SHA-256's block size in bytes


def _hmac_sha256_states(secret: bytes) -> tuple[Any, Any]:
    """SHA-256 states that have absorbed the key XOR ipad and XOR opad (RFC 2104, section 2): HMAC(key, m) is
    outer.update(inner.update(m).digest()), each state copied per message."""
    block = hashlib.sha256(secret).digest() if len(secret) > _HMAC_BLOCK else secret
    block = block.ljust(_HMAC_BLOCK, b"\0")
    return (
        hashlib.sha256(bytes(b ^ 0x36 for b in block)),
        hashlib.sha256(bytes(b ^ 0x5C for b in block)),
    )


def who_key_id(who: object) -> str | None:
    """The key id an entry's `who` names, or None when `who` is not a commitment at all."""
    if not isinstance(who, str) or not who.startswith(WHO_PREFIX):
        return None
    return who[len(WHO_PREFIX) :].partition(":")[0]


def entry_object(
    *, seq: int, time: datetime, kind: str, subject: str, payload: Mapping[str, Any] | None, who: str | None = None
) -> dict[str, Any]:
    """Entry `seq` as a JSON object, before canonicalization: format 3 with `who`, format 2 without.

    `payload` is filtered by `public_payload` here, so a caller cannot publish more than the format allows.
    """
    entry: dict[str, Any] = {
        "v": 2,
        "seq": seq,
        "time": entry_time(time),
        "kind": kind,
        "subject": subject,
        "payload": public_payload(kind, payload),
    }
    if who is not None:
        entry.update(v=FORMAT, who=who)
    return entry


def entry_text(
    *, seq: int, time: datetime, kind: str, subject: str, payload: Mapping[str, Any] | None, who: str | None = None
) -> bytes:
    """The canonical bytes of entry `seq`: what is hashed into the log and served to anyone.

    With `who` (an `actor_commitment`) the entry has format 3, as every writer gives it; without, it is the format-2
    text of an entry written before migration 0019 (for rebuilding and checking those). Raises ValueError for an
    entry over MAX_ENTRY_BYTES.
    """
    text = canonicalize(entry_object(seq=seq, time=time, kind=kind, subject=subject, payload=payload, who=who))
    if len(text) > MAX_ENTRY_BYTES:
        raise ValueError(f"audit entry {kind} of {len(text)} bytes: an entry is at most {MAX_ENTRY_BYTES} bytes")
    return text


def withdrawal_reason_digest(reason: str) -> str:
    """How a format-2 or -3 `run.withdrawn` entry records the reason (compare with `payload.reason_sha256`)."""
    return _sha256(reason)


# -- reading entries of every format ---------------------------------------------------------------------------------


def parse_entry(text: str | bytes | None) -> dict[str, Any]:
    """An entry text as a JSON object; {} when it is not JSON or not an object (a rewritten text)."""
    try:
        parsed = json.loads(text or "")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def entry_payload(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's payload object ({} when it has none)."""
    payload = entry.get("payload")
    return payload if isinstance(payload, dict) else {}


def entry_head(fmt: int, *, seq: int, kind: str, subject: str, actor: str) -> dict[str, object]:
    """The fields besides `time`, `payload` and `who` that an entry of format `fmt` holds for these columns.

    Format 1 names its actor and has no `v`; formats 2 and 3 say their version and leave the actor's name out.
    """
    if fmt == 1:
        return {"seq": seq, "kind": kind, "subject": subject, "actor": actor, "v": None}
    return {"seq": seq, "kind": kind, "subject": subject, "v": fmt}


def commits_actor(fmt: int) -> bool:
    """Whether entries of format `fmt` carry `who`, a commitment to who did it."""
    return fmt >= 3


def is_submission_of(entry: Mapping[str, Any], *, digest: object, seq: object) -> bool:
    """Whether `entry` is entry number `seq`, recording the submission of the run whose digest is `digest`."""
    return entry.get("kind") == RUN_SUBMITTED and entry.get("subject") == digest and entry.get("seq") == seq


def run_submitted_fields(fmt: int, logged: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields of a logged `run.submitted` entry of format `fmt` that the run's public record rebuilds (dotted
    paths into the entry, for `differing_fields`); `who` is rebuilt apart, with the commitment key.

    Formats 2 and 3 hold the run's id, its trust and its submission time. Format 1 payloads were unfiltered and only
    some recorded the trust; their time was spelled otherwise, so only a recorded trust is compared.
    """
    if fmt == 1:
        return ("payload.trust",) if "trust" in entry_payload(logged) else ()
    return ("payload.run", "payload.trust", "time")


def run_submitted_entry(*, seq: int, digest: str, run: int, trust: str, submitted_at: datetime) -> dict[str, Any]:
    """The `run.submitted` entry a run's public record rebuilds (format 2 shape; add `who` to compare format 3)."""
    return entry_object(
        seq=seq, time=submitted_at, kind=RUN_SUBMITTED, subject=digest, payload={"run": run, "trust": trust}
    )


def withdrawal_fields(fmt: int) -> tuple[str, ...]:
    """The fields of a logged `run.withdrawn` entry, besides the reason (`withdrawal_reason_matches`) and `who`,
    that the withdrawal's record rebuilds: format 3 entries are written at the withdrawal's own time."""
    return ("time",) if commits_actor(fmt) else ()


def withdrawal_entry(*, seq: int, digest: str, run: int, reason: str, withdrawn_at: datetime) -> dict[str, Any]:
    """The `run.withdrawn` entry a withdrawal's record rebuilds (format 2 shape)."""
    return entry_object(
        seq=seq, time=withdrawn_at, kind=RUN_WITHDRAWN, subject=digest, payload={"run": run, "reason": reason}
    )


def withdrawal_reason_matches(payload: Mapping[str, Any], reason: str) -> bool:
    """Format 1 entries hold the reason, later formats its SHA-256 (reasons are not public)."""
    if "reason_sha256" in payload:
        return bool(payload["reason_sha256"] == withdrawal_reason_digest(reason))
    return bool(payload.get("reason") == reason)


def field_value(entry: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path (`payload.run`) of an entry; None where any step is missing or not an object."""
    value: Any = entry
    for step in path.split("."):
        value = value.get(step) if isinstance(value, Mapping) else None
    return value


def differing_fields(
    logged: Mapping[str, Any], rebuilt: Mapping[str, Any], fields: Sequence[str]
) -> list[tuple[str, Any, Any]]:
    """(field, rebuilt value, logged value) for each of `fields` where the logged entry differs from the rebuilt."""
    return [
        (path, field_value(rebuilt, path), field_value(logged, path))
        for path in fields
        if field_value(rebuilt, path) != field_value(logged, path)
    ]
