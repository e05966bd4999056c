"""The run store: every run, whatever brought it (a token holder, a batch, an importer, an agent's job), is written
here and only here, with its audit entry and what follows a stored run, in the caller's transaction.

Callers check documents first (registry.services.submissions.submission_check) and decide what is new; an agent's
run for its job is stored by registry.services.jobs.job_submission_create under the job's lock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

import protocol
from protocol.comparability import comparability_keys
from registry.choices import AuditKind
from registry.models import ApiToken, Submission
from registry.models.copy import create_many
from registry.models.fields import finite_json
from registry.services.audit import audit_append_many
from registry.services.reactions import runs_stored


def run_store(*, checked: protocol.Checked, submitted_by: User, token: ApiToken | None, trust: str) -> Submission:
    """Store one checked document in the caller's transaction (it must be in one). No savepoint of its own: a
    caller that survives a lost race on the digest holds its own (submissions._create_checked), and one savepoint
    pair less is two round trips less per submission (issue 42)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("run_store must be called inside a transaction")
    (run,) = runs_store(checked=[checked], submitted_by=submitted_by, token=token, trust=trust)
    return run


def runs_store(
    *, checked: list[protocol.Checked], submitted_by: User, token: ApiToken | None, trust: str
) -> list[Submission]:
    """Store checked documents in the caller's transaction: the runs (one COPY or INSERT: models/copy.py), their
    audit entries (one INSERT), then what follows stored runs (registry.services.reactions.runs_stored: the
    catalogue's counts and the decisions they enter), all exact when it commits."""
    if not checked:
        return []
    now, name = timezone.now(), submitted_by.get_username()
    runs = create_many(Submission, [_row(one, trust, submitted_by, name, token, now) for one in checked])
    for run, one in zip(runs, checked, strict=True):
        run.document = one.document  # the value again, not the JSONText it was written from (_row)
    # The entry commits who stored it (name, user, token), so `audit verify` sees those columns rewritten.
    audit_append_many(events=[_submitted_event(run, trust, submitted_by, name, token, now) for run in runs])
    runs_stored(runs=runs)  # the catalogue's counts and the decisions they enter, in the same transaction
    return runs


def _row(
    one: protocol.Checked, trust: str, submitted_by: User, name: str, token: ApiToken | None, now: datetime
) -> Submission:
    return Submission(
        trust=trust,
        digest=one.digest,
        measurement=protocol.measurement_identity(one.document, own_digest=one.digest),
        derived=protocol.is_derived(one.document),
        # Its JSON text written by orjson, not json.dumps (~50 µs a document): a checked document holds only finite
        # numbers (protocol.check), which both write alike.
        document=finite_json(one.document),
        canonical=one.canonical.decode(),
        **_key_columns(one.document),
        **one.summary.columns(),
        submitted_by=submitted_by,
        submitted_by_name=name,
        token=token,
        submitted_at=now,
    )


def _submitted_event(
    run: Submission, trust: str, submitted_by: User, name: str, token: ApiToken | None, now: datetime
) -> dict[str, Any]:
    return {
        "kind": AuditKind.RUN_SUBMITTED,
        "actor": name,
        "actor_user": submitted_by.pk,
        "actor_token": token.pk if token is not None else None,
        "subject": run.digest,
        "time": now,
        "payload": {"run": run.pk, "trust": trust},
    }


def _key_columns(document: dict[str, Any]) -> dict[str, str]:
    return {Submission.KEY_COLUMNS[axis]: key for axis, key in comparability_keys(document).items()}
