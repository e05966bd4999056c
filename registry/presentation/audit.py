"""Words for the audit log's pages: kinds, who, short hashes, each check's verdict as a sentence, the proof file a
reader downloads, and the commands that check the same things offline."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from protocol.numbers import Style, number
from registry.audit.checks import CheckpointCheck, CosignatureCheck, InclusionCheck
from registry.choices import AuditKind
from registry.models import AuditEntry, Checkpoint

SHORT_HASH = 12  # hex digits shown; the full value is in the title and the copy button
KIND_WORDS = dict(AuditKind.choices)
PROOF_FORMAT = "benchreg-inclusion-proofs/1"


def count(value: int) -> str:
    return number(value, Style.SIGNIFICANT)


def short_hash(value: str) -> str:
    bare = value.removeprefix("sha256:")
    return bare if len(bare) <= SHORT_HASH else bare[:SHORT_HASH] + "…"


def kind_words(kind: str) -> str:
    return KIND_WORDS.get(kind, kind)


def who_words(entry: AuditEntry, *, may_read_actor: bool) -> str:
    """The actor for callers with the read scope; for everyone else what the public text holds about who."""
    if may_read_actor:
        return entry.actor
    if entry.format == 1:
        return "restricted (an entry written before migration 0011)"
    if entry.format == 2:
        return "not recorded in the public text"
    try:
        who = json.loads(entry.entry).get("who", "")
    except (ValueError, AttributeError):
        return "unreadable"
    key_id = who.split(":")[1] if who.count(":") == 2 else "?"
    return f"committed, not published (key {key_id})"


def entry_row(entry: AuditEntry, ids: Mapping[str, Mapping[str, Any]], *, may_read_actor: bool) -> dict[str, Any]:
    """One row of the entries table; `ids` maps a digest subject to the run or comparison it names."""
    target = ids.get(entry.subject, {})
    if "run" in target:
        link, audit_link, label = f"/runs/{target['run']}/", f"/audit/runs/{target['run']}/", f"run {target['run']}"
    elif "comparison" in target:
        link, audit_link, label = f"/comparisons/{target['comparison']}/", None, f"comparison {target['comparison']}"
    else:
        link, audit_link, label = None, None, None
    return {
        "seq": entry.seq,
        "seq_text": count(entry.seq),
        "time": entry.created_at,
        "kind": entry.kind,
        "kind_words": kind_words(entry.kind),
        "subject": entry.subject,
        "subject_short": short_hash(entry.subject) if entry.subject.startswith("sha256:") else entry.subject,
        "subject_label": label,
        "subject_link": link,
        "audit_link": audit_link,
        "who": who_words(entry, may_read_actor=may_read_actor),
        "hash": entry.leaf_hash,
        "hash_short": short_hash(entry.leaf_hash),
    }


def checkpoint_sentence(check: CheckpointCheck) -> str:
    size = count(check.checkpoint.size)
    if check.signed:
        return f"Signed by the log's key ({', '.join(check.signers)}) over {size} entries — signature verified."
    return f"Checkpoint of size {size}: signature NOT verified — {check.problem}."


def cosignature_sentence(check: CosignatureCheck) -> str:
    if not check.verified:
        return f"{check.witness}: cosignature NOT verified with the witness key stored beside it."
    trusted = "" if check.configured else " (this witness is no longer among the registry's configured witnesses)"
    return f"{check.witness} cosigned it — verified{trusted}."


def inclusion_sentence(check: InclusionCheck) -> str:
    entry, size = count(check.seq), count(check.size)
    if check.verified:
        return f"Entry {entry} is included in the checkpoint of size {size} — proof verified."
    return f"Entry {entry} is NOT verified against the checkpoint of size {size} — {check.problem}."


def not_covered_sentence(seq: int, checkpoint: Checkpoint, interval_s: int) -> str:
    return (
        f"Entry {count(seq)} is newer than the latest checkpoint (size {count(checkpoint.size)}); the next checkpoint, "
        f"signed within {count(interval_s)} s, will cover it."
    )


def proof_document(
    *, run_id: int, digest: str, checkpoint: Checkpoint, note: str, checks: Sequence[tuple[AuditEntry, InclusionCheck]],
    readable: Mapping[int, bool], not_covered: Sequence[int],
) -> dict[str, Any]:  # fmt: skip
    """The downloadable proof file: every number a reader needs, and the signed note whose key they pin."""
    return {
        "format": PROOF_FORMAT,
        "run": run_id,
        "digest": digest,
        "log_origin": checkpoint.origin,
        "verifier_key": checkpoint.vkey,
        "public_key_url": "/api/v1/audit/public-key",
        "checkpoint": note,
        "tree_size": checkpoint.size,
        "root_hash": checkpoint.root_hash,
        "entries": [
            {
                "seq": entry.seq,
                "kind": entry.kind,
                "entry": entry.entry if readable[entry.seq] else None,
                "leaf_hash": entry.leaf_hash,
                "proof": [h.hex() for h in check.proof],
            }
            for entry, check in checks
        ],
        "not_yet_covered": list(not_covered),
    }


# Checks a downloaded proof file with two modules of the plain-Python protocol package (their only dependency is
# `cryptography`): the note's signature by the pinned key, each entry's subject, and each inclusion proof.
VERIFY_SCRIPT = """\
import json, sys
from protocol.signed_note import open_note
from protocol.transparency import leaf_hash, verify_inclusion
proof = json.load(open(sys.argv[1]))
checkpoint, _ = open_note(proof["checkpoint"].encode(), [sys.argv[2]])  # raises unless the pinned key signed it
ok = True
for e in proof["entries"]:
    path = [bytes.fromhex(h) for h in e["proof"]]
    good = e["entry"] is not None and json.loads(e["entry"])["subject"] == proof["digest"] and verify_inclusion(
        leaf_hash(e["entry"].encode()), e["seq"], checkpoint.size, path, checkpoint.root_hash)
    ok = ok and good
    print(f"entry {e['seq']}: {'included' if good else 'NOT VERIFIED'} in the checkpoint of size {checkpoint.size}")
