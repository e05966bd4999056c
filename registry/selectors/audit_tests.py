"""The audit (compliance) tests of a stored MLPerf Inference run, read back from its document for the run page.

The importer (registry/importers/mlperf/audit.py) writes them into conditions.validity.checks: one boolean per
verdict file (`audit_test01_performance`, TEST06's `test06_*` lines) and `audit_<test>_present: false` for a test the
round requires that is not in the tree; a verdict MLPerf's checker does not take as final (TEST01's accuracy in
deterministic mode) is kept in provenance.origin.unparsed instead. This module turns them into words: passed, which
failed, which are missing, which are not judged. Plain Python over the document: no query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_CHECK = re.compile(r"^audit_(test\d\d)_(\w+)$")
_TEST06 = re.compile(r"^test06_(\w+)$")
_UNPARSED = re.compile(r"^(TEST\d\d)\.(?:audit_test\d\d_|test06_)(\w+)$")

# Why a verdict the run's document keeps as text is not a pass or a fail (the checker's own reading).
_NOT_JUDGED = {
    "TEST01": "its deterministic-mode accuracy check did not pass; MLPerf's checker then compares the baseline and "
    "compliance accuracy, which benchreg does not judge",
}


@dataclass
class AuditTest:
    """One test: the parts read with their verdicts, and whether the round requires it but the tree lacks it."""

    name: str  # "TEST01"
    parts: dict[str, bool] = field(default_factory=dict)  # "performance" -> True
    kept: dict[str, str] = field(default_factory=dict)  # part -> the verbatim text of a verdict that is neither
    missing: bool = False

    @property
    def state(self) -> str:
        """'missing', 'failed', 'not judged' or 'passed'."""
        if self.missing:
            return "missing"
        if not all(self.parts.values()):
            return "failed"
        if any(not _is_pass(self.name, part, text) for part, text in self.kept.items()):
            return "not judged"
        return "passed"

    @property
    def failed_parts(self) -> list[str]:
        return [part.replace("_", " ") for part, ok in self.parts.items() if not ok]

    @property
    def line(self) -> str:
        """'TEST01: failed (performance)', 'TEST06: passed (eos, first token skipped, sample length)'."""
        state = self.state
        if state == "missing" and self.parts:  # one of its two verdict files (TEST01) is there
            read = ", ".join(f"{p.replace('_', ' ')} {'passed' if ok else 'failed'}" for p, ok in self.parts.items())
            return f"{self.name}: incomplete (required by the round's rules; a verdict file is missing; read: {read})"
        if state == "missing":
            return (
                f"{self.name}: missing (required by the round's rules; its verdict file is not in the published tree)"
            )
        if state == "failed":
            return f"{self.name}: failed ({', '.join(self.failed_parts)})"
        if state == "not judged":
            return f"{self.name}: not judged ({_NOT_JUDGED.get(self.name, 'its verdict is not a pass or a fail')})"
        parts = [p.replace("_", " ") for p in self.parts] + [
            f"{p.replace('_', ' ')} {t.lower()}" for p, t in self.kept.items()
        ]
        return f"{self.name}: passed ({', '.join(sorted(parts))})"


def _is_pass(test: str, part: str, text: str) -> bool:
    """TEST06's first-token check "Skipped" (no first token in Offline) counts as passed, as the checker counts it."""
    return test == "TEST06" and part == "first_token" and text == "Skipped"


@dataclass(frozen=True)
class AuditTests:
    tests: list[AuditTest]

    def named(self, state: str) -> list[str]:
        return [t.name for t in self.tests if t.state == state]

    @property
    def bad(self) -> bool:
        """A test failed or is missing: the page shows it as a warning."""
        return any(t.state in ("failed", "missing") for t in self.tests)

    @property
    def ok(self) -> bool:
        return all(t.state == "passed" for t in self.tests)

    @property
    def sentence(self) -> str:
        """One sentence a reader can take away: passed its audit tests (…) / failed … / missing …."""
        if self.ok:
            return f"Passed its audit tests ({', '.join(self.named('passed'))})."
        said = []
        for state, words in (
            ("failed", "Failed its audit test{s} {names}."),
            ("missing", "Missing the audit test{s} the round requires: {names}."),
            ("not judged", "Audit test{s} {names} not judged here."),
            ("passed", "Passed {names}."),
        ):
            names = self.named(state)
            if names:
                said.append(words.format(s="s" if len(names) > 1 else "", names=", ".join(names)))
        return " ".join(said)


def audit_tests(document: Mapping[str, Any]) -> AuditTests | None:
    """The run's audit tests, or None when its document states none (not an MLPerf Inference result, or one whose
    round requires none and whose tree has none)."""
    checks = ((document.get("conditions") or {}).get("validity") or {}).get("checks") or {}
    unparsed = ((document.get("provenance") or {}).get("origin") or {}).get("unparsed") or {}
    found: dict[str, AuditTest] = {}
    for key, value in checks.items():
        match = _CHECK.match(key) or _TEST06.match(key)
        if not match or not isinstance(value, bool):
            continue
        name, part = (match[1].upper(), match[2]) if key.startswith("audit_") else ("TEST06", match[1])
        test = found.setdefault(name, AuditTest(name))
        if part == "present":
            test.missing = test.missing or not value
        else:
            test.parts[part] = value
    for key, text in unparsed.items():
        match = _UNPARSED.match(key)
        if match and isinstance(text, str):
            found.setdefault(match[1], AuditTest(match[1])).kept[match[2]] = text
    return AuditTests(sorted(found.values(), key=lambda t: t.name)) if found else None
