"""`benchreg audit verify` says on stderr how far it has got while it checks a large registry
(registry/audit/verify/progress.py): the counts include the rows the range processes check, and end at the totals."""

from __future__ import annotations

import io
import itertools
import re
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from registry.audit.sequencer import audit_integrate
from registry.audit.verify import ranges, runs
from registry.services.audit import audit_append
from registry.services.submissions import submission_create
from tests.registry.services.test_submissions import document_variant

RUNS = 9
LINE = re.compile(r"audit verify: (entries|runs) ([\d,]+) of ([\d,]+)(?: \((\d+)%\))? in [\d.]+ s(?:, about .+ left)?")


@pytest.fixture
def registry(user: Any, server_example: dict[str, Any]) -> None:
    for i in range(RUNS):
        submission_create(document=document_variant(server_example, i), submitted_by=user)
    for i in range(40):
        audit_append(kind="bench.append", actor=f"lab-{i % 3}", subject=f"s:{i}", payload={"i": i})
    audit_integrate()


def _verify(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("audit", "verify", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _counts(err: str) -> dict[str, list[tuple[int, int]]]:
    """phase -> [(checked, total), ...] in the order said; every stderr line must be a progress line."""
    said: dict[str, list[tuple[int, int]]] = {}
    for line in err.splitlines():
        match = LINE.fullmatch(line)
        assert match, line
        said.setdefault(match[1], []).append((int(match[2].replace(",", "")), int(match[3].replace(",", ""))))
    return said


def _assert_counted_to_the_end(err: str, entries: int) -> None:
    said = _counts(err)
    assert said.keys() == {"entries", "runs"}, err
    for phase, total in (("entries", entries), ("runs", RUNS)):
        checked = [done for done, _ in said[phase]]
        # each line says more than the last (no line twice), and the last says all
        assert all(a < b for a, b in itertools.pairwise(checked)) and checked[-1] == total, (phase, said[phase])
        assert {of for _, of in said[phase]} == {total}, (phase, said[phase])


@pytest.mark.django_db
def test_every_part_is_counted_to_its_total(registry) -> None:
    out, err = _verify("--progress-every", "0")
    assert "OK: every entry" in out
    entries = int(re.search(r": (\d+) entries", out)[1])  # type: ignore[index]
    _assert_counted_to_the_end(err, entries)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_rows_checked_by_the_range_processes_are_counted(registry, monkeypatch) -> None:
    """Entries and runs in ranges, three processes each: the parent says the others' counts too (it checks a third
    of the rows itself, so counting to the totals counts theirs). Which count it says first depends on how far the
    others have got by then: on a quick host they can be through already."""
    monkeypatch.setattr(ranges, "RANGES_FROM", 0)
    monkeypatch.setattr(runs, "RUN_RANGES_FROM", 0)
    monkeypatch.setattr(ranges, "cores", lambda: 3)
    out, err = _verify("--progress-every", "0")
    assert "OK: every entry" in out
    entries = int(re.search(r": (\d+) entries", out)[1])  # type: ignore[index]
    _assert_counted_to_the_end(err, entries)


@pytest.mark.django_db
@pytest.mark.parametrize("args", [(), ("--quiet", "--progress-every", "0")])
def test_a_quick_check_or_a_quiet_one_says_nothing_of_progress(registry, args) -> None:
    out, err = _verify(*args)
    assert "OK: every entry" in out
    assert err == ""


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["-1", "soon", "nan", "inf"])
def test_a_wrong_interval_is_refused_in_words(value) -> None:
    with pytest.raises(CommandError, match="--progress-every"):
        call_command("audit", "verify", "--progress-every", value)