sys.exit(0 if ok else 1)
"""


def offline_commands(*, base: str, vkey: str, run_id: int | None = None) -> list[dict[str, str]]:
    """What a reviewer runs, in order, with nothing but HTTP, the published key and the protocol package."""
    api = base.rstrip("/") + "/api/v1/audit"
    steps = [
        {
            "what": "Fetch the log's public key once and pin it (compare it with the key the operator gave you).",
            "command": f"curl -s {api}/public-key",
        },
        {
            "what": "Keep the current signed checkpoint, with its witnesses' cosignatures.",
            "command": f"curl -s {api}/log/checkpoint > checkpoint-$(date +%F).note",
        },
    ]
    if run_id is not None:
        proof = f"audit-run-{run_id}-proofs.json"
        steps += [
            {
                "what": "Download this run's proofs.",
                "command": f"curl -s -o {proof} {base.rstrip('/')}/audit/runs/{run_id}/proofs.json",
            },
            {
                "what": "Check them against the pinned key, where benchreg's protocol package is importable "
                "(pip install the source): exit 0 when every entry is included.",
                "command": f"python3 - {proof} '{vkey}' <<'EOF'\n{VERIFY_SCRIPT}EOF",
            },
        ]
    steps += [
        {
            "what": "A signed decision report: its signature, evidence and every run's inclusion proof, offline.",
            "command": f"benchreg verify REPORT.pdf --cert benchreg-report-certificate.pem --log-key '{vkey}'",
        },
        {
            "what": "Operators, with the database: rebuild the whole log, check it against checkpoints kept outside.",
            "command": f"benchreg audit verify --key '{vkey}' --checkpoint checkpoint-2026-01-01.note",
        },
    ]
    return steps
