"""The audit log's pages, public like its API (policy.AUDIT_PUBLIC): the entries newest first with the latest
checkpoints and their witnesses' cosignatures, and a run's entries with their inclusion proofs checked here and
downloadable for checking offline. Every check is made with the protocol code a reviewer runs themselves."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET

from registry import policy
from registry.audit.checks import CheckpointCheck, InclusionCheck, checkpoint_check, cosignature_checks, inclusion_check
from registry.audit.keys import log_origin, trusted_verifier_keys
from registry.choices import AuditKind
from registry.models import AuditEntry, Checkpoint
from registry.presentation import audit as words
from registry.selectors.audit import audit_pending_count, audit_size, cosigned_note, shared_tree_at
from registry.selectors.audit_page import (
    audit_entries_of,
    audit_entry_page,
    checkpoints_recent,
    run_digest,
    subject_ids,
)
from registry.services.audit import checkpoint_current
from registry.services.witnesses import witnesses_configured

PAGE_SIZE = 50  # entries a page
CHECKPOINTS_SHOWN = 3
RUN_ENTRIES = 20  # a run has one or two entries (submitted, withdrawn); the bound is for the page, not the run
PARAMETERS = ("kind", "run", "before", "after")
MAX_POSITION = 2**63 - 1  # a log position is a bigint


def _position(name: str, raw: str, problems: list[str]) -> int | None:
    # "²".isdigit() is True, and int() refuses strings of more than 4,300 digits: ASCII digits, length first.
    if not (raw.isascii() and raw.isdigit()) or len(raw.lstrip("0")) > 19 or int(raw) > MAX_POSITION:
        problems.append(f"{name}: a whole number from 0 to {MAX_POSITION} is required (got {raw[:40]!r})")
        return None
    return int(raw)


def _filters(query: QueryDict) -> tuple[dict[str, Any], list[str]]:
    """The page's parameters, each checked; (values, what is wrong with them in words)."""
    problems = [f"{name[:40]!r}: not a parameter of this page" for name in query if name not in PARAMETERS]
    raw = {name: query.get(name, "").strip() for name in PARAMETERS}
    kind = raw["kind"] or None
    if kind is not None and kind not in AuditKind.values:
        problems.append(f"kind: {kind[:40]!r} is not a kind of entry (one of {', '.join(AuditKind.values)})")
    values = {name: _position(name, raw[name], problems) if raw[name] else None for name in ("run", "before", "after")}
    if values["before"] is not None and values["after"] is not None:
        problems.append("before, after: give one of them, not both")
    return {"kind": kind, **values}, problems


@require_GET
def audit_page(request: HttpRequest) -> HttpResponse:
    """/audit/?kind=&run=&before=|after=: a page of entries newest first, and the latest checkpoints."""
    principal = policy.for_request(request)
    policy.require(principal, policy.AUDIT_PUBLIC)
    filters, problems = _filters(request.GET)
    subject = None
    if not problems and filters["run"] is not None:
        subject = run_digest(run_id=filters["run"])
        if subject is None:
            return _not_found(request, f"There is no run {filters['run']} in the registry, so no entries about it.")
    context: dict[str, Any] = {
        "filters": filters,
        "problems": problems,
        "kinds": AuditKind.choices,
        "page_size": PAGE_SIZE,
    }
    if not problems:
        context.update(_entries(principal, filters, subject))
        context.update(_checkpoints(request))
    return render(request, "registry/audit.html", context, status=400 if problems else 200)


def _entries(principal: Any, filters: dict[str, Any], subject: str | None) -> dict[str, Any]:
    page = audit_entry_page(
        size=PAGE_SIZE, kind=filters["kind"], subject=subject, before=filters["before"], after=filters["after"]
    )
    ids = subject_ids(e.subject for e in page.entries)
    may_read = policy.can(principal, policy.AUDIT_READ)
    rows = [words.entry_row(e, ids, may_read_actor=may_read) for e in page.entries]
    keep = {k: filters[k] for k in ("kind", "run") if filters[k] is not None}
    return {
        "entries": rows,
        "shown_range": f"Entries #{rows[0]['seq_text']} to #{rows[-1]['seq_text']}" if rows else "",
        "log_size": words.count(audit_size()),
        "pending": audit_pending_count(kind=filters["kind"], subject=subject),
        "newer": _link(keep, after=rows[0]["seq"]) if rows and page.newer else None,
        "older": _link(keep, before=rows[-1]["seq"]) if rows and page.older else None,
        "newest": _link(keep) if page.newer else None,
        "filtered": bool(keep),
    }


def _link(keep: dict[str, Any], **position: int) -> str:
    query = QueryDict(mutable=True)
    query.update({k: str(v) for k, v in {**keep, **position}.items()})
    return f"/audit/?{query.urlencode()}" if query else "/audit/"


