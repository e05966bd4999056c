"""Entries are queued by the change's transaction and sequenced in batches. Every guarantee of the
log holds under concurrent writers on real PostgreSQL, and a sequencer killed mid-batch loses nothing and
integrates nothing twice."""

from __future__ import annotations

import copy
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection, transaction

from registry.audit.sequencer import audit_integrate
from registry.audit.verify import verify_log
from registry.choices import AuditKind, CheckpointReason
from registry.models import ApiToken, AuditEntry, AuditHead, AuditQueued, Submission, Withdrawal
from registry.services.audit import audit_append, checkpoint_sign
from registry.services.submissions import submission_create, submission_create_batch, submission_withdraw
from registry.services.tokens import token_create, token_revoke
from tests.registry.concurrency import in_thread

ROOT = Path(__file__).resolve().parents[3]
WRITERS = 16


def _variant(document, tag):
    out = copy.deepcopy(document)
    out["system"]["name"] = f"seq-node-{tag}"
    return out


def _assert_log_is_whole():
    """Gapless from 0, the head counts it, nothing left queued, and `audit verify` finds nothing."""
    assert not AuditQueued.objects.exists()
    seqs = list(AuditEntry.objects.order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(len(seqs)))
    assert AuditHead.objects.get(id=1).size == len(seqs)
    for seq, text in AuditEntry.objects.values_list("seq", "entry"):
        assert json.loads(text)["seq"] == seq
    report = verify_log()
    assert report.ok, [str(f) for f in report.findings]


class Boom(Exception):
    pass


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("runs_inserted_by", ["INSERT", "COPY"])
def test_sixteen_writers_racing_every_kind_of_change_leave_one_entry_per_committed_change(
    user, server_example, runs_inserted_by, monkeypatch
):
    # The batches here hold 4 documents: below COPY_FROM they are INSERTed; at 2 they go through COPY, and the
    # document every writer sends makes COPYs lose races (IntegrityError, then one document at a time).
    import registry.models.copy as copy_module

    monkeypatch.setattr(copy_module, "COPY_FROM", 2 if runs_inserted_by == "COPY" else 10**9)
    barrier = threading.Barrier(WRITERS)
    rounds = 3

    @in_thread
    def writer(w):
        barrier.wait()
        done = {"runs": [], "withdrawn": [], "tokens": [], "reports": [], "rolled_back": []}
        for r in range(rounds):
            run, created = submission_create(document=_variant(server_example, f"{w}-{r}-single"), submitted_by=user)
            assert created
            done["runs"].append(run.digest)
            batch = [_variant(server_example, f"{w}-{r}-batch-{i}") for i in range(3)]
            batch.append(_variant(server_example, "shared"))  # every writer sends this one: stored exactly once
            batch.append({"not": "a run"})  # refused, alone
            outcomes = submission_create_batch(documents=batch, submitted_by=user)
            assert [o.status for o in outcomes[:3]] == ["stored"] * 3 and outcomes[4].status == "refused"
            done["runs"] += [o.run.digest for o in outcomes[:3]]
            submission_withdraw(submission=outcomes[0].run, reason=f"writer {w} round {r}", actor=user)
            done["withdrawn"].append(outcomes[0].run.digest)
            token, _ = token_create(user=user, name=f"w{w}r{r}", scopes="submit")
            token_revoke(token=token, actor="test")
            done["tokens"].append(f"token:{token.pk}")
            # A report: its entry and the checkpoint that must include it, in one transaction.
            with transaction.atomic():
                audit_append(kind=AuditKind.REPORT_ISSUED, actor="test", subject=f"report:{w}-{r}")
                checkpoint = checkpoint_sign(reason=CheckpointReason.REPORT)
            done["reports"].append((f"report:{w}-{r}", checkpoint.size))
            # A change that rolls back after queueing its entry: no entry may survive it.
            with pytest.raises(Boom), transaction.atomic():
                doomed, _ = submission_create(document=_variant(server_example, f"{w}-{r}-doomed"), submitted_by=user)
                done["rolled_back"].append(doomed.digest)
                raise Boom
        return done

    with ThreadPoolExecutor(WRITERS) as pool:
        results = list(pool.map(writer, range(WRITERS)))
    # The hand-off: every commit's entry was numbered by its own sequencing or by the sequencer that held the head.
    assert not AuditQueued.objects.exists()
    audit_integrate()

    _assert_log_is_whole()
    subjects = list(AuditEntry.objects.values_list("kind", "subject"))
    submitted = [s for k, s in subjects if k == AuditKind.RUN_SUBMITTED]
    assert len(submitted) == len(set(submitted)) == Submission.objects.count() == WRITERS * rounds * 4 + 1
    assert set(submitted) == set(Submission.objects.values_list("digest", flat=True))
    withdrawn = sorted(s for k, s in subjects if k == AuditKind.RUN_WITHDRAWN)
    assert withdrawn == sorted(d for r in results for d in r["withdrawn"])
    assert len(withdrawn) == Withdrawal.objects.count()
    for result in results:
        for token in result["tokens"]:
            assert [k for k, s in subjects if s == token] == [AuditKind.TOKEN_CREATED, AuditKind.TOKEN_REVOKED]
        for subject, size in result["reports"]:
            (seq,) = AuditEntry.objects.filter(subject=subject).values_list("seq", flat=True)
            assert seq < size  # the report's checkpoint covers the report's own entry
        for digest in result["rolled_back"]:
            assert digest not in submitted and not Submission.objects.filter(digest=digest).exists()
    assert ApiToken.objects.count() == WRITERS * rounds


