"""A verification's verdict: each check with its stable code (listed in verifier/report.py), and the words the
checks share for runs, times and failures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyhanko.pdf_utils.misc import PdfDecodeLimitError


@dataclass(frozen=True)
class Check:
    """One verification step: a stable code, whether it passed, and what was found, in words."""

    code: str
    ok: bool
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "ok": self.ok, "message": self.message}


@dataclass
class Verdict:
    """Every check made, what the report says about itself, and the registry's word on each run (if asked)."""

    checks: list[Check] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def reasons(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def add(self, code: str, ok: bool, message: str) -> bool:
        self.checks.append(Check(code, ok, message))
        return ok

    def check(self, code: str) -> Check | None:
        """The check made under `code`, if it was made."""
        return next((c for c in self.checks if c.code == code), None)

    def amend(self, code: str, message: str) -> None:
        """Say more in the words of the check made under `code` (its outcome stays), once later checks know more."""
        self.checks = [Check(c.code, c.ok, message) if c.code == code else c for c in self.checks]

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": "VALID" if self.valid else "INVALID",
            "valid": self.valid,
            "reasons": [c.as_dict() for c in self.reasons],
            "checks": [c.as_dict() for c in self.checks],
            "report": self.report,
            "runs": self.runs,
        }

    def lines(self) -> list[str]:
        """Human-readable verdict: the verdict first, then one line per check."""
        head = "VALID" if self.valid else f"INVALID ({len(self.reasons)} reason{'s' * (len(self.reasons) != 1)})"
        return [head, *(f"  [{'ok' if c.ok else 'FAIL'}] {c.code}: {c.message}" for c in self.checks)]


def over_bounds(verdict: Verdict, exc: BaseException) -> bool:
    """When `exc` (or what caused it) is a decoding bound being hit, say so as the check within-bounds."""
    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, PdfDecodeLimitError):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return False
    if not any(c.code == "within-bounds" for c in verdict.checks):
        verdict.add(
            "within-bounds",
            False,
            f"a compressed stream inflates beyond the verifier's bounds ({short(seen)}"
            "): it is not a registry report, whose streams are far smaller",
        )
    return True


def run_name(run: Mapping[str, Any]) -> str:
    """A run as the report names it everywhere: by its registry run id."""
    return f"run {run.get('id')}" if run.get("id") is not None else f"the run at position {run.get('position')}"


def iso(value: Any) -> str | None:
    """A datetime as ISO 8601; None for anything else."""
    return value.isoformat() if hasattr(value, "isoformat") else None


def short(exc: BaseException) -> str:
    """An exception in words, at most 200 characters."""
    text = str(exc) or type(exc).__name__
    return text if len(text) < 200 else text[:199] + "…"