def _checkpoints(request: HttpRequest) -> dict[str, Any]:
    current = checkpoint_current()  # like the API: signs one when the log outgrew the latest (at most per interval)
    trusted, origin = trusted_verifier_keys(), log_origin()
    configured = {w.vkey for w in witnesses_configured()}
    shown = []
    for checkpoint in checkpoints_recent(count=CHECKPOINTS_SHOWN):
        check = checkpoint_check(checkpoint, trusted, origin)
        cosignatures = cosignature_checks(checkpoint, list(checkpoint.cosignatures.all()), configured)
        shown.append(
            {
                "checkpoint": checkpoint,
                "size": words.count(checkpoint.size),
                "check": check,
                "sentence": words.checkpoint_sentence(check),
                "cosignatures": [{"check": c, "sentence": words.cosignature_sentence(c)} for c in cosignatures],
            }
        )
    return {
        "checkpoints": shown,
        "witnesses_configured": len(configured),
        "verifier_key": current.vkey,
        "commands": words.offline_commands(base=request.build_absolute_uri("/"), vkey=current.vkey),
    }


def _not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "registry/error.html", {"status": 404, "message": message}, status=404)


# --- one run ------------------------------------------------------------------------------------------------


def _run_proofs(principal: Any, run_id: int, digest: str) -> dict[str, Any]:
    """The run's entries, each checked against the latest checkpoint (or said to be newer than it)."""
    checkpoint = checkpoint_current()
    signed = checkpoint_check(checkpoint, trusted_verifier_keys(), log_origin())
    entries = audit_entries_of(subject=digest, limit=RUN_ENTRIES)
    may_read = policy.can(principal, policy.AUDIT_READ)
    readable = {e.seq: e.format != 1 or may_read for e in entries}
    covered = [e for e in entries if e.seq < checkpoint.size]
    proofs: list[tuple[AuditEntry, InclusionCheck]] = []
    if covered:
        with shared_tree_at(checkpoint.size, "size") as tree:
            paths = [tree.inclusion_proof(e.seq, checkpoint.size) for e in covered]
        proofs = [
            (e, inclusion_check(e, signed, p, readable=readable[e.seq])) for e, p in zip(covered, paths, strict=True)
        ]
    return {
        "checkpoint": checkpoint,
        "signed": signed,
        "entries": entries,
        "proofs": proofs,
        "readable": readable,
        "not_covered": [e.seq for e in entries if e.seq >= checkpoint.size],
        "pending": audit_pending_count(subject=digest),
        "may_read": may_read,
    }


@require_GET
def audit_run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    """/audit/runs/<id>/: the run's entries, each with its inclusion proof verified here, in words."""
    principal = policy.for_request(request)
    policy.require(principal, policy.AUDIT_PUBLIC)
    digest = run_digest(run_id=run_id)
    if digest is None:
        return _not_found(request, f"There is no run {run_id} in the registry, so no audit entries about it.")
    found = _run_proofs(principal, run_id, digest)
    checkpoint: Checkpoint = found["checkpoint"]
    signed: CheckpointCheck = found["signed"]
    ids = {digest: {"run": run_id}}
    rows = []
    for entry, check in found["proofs"]:
        row = words.entry_row(entry, ids, may_read_actor=found["may_read"])
        rows.append({**row, "verified": check.verified, "sentence": words.inclusion_sentence(check),
                     "proof": [h.hex() for h in check.proof]})  # fmt: skip
    interval = settings.BENCHREG_CHECKPOINT_INTERVAL_S
    waiting = [words.not_covered_sentence(seq, checkpoint, interval) for seq in found["not_covered"]]
    context = {
        "run_id": run_id,
        "digest": digest,
        "checkpoint": checkpoint,
        "checkpoint_size": words.count(checkpoint.size),
        "signed": signed,
        "signed_sentence": words.checkpoint_sentence(signed),
        "rows": rows,
        "waiting": waiting,
        "pending": found["pending"],
        "verifier_key": checkpoint.vkey,
        "commands": words.offline_commands(base=request.build_absolute_uri("/"), vkey=checkpoint.vkey, run_id=run_id),
    }
    return render(request, "registry/audit_run.html", context)


@require_GET
def audit_run_proofs(request: HttpRequest, run_id: int) -> HttpResponse:
    """/audit/runs/<id>/proofs.json: the same proofs as a file, with the signed note they lead to."""
    principal = policy.for_request(request)
    policy.require(principal, policy.AUDIT_PUBLIC)
    digest = run_digest(run_id=run_id)
    if digest is None:
        return _not_found(request, f"There is no run {run_id} in the registry, so no audit entries about it.")
    found = _run_proofs(principal, run_id, digest)
    document = words.proof_document(
        run_id=run_id,
        digest=digest,
        checkpoint=found["checkpoint"],
        note=cosigned_note(found["checkpoint"]),
        checks=found["proofs"],
        readable=found["readable"],
        not_covered=found["not_covered"],
    )
    response = HttpResponse(json.dumps(document, indent=2) + "\n", content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="audit-run-{run_id}-proofs.json"'
    return response
