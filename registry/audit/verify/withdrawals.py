"""`audit verify`, part 5: every withdrawal has its `run.withdrawn` entry with the same reason (and in format 3 the
same person and time), and every such entry its withdrawal."""

from __future__ import annotations

from typing import Any

from protocol.audit_entries import (
    CommitmentKey,
    actor_commitment,
    commits_actor,
    differing_fields,
    entry_payload,
    parse_entry,
    withdrawal_entry,
    withdrawal_fields,
    withdrawal_reason_matches,
)
from registry.audit.keys import commitment_key
from registry.audit.verify.findings import Finding, Report, mismatch, who_differs
from registry.choices import AuditKind
from registry.models import AuditEntry, Withdrawal

_FIELD_COLUMNS = {"time": "withdrawal.withdrawn_at"}  # entry field: withdrawal column


def verify_withdrawals(report: Report) -> None:
    """Each withdrawal against its logged entry, then every entry left without a withdrawal."""
    key = commitment_key()
    entries = {
        subject: (seq, text, fmt, actor, user)
        for seq, subject, text, fmt, actor, user in AuditEntry.objects.filter(kind=AuditKind.RUN_WITHDRAWN).values_list(
            "seq", "subject", "entry", "format", "actor", "actor_user"
        )
    }
    for withdrawal in Withdrawal.objects.select_related("submission").order_by("id"):
        report.withdrawals += 1
        seq, text, fmt, actor, user = entries.pop(withdrawal.submission.digest, (None, None, None, None, None))
        if text is None:
            report.findings.append(
                Finding("its withdrawal has no run.withdrawn audit entry", run=withdrawal.submission_id)
            )
            continue
        _verify_withdrawal(report, withdrawal, seq, text, fmt, actor, user, key)
    for seq, *_ in sorted(entries.values()):
        report.findings.append(Finding("records a withdrawal that is not stored", seq=seq))


def _verify_withdrawal(
    report: Report,
    withdrawal: Withdrawal,
    seq: int,
    text: str,
    fmt: int | None,
    actor: str,
    user: int | None,
    key: CommitmentKey,
) -> None:
    """One withdrawal against its entry rebuilt from the withdrawal's record, as the entry's format says."""
    run = withdrawal.submission_id
    logged = parse_entry(text)
    if not withdrawal_reason_matches(entry_payload(logged), withdrawal.reason):
        message = f"its withdrawal reason differs from audit entry #{seq}"
        report.findings.append(Finding(message, run=run, column="withdrawal.reason"))
    if fmt is not None and commits_actor(fmt):
        _verify_withdrawal_fields(report, withdrawal, seq, logged, fmt)
        _verify_withdrawal_who(report, withdrawal, seq, logged.get("who"), actor, user, key)
    elif withdrawal.withdrawn_by_name != actor:
        report.findings.append(_actor_column_differs(withdrawal, seq, actor))


def _actor_column_differs(withdrawal: Withdrawal, seq: int, actor: str) -> Finding:
    source = f"audit entry #{seq}'s actor column"
    name = withdrawal.withdrawn_by_name
    return mismatch(withdrawal.submission_id, "withdrawal.withdrawn_by_name", name, actor, source)


def _verify_withdrawal_fields(
    report: Report, withdrawal: Withdrawal, seq: int, logged: dict[str, Any], fmt: int
) -> None:
    """The logged entry against the one rebuilt from the withdrawal's record, field by field."""
    run = withdrawal.submission_id
    rebuilt = withdrawal_entry(
        seq=seq,
        digest=withdrawal.submission.digest,
        run=run,
        reason=withdrawal.reason,
        withdrawn_at=withdrawal.withdrawn_at,
    )
    for path, stored, found in differing_fields(logged, rebuilt, withdrawal_fields(fmt)):
        report.findings.append(mismatch(run, _FIELD_COLUMNS[path], stored, found, f"audit entry #{seq}"))


def _verify_withdrawal_who(
    report: Report, withdrawal: Withdrawal, seq: int, who: Any, actor: str, user: int | None, key: CommitmentKey
) -> None:
    """Format 3 commits who withdrew the run: recomputed from the withdrawal's own columns."""
    committed = actor_commitment(seq=seq, actor=withdrawal.withdrawn_by_name, user=withdrawal.withdrawn_by_id, key=key)
    if who == committed:
        return
    stored = {
        "withdrawal.withdrawn_by": withdrawal.withdrawn_by_id,
        "withdrawal.withdrawn_by_name": withdrawal.withdrawn_by_name,
    }
    differ = {
        "withdrawal.withdrawn_by": withdrawal.withdrawn_by_id != user,
        "withdrawal.withdrawn_by_name": withdrawal.withdrawn_by_name != actor,
    }
    columns = [column for column, differs in differ.items() if differs]
    for column in columns or list(stored):
        finding = who_differs(seq, who, key, "withdrawn_by_name, withdrawn_by")
        message = f"column {column} is {stored[column]!r}: {finding.message}"
        report.findings.append(Finding(message, run=withdrawal.submission_id, column=column))