@pytest.mark.django_db(transaction=True)
def test_an_entry_is_integrated_when_its_change_commits_and_never_for_a_rollback(user, server_example):
    run, _ = submission_create(document=server_example, submitted_by=user)
    assert AuditEntry.objects.get(subject=run.digest).seq == 0 and not AuditQueued.objects.exists()
    with pytest.raises(Boom), transaction.atomic():
        submission_create(document=_variant(server_example, "rolled-back"), submitted_by=user)
        assert AuditQueued.objects.count() == 1  # queued inside the change's transaction
        raise Boom
    assert not AuditQueued.objects.exists() and AuditEntry.objects.count() == 1
    _assert_log_is_whole()


@pytest.mark.django_db(transaction=True)
def test_with_the_worker_sequencer_entries_wait_queued_and_the_periodic_task_integrates_them(
    user, server_example, settings
):
    from registry.tasks.audit import integrate

    settings.BENCHREG_AUDIT_SEQUENCING = "worker"
    for i in range(5):
        submission_create(document=_variant(server_example, i), submitted_by=user)
    assert AuditQueued.objects.count() == 5 and not AuditEntry.objects.exists()
    assert integrate() == 5
    assert settings.CELERY_BEAT_SCHEDULE["audit-integrate"]["schedule"] <= 1.0
    times = [json.loads(t)["time"] for t in AuditEntry.objects.order_by("seq").values_list("entry", flat=True)]
    assert times == sorted(times)  # each entry's time is when its change queued it
    _assert_log_is_whole()


SEQUENCER = """
import os, sys, time
import django
django.setup()
from django.db import transaction
from registry.audit.sequencer import audit_integrate
wait = sys.argv[3] == "wait"  # no-wait: the after-commit sequencer's path (two statements a batch on PostgreSQL)
if sys.argv[1] == "hold":
    with transaction.atomic():
        count = audit_integrate(batch_size=int(sys.argv[2]), limit=int(sys.argv[2]), wait=wait)
        print(f"integrated {count}, not committed", flush=True)
        time.sleep(120)
else:
    print("ready", flush=True)
    audit_integrate(batch_size=int(sys.argv[2]), wait=wait)
    print("done", flush=True)
"""


