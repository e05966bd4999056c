"""What `audit verify` reports: one `Finding` per mismatch, gathered in a `Report`, and the words for the mismatches
that several parts of the check name alike (a column against its source, a `who` that commits to other columns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from protocol.audit_entries import CommitmentKey, who_key_id


@dataclass(frozen=True)
class Finding:
    """One mismatch. `seq`, `run`, `checkpoint` (a stored checkpoint's id) or `file` says what it is about."""

    message: str
    seq: int | None = None
    run: int | None = None
    checkpoint: int | None = None
    file: str | None = None
    column: str | None = None  # the stored column that does not match, when one can be named

    def __str__(self) -> str:
        where = (
            f"entry #{self.seq}"
            if self.seq is not None
            else f"run {self.run}"
            if self.run is not None
            else f"checkpoint {self.checkpoint}"
            if self.checkpoint is not None
            else f"file {self.file}"
        )
        return f"{where}: {self.message}"


@dataclass
class Report:
    """What `verify_log` read and what did not match; `ok` when nothing."""

    size: int = 0
    root: bytes = b""
    checkpoints: int = 0
    files: int = 0
    runs: int = 0
    withdrawals: int = 0
    findings: list[Finding] = field(default_factory=list)
    cosigned: list[tuple[str, int]] = field(default_factory=list)  # (checkpoint, witnesses) meeting the quorum

    @property
    def ok(self) -> bool:
        return not self.findings

    def first_entry(self) -> Finding | None:
        """The mismatch with the lowest entry number (the first entry that does not match)."""
        return min((f for f in self.findings if f.seq is not None), key=lambda f: f.seq or 0, default=None)

    def first_run(self) -> Finding | None:
        return min((f for f in self.findings if f.run is not None), key=lambda f: f.run or 0, default=None)


def who_differs(
    seq: int, who: object, key: CommitmentKey, columns: str, *, run: int | None = None, column: str | None = None
) -> Finding:
    """An entry's `who` does not commit to the stored columns: rewritten (or, under another key, unverifiable)."""
    where = {"run": run, "column": column} if run is not None else {"seq": seq, "column": "actor"}
    key_id = who_key_id(who)
    if key_id is None:
        return Finding(
            f"audit entry #{seq} commits to nobody (no `who`), yet the columns {columns} name someone", **where
        )
    if key_id != key.key_id:
        return Finding(
            f"audit entry #{seq} was committed under key {key_id}, the registry holds key {key.key_id} "
            "(BENCHREG_AUDIT_COMMITMENT_KEY): who did it cannot be checked",
            **where,
        )
    return Finding(
        f"audit entry #{seq}'s commitment to who did it does not match the stored {columns}: "
        "rewritten after the entry was logged",
        **where,
    )


def mismatch(run: int, column: str, stored: Any, expected: Any, source: str) -> Finding:
    """Column `column` of run `run` holds `stored` where `source` says `expected`."""
    return Finding(f"column {column} is {shown(stored)}, {source} says {shown(expected)}", run=run, column=column)


def shown(value: Any) -> str:
    """A value as a finding quotes it (a datetime in ISO 8601)."""
    return repr(value.isoformat()) if isinstance(value, datetime) else repr(value)
