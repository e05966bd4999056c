"""MLPerf Inference's audit (compliance) tests of one result: their verdict files read (`load`) and stated in the
document's conditions.validity.checks (`checks`).

MLPerf asks closed-division results to pass audit tests run beside the measured run: TEST01 (logged responses equal
the accuracy run's), TEST04 (no caching of repeated samples), TEST05 (other seeds, v4.x), TEST06 (LLM output
consistency), TEST07 (accuracy in performance mode), TEST08 (dlrm-v3's streaming NE), TEST09 (output length in
performance mode). Each writes a verdict file that MLCommons' submission checker reads (rules.AUDIT_FILES); which
tests a result must have is a rule of its round (RoundRules.audit_tests, taken from the checker).

In the document: one boolean per verdict file (`audit_test01_performance: true`; TEST06 keeps its three
`test06_*` check lines), and `audit_<test>_present: false` for a test the round requires whose verdict file is not
in the tree, so a missing test is stated, never silently absent. A result with every required test present and
passed carries no `_present` key at all, so documents that were complete before keep their digests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .ledger import Ledger
from .logs import read_test06
from .plan import Build
from .rules import AUDIT_FILES, TEST06_CHECKS, AuditFile, AuditRule


def load(ledger: Ledger, scenario_dir: Path, compliance: Path) -> dict[str, dict[str, Any]]:
    """{test: {file name: reading}} of every verdict file found, in the result folder (v6.0 on:
    results/<system>/<benchmark>/<scenario>/TESTxx/) or else beside it (v4.x-v5.x: compliance/<...>/TESTxx/)."""
    found: dict[str, dict[str, Any]] = {}
    for test, files in AUDIT_FILES.items():
        for audit_file in files:
            inside, beside = scenario_dir / test / audit_file.name, compliance / test / audit_file.name
            path = inside if inside.is_file() else beside
            # a verification script's console output (progress bars, a tokenizer's warnings) may hold bytes that are
            # not UTF-8: only the verdict line is read, so they are replaced and reported, not fatal (TEST06 as before)
            lenient = audit_file.reading != "test06"
            reading = ledger.load(
                path, _reader(audit_file), what=f"{test} result", required=False, quiet=True, lenient=lenient
            )
            if reading is not None:
                found.setdefault(test, {})[audit_file.name] = reading
    return found


def _reader(audit_file: AuditFile) -> Any:
    if audit_file.reading == "test06":
        return read_test06
    return read_verdict_line if audit_file.reading == "line" else read_verdict


def read_verdict(text: str) -> dict[str, bool]:
    """A verify_*.txt as the checker reads TEST01/TEST04/TEST05/TEST07/TEST09: passed when "TEST PASS" is anywhere in
    it (the verification scripts print "TEST PASS" or "TEST FAIL"; a file with neither is a fail to the checker)."""
    return {"passed": "TEST PASS" in text, "says_fail": "TEST FAIL" in text}


def read_verdict_line(text: str) -> dict[str, bool]:
    """TEST08's verify_accuracy.txt, as the checker reads it: passed when one line, stripped, is "TEST PASS"."""
    lines = [line.strip() for line in text.splitlines()]
    return {"passed": "TEST PASS" in lines, "says_fail": "TEST FAIL" in lines}


def checks(readings: dict[str, dict[str, Any]], rule: AuditRule | None, build: Build) -> dict[str, bool]:
    """The conditions.validity.checks entries of the audit tests: each verdict read, and each required test missing."""
    out: dict[str, bool] = {}
    for test, files in AUDIT_FILES.items():
        got = readings.get(test, {})
        for audit_file in files:
            if audit_file.name in got:
                out.update(_verdict(test, audit_file, got[audit_file.name], build))
        absent = [f.name for f in files if f.name not in got]
        if rule is not None and rule.required and test in rule.tests and absent:
            out[f"audit_{test.lower()}_present"] = False
            build.warnings.append(
                f"{test} is required by the round's rules ({rule.source}) but its {', '.join(absent)} is not in the "
                f"tree: stated as audit_{test.lower()}_present = false"
            )
    return out


def _verdict(test: str, audit_file: AuditFile, reading: Any, build: Build) -> dict[str, bool]:
    if audit_file.reading == "test06":
        out = {}
        for label, raw in reading.items():
            if raw in ("True", "False"):
                out[TEST06_CHECKS[label]] = raw == "True"
            else:  # "Skipped" (no first token in Offline) is not a pass or a fail
                build.unparsed[f"TEST06.{TEST06_CHECKS[label]}"] = raw
        return out
    if reading["passed"]:
        return {audit_file.check: True}
    if audit_file.deterministic:
        # The checker does not fail TEST01 on this line: it goes on to compare the baseline and compliance accuracy
        # (non-deterministic mode), which benchreg does not judge. The line is kept, and the check is not stated.
        build.unparsed[f"{test}.{audit_file.check}"] = "TEST FAIL" if reading["says_fail"] else "no TEST PASS line"
        build.warnings.append(
            f"{test} {audit_file.name} does not pass in deterministic mode: MLPerf's checker then compares "
            f"{test}/accuracy/baseline_accuracy.txt with compliance_accuracy.txt, which is not judged here "
            f"({audit_file.check} is left unstated)"
        )
        return {}
    if not reading["says_fail"]:
        build.warnings.append(f"{test} {audit_file.name} has neither 'TEST PASS' nor 'TEST FAIL': read as not passed")
    return {audit_file.check: False}


def rule_note(rule: AuditRule | None, round_name: str, model: str, build: Build) -> None:
    """Say so when the round's rules do not list the tests this model needs: missing tests are then not stated."""
    if rule is None:
        build.warnings.append(
            f"round {round_name}'s rules do not say which audit tests {model!r} needs: verdicts found are stored, "
            "a missing test is not stated"
        )