def _sequencer(mode, batch, env, wait):
    return subprocess.Popen(
        [sys.executable, "-c", SEQUENCER, mode, str(batch), wait], env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("wait", ["wait", "no-wait"])
def test_a_sequencer_killed_mid_batch_loses_nothing_and_integrates_nothing_twice(settings, wait):
    settings.BENCHREG_AUDIT_SEQUENCING = "worker"  # only the separate sequencer processes number entries
    total = 6000
    with transaction.atomic():
        for i in range(total):
            audit_append(kind=AuditKind.JOB_STATE, actor="test", subject=f"job:{i}", payload={"i": i})
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "registry.settings",
        "BENCHREG_AUDIT_SEQUENCING": "worker",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        # the test's own data directory: the sequencers commit who did each entry under the key kept there, the one
        # this process verifies with (another directory's key reads as "committed under key …" on every entry)
        "BENCHREG_DATA_DIR": str(settings.DATA_DIR),
    }

    # 1. Killed with a batch written and not committed: the batch is rolled back, every entry still queued.
    holder = _sequencer("hold", 500, env, wait)
    assert holder.stdout.readline().strip() == "integrated 500, not committed"
    assert AuditEntry.objects.count() == 0  # not visible: the batch has not committed
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    assert AuditEntry.objects.count() == 0 and AuditQueued.objects.count() == total

    # 2. Free-running sequencers killed at random moments, again and again, until the queue is empty.
    rng = random.Random(16)
    kills = 0
    while AuditQueued.objects.exists() and kills < 40:
        process = _sequencer("run", 400, env, wait)
        # killed while integrating, not while Django starts (which takes longer than a batch on a busy host)
        assert process.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.6))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait(30)
        integrated, queued, head = _counts_at_once()
        assert integrated + queued == total  # nothing lost, nothing doubled, at every kill
        assert head == integrated
    assert kills > 0
    audit_integrate()
    subjects = list(AuditEntry.objects.order_by("seq").values_list("subject", flat=True))
    assert sorted(subjects) == sorted(f"job:{i}" for i in range(total))  # each exactly once
    _assert_log_is_whole()


def _counts_at_once() -> tuple[int, int, int]:
    """Entries, queued entries and the head's size in one statement, so in one snapshot. A killed sequencer's
    backend can still commit its last batch after the process is gone (it had sent COMMIT): counted by separate
    statements, that commit could fall between them and the sum come out short by a batch."""
    entries, queued, head = (model._meta.db_table for model in (AuditEntry, AuditQueued, AuditHead))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT count(*) FROM {entries}), (SELECT count(*) FROM {queued}), "  # noqa: S608 (model names)
            f"(SELECT size FROM {head} WHERE id = 1)"
        )
        return cursor.fetchone()


@pytest.mark.django_db(transaction=True)
def test_the_api_says_when_an_entry_is_queued_and_not_yet_integrated(user, server_example, settings, api):
    from django.core.management import call_command

    settings.BENCHREG_AUDIT_SEQUENCING = "worker"
    run, _ = submission_create(document=server_example, submitted_by=user)
    response = api.get(f"/api/v1/audit/entries?subject={run.digest}")
    assert response.json()["results"] == [] and response.json()["pending"] == 1
    assert response["Retry-After"] == "1"
    call_command("audit", "sequence")
    response = api.get(f"/api/v1/audit/entries?subject={run.digest}")
    assert response.json()["pending"] == 0 and "Retry-After" not in response
    (entry,) = response.json()["results"]
    proof = api.get(f"/api/v1/audit/inclusion?entry={entry['seq']}&size={entry['seq'] + 1}")
    assert proof.status_code == 200 and proof.json()["leaf_hash"] == entry["leaf_hash"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_background_sequencer_integrates_shortly_after_commits(user, server_example, settings):
    settings.BENCHREG_AUDIT_SEQUENCING = "background"

    @in_thread
    def submit(i):
        return submission_create(document=_variant(server_example, f"bg-{i}"), submitted_by=user)[0].digest

    with ThreadPoolExecutor(4) as pool:
        digests = list(pool.map(submit, range(24)))
    deadline = time.monotonic() + 10
    while AuditQueued.objects.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not AuditQueued.objects.exists()  # integrated without any reader asking
    assert sorted(AuditEntry.objects.values_list("subject", flat=True)) == sorted(digests)
    _assert_log_is_whole()


@pytest.mark.django_db
@pytest.mark.parametrize("microsecond", [0, 5, 500000])
def test_verify_reads_every_spelling_of_an_entry_time(monkeypatch, microsecond):
    from datetime import UTC, datetime

    from django.utils import timezone

    moment = datetime(2026, 11, 1, 12, 0, 0, microsecond, tzinfo=UTC)
    monkeypatch.setattr(timezone, "now", lambda: moment)
    audit_append(kind=AuditKind.JOB_STATE, actor="test", subject="job:1")
    entry = AuditEntry.objects.get()
    assert json.loads(entry.entry)["time"] == moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # format 2: six digits always
    assert verify_log().ok
