"""`audit verify` on a large PostgreSQL registry checks its entries in ranges of seq and its runs in ranges of id, one
process each (registry/audit/verify/ranges.py): the report and the tree must be those of one pass, whatever a range
holds."""

from __future__ import annotations

import io
import multiprocessing
import os
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from registry.audit.sequencer import audit_integrate
from registry.audit.verify import entries, ranges, runs
from registry.audit.verify.findings import Report
from registry.services.audit import audit_append
from registry.services.submissions import submission_create
from tests.registry.services.test_submissions import document_variant

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SIZE = 40  # three processes: ranges #0..#15, #16..#31 and #32 on


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(SIZE):
        audit_append(kind="bench.append", actor=f"lab-{i % 3}", subject=f"s:{i}", payload={"i": i})
    audit_integrate()
    monkeypatch.setattr(ranges, "RANGES_FROM", 0)
    monkeypatch.setattr(ranges, "cores", lambda: 3)


def as_superuser(sql: str, params: tuple[Any, ...] = ()) -> None:
    """Rewrite rows below the ORM, the append-only triggers off for the statement (committed: the range processes
    read over their own connections)."""
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(sql, params)
        cursor.execute("SET session_replication_role = DEFAULT")


def _both_ways(monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[list[str], bytes], tuple[list[str], bytes]]:
    """(findings, root) checked in ranges, then in one pass."""
    assert entries.range_bounds() == [16, 32]
    outcomes = []
    for ranges_from in (0, 10**12):
        monkeypatch.setattr(ranges, "RANGES_FROM", ranges_from)
        report = Report()
        tree = entries.verify_entries(report)
        outcomes.append(([str(finding) for finding in report.findings], tree.root()))
    assert not multiprocessing.active_children()
    return outcomes[0], outcomes[1]


def test_an_untouched_log_checked_in_ranges_has_the_tree_of_one_pass(log, monkeypatch) -> None:
    in_ranges, one_pass = _both_ways(monkeypatch)
    assert in_ranges == one_pass and in_ranges[0] == []
    call_command("audit", "checkpoint", stdout=io.StringIO())
    out = io.StringIO()
    call_command("audit", "verify", stdout=out)  # in ranges: RANGES_FROM is 0
    assert "OK" in out.getvalue()


def test_rewritten_entries_in_later_ranges_are_named_as_one_pass_names_them(log, monkeypatch) -> None:
    as_superuser("UPDATE registry_auditentry SET subject = 'elsewhere' WHERE seq = 20")
    as_superuser("UPDATE registry_auditentry SET actor = 'someone' WHERE seq = 35")
    in_ranges, one_pass = _both_ways(monkeypatch)
    assert in_ranges == one_pass
    assert in_ranges[0] == [
        "entry #20: the entry text disagrees with its columns: subject",
        "entry #35: audit entry #35's commitment to who did it does not match the stored actor, actor_user, "
        "actor_token: rewritten after the entry was logged",
    ]


@pytest.mark.parametrize(
    ("deleted", "named"),
    [
        ("seq BETWEEN 14 AND 17", "entry #14: missing: entries #14..#17 are not stored"),  # across a range's start
        ("seq BETWEEN 16 AND 31", "entry #16: missing: entries #16..#31 are not stored"),  # a whole range
        ("seq < 16", "entry #0: missing: entries #0..#15 are not stored"),  # the first range, checked here
    ],
)
def test_a_gap_across_ranges_is_named_once_as_one_pass_names_it(log, monkeypatch, deleted, named) -> None:
    as_superuser(f"DELETE FROM registry_auditentry WHERE {deleted}")  # noqa: S608 (fixed text)
    in_ranges, one_pass = _both_ways(monkeypatch)
    assert in_ranges == one_pass and in_ranges[0] == [named]


def _raise(words: str) -> None:
    raise RuntimeError(words)


@pytest.mark.parametrize(
    ("failure", "words"),
    [
        (lambda: _raise("this range could not be read"), "failed:.*this range could not be read"),
        (lambda: os._exit(3), "exited with 3"),  # killed, say, by the kernel's OOM killer
    ],
)
def test_a_range_process_that_fails_fails_the_verification(log, monkeypatch, failure, words) -> None:
    """A range process that fails or dies says so; the verification does not pass over its entries."""
    parent, check = os.getpid(), entries.check_entries

    def fails_in_a_range_process(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            failure()
        return check(*args, **kwargs)

    monkeypatch.setattr(entries, "check_entries", fails_in_a_range_process)
    with pytest.raises(RuntimeError, match=words):
        entries.verify_entries(Report())
    assert not multiprocessing.active_children()


RUNS = 9  # three processes over the runs' ids: three runs each


@pytest.fixture
def stored_runs(user: Any, server_example: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    made = [submission_create(document=document_variant(server_example, i), submitted_by=user)[0] for i in range(RUNS)]
    audit_integrate()
    monkeypatch.setattr(ranges, "cores", lambda: 3)
    return made


def _runs_both_ways(monkeypatch: pytest.MonkeyPatch, made: list[Any]) -> tuple[tuple[int, list[str]], ...]:
    """(runs checked, findings) in ranges of id, then in one pass."""
    outcomes = []
    for ranges_from in (0, 10**12):
        monkeypatch.setattr(runs, "RUN_RANGES_FROM", ranges_from)
        if ranges_from == 0:
            assert ranges.bounds(made[0].pk, made[-1].pk, at_least=0) == [made[3].pk, made[6].pk]
        report = Report()
        runs.verify_runs(report)
        outcomes.append((report.runs, [str(finding) for finding in report.findings]))
    assert not multiprocessing.active_children()
    return outcomes[0], outcomes[1]


def test_runs_checked_in_ranges_are_checked_as_in_one_pass(stored_runs, monkeypatch) -> None:
    in_ranges, one_pass = _runs_both_ways(monkeypatch, stored_runs)
    assert in_ranges == one_pass == (RUNS, [])


def test_rewritten_runs_in_every_range_are_named_in_id_order_as_one_pass_names_them(stored_runs, monkeypatch) -> None:
    first, middle, last = stored_runs[1], stored_runs[4], stored_runs[8]
    as_superuser("UPDATE registry_submission SET headline_value = headline_value * 2 WHERE id = %s", (last.pk,))
    as_superuser("UPDATE registry_submission SET software_summary = 'torch 9.9.9' WHERE id = %s", (middle.pk,))
    as_superuser("UPDATE registry_submission SET sweep_id = 'elsewhere' WHERE id = %s", (first.pk,))
    in_ranges, one_pass = _runs_both_ways(monkeypatch, stored_runs)
    assert in_ranges == one_pass
    named = [finding.split(":")[0] for finding in in_ranges[1]]
    assert named == [f"run {first.pk}", f"run {middle.pk}", f"run {last.pk}"]
