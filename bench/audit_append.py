"""Audit log on PostgreSQL: append throughput with concurrent submitters, whole-log verification and proofs at 1M.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.audit_append           # 1M entries
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.audit_append --quick   # 20k entries
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python -m bench.audit_append --smoke   # CI: it runs

Works in a scratch database (`--scratch`, default `benchreg_bench_<pid>`, on the server DATABASE_URL names,
created, migrated and dropped at the end), with the checkpoint key in a temporary data directory, so no real data or
key is touched. Prints figures, no pass/fail on them; exits non-zero if the log it built does not verify (its times
would then mean nothing). Baselines measured in the same run: plain single-row INSERT transactions through psycopg
(for the appends) and streaming the same rows without checking them (for verification).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench import proc
from devtools import scratch
from runners.arguments import count

SCRATCH_DB = f"benchreg_bench_{os.getpid()}"  # several checkouts may share the server


def row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<58} {value:>16}  {note}")


def process_and_children_cpu() -> tuple[float, float]:
    """CPU seconds of this process, and of its children that have ended (verify_log's range processes)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


def postgres_cpu() -> float | None:
    """CPU seconds the PostgreSQL server has spent so far: its postmaster, every live backend, and the backends that
    have ended (the postmaster reaps them, so the kernel adds theirs to its children's time). None where PostgreSQL
    is not on this host (or there is no /proc). Counts the whole server: nothing else should use it meanwhile."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            postmaster = int(proc.stat_fields(cursor.fetchone()[0])[1])
        if Path(f"/proc/{postmaster}/comm").read_text().strip() != "postgres":
            return None
        seconds = sum(map(int, proc.stat_fields(postmaster)[11:15])) / proc.TICKS  # its own and its reaped children's
        for pid, parent in proc.parents().items():
            if parent == postmaster:
                with contextlib.suppress(OSError):  # ended meanwhile: its time is in the postmaster's children's now
                    seconds += proc.cpu_seconds(pid)
        return seconds
    except OSError:
        return None


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def recreate_scratch(url: str, name: str, *, drop_only: bool = False) -> None:
    admin = scratch.database_url(url, "postgres")
    if drop_only:
        scratch.drop(admin, name)
    else:
        scratch.recreate(admin, name)


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["BENCHREG_DATA_DIR"] = tempfile.mkdtemp(prefix="benchreg-bench-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


# -- appends --------------------------------------------------------------------------------------------------------


def concurrent(threads: int, total: int, op: Callable[[int], None], per_thread_close: Callable[[], None]) -> float:
    """Appends (or inserts) per second: `total` calls of op spread over `threads` threads, each its own connection."""
    barrier = threading.Barrier(threads)

    def worker(t: int) -> None:
        try:
            barrier.wait()
            for i in range(t, total, threads):
                op(i)
        finally:
            per_thread_close()

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, range(threads)))
    return total / (time.perf_counter() - start)


def bench_appends(scratch_url: str, thread_counts: list[int], total: int) -> None:
    from django.db import connections

    from registry.services.audit import audit_append

    print(f"\nAppend throughput: {total:,} appends per configuration, one transaction each")
    with psycopg.connect(scratch_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_plain (id bigserial PRIMARY KEY, seq bigint, entry text, leaf_hash text)")
    local = threading.local()

    def plain_insert(i: int) -> None:
        if not hasattr(local, "conn"):
            local.conn = psycopg.connect(scratch_url, autocommit=True)
        local.conn.execute(
            "INSERT INTO bench_plain (seq, entry, leaf_hash) VALUES (%s, %s, %s)", (i, '{"kind":"bench"}' * 8, "0" * 64)
        )

    def close_plain() -> None:
        if hasattr(local, "conn"):
            local.conn.close()
            del local.conn

    def append(i: int) -> None:
        audit_append(kind="bench.append", actor="bench", subject=f"bench:{i}", payload={"i": i})

    for threads in thread_counts:
        baseline = concurrent(threads, total, plain_insert, close_plain)
        appends = concurrent(threads, total, append, connections.close_all)
        row(
            f"{threads:>2} writers: audit_append (queued; numbered after commit)",
            f"{appends:,.0f} /s",
            f"{appends / baseline:.2f}x of {baseline:,.0f} plain INSERTs/s",
        )
    from registry.models import AuditQueued

    assert not AuditQueued.objects.exists(), "every committed append is numbered"


# -- a large log ----------------------------------------------------------------------------------------------------


def load_synthetic(count: int) -> float:
    """COPY `count` synthetic entries after the current head, as the sequencer (registry/audit/sequencer.py) writes
    them: the current entry format, committing who wrote each (`who`, under the registry's commitment key).

    An entry written any other way is a finding of `audit verify`, and a verification that finds something does other
    work than one that finds nothing: bench_verify stops the run when the loaded log does not verify, so a change of
    the entry format that this loader misses fails the bench (and CI) instead of timing the wrong thing."""
    from django.db import connection

    from protocol.audit_entries import FORMAT, actor_commitment, entry_text
    from protocol.transparency import leaf_hash
    from registry.audit.keys import commitment_key
    from registry.models import AuditHead

    start_seq = AuditHead.objects.get(id=1).size
    base = datetime(2026, 11, 1, tzinfo=UTC)
    key = commitment_key()
    started = time.perf_counter()
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(
            "COPY registry_auditentry (seq, created_at, actor, kind, subject, entry, leaf_hash, format) FROM STDIN"
        ) as copy,
    ):
        for seq in range(start_seq, start_seq + count):
            at = base + timedelta(microseconds=37 * seq)
            actor, subject = f"lab-{seq % 997:03d}", f"sha256:{seq:064x}"
            who = actor_commitment(seq=seq, actor=actor, key=key)  # a name only: no user or token id
            entry = entry_text(seq=seq, time=at, kind="bench.synthetic", subject=subject, payload={"run": seq}, who=who)
            copy.write_row((seq, at, actor, "bench.synthetic", subject, entry.decode(), leaf_hash(entry).hex(), FORMAT))
    with connection.cursor() as cursor:
        cursor.execute("UPDATE registry_audithead SET size = %s WHERE id = 1", [start_seq + count])
        # Settled as a log that has lived a while is (autovacuum has passed over its pages): otherwise autovacuum wakes
        # for the million new rows during the timings, and the first reader of each page sets its hint bits.
        cursor.execute("VACUUM ANALYZE registry_auditentry")
    return time.perf_counter() - started


class Spent:
    """One timed call: its result, wall seconds, CPU seconds of this process and its ended children (verify_log's
    range processes), and PostgreSQL's (None where postgres_cpu() cannot tell)."""

    def __init__(self, result: Any, wall: float, here: float, children: float, database: float | None) -> None:
        self.result, self.wall, self.here, self.children, self.database = result, wall, here, children, database

    @classmethod
    def of(cls, call: Callable[[], Any]) -> Spent:
        start, (cpu, children), database = time.perf_counter(), process_and_children_cpu(), postgres_cpu()
        result = call()
        wall, (cpu_after, children_after), database_after = (
            time.perf_counter() - start,
            process_and_children_cpu(),
            postgres_cpu(),
        )
        spent_database = None if database is None or database_after is None else database_after - database
        return cls(result, wall, cpu_after - cpu, children_after - children, spent_database)

    @property
    def floor(self) -> float | None:
        """The seconds no schedule of this work can beat on this machine's cores: all its CPU, spread evenly."""
        if self.database is None:
            return None
        return (self.here + self.children + self.database) / (os.cpu_count() or 1)


def verify_once(stream: Spent, sha: float, n: int) -> tuple[Any, Spent]:
    """verify_log once, its figures printed against the stream's just before it."""
    from registry.audit.verify import verify_log

    verified = Spent.of(verify_log)
    report, took_cpu = verified.result, verified.here + verified.children
    row(
        "verify_log (texts, hashes, columns, tree, checkpoints, runs)",
        f"{verified.wall:,.2f} s",
        f"{verified.wall / stream.wall:.2f}x stream, {verified.wall / sha:.1f}x SHA-256; "
        f"{'OK' if report.ok else f'{len(report.findings)} findings'}",
    )
    # This process's CPU (its threads, and the processes that check ranges of a large log; PostgreSQL's apart): on
    # a shared host the wall time also counts waiting for a core, so the CPU ratio is the steadier figure.
    row(
        "verify_log CPU in this process and its workers",
        f"{took_cpu:,.2f} CPU-s",
        f"{took_cpu / max(stream.here, 1e-9):.2f}x the stream's CPU, {took_cpu / max(n, 1) * 1e6:.1f} µs per entry; "
        f"this process {verified.here:,.2f}, range processes {verified.children:,.2f}",
    )
    if verified.database is not None and verified.floor is not None:
        # Work that takes C CPU-s cannot end before C / cores seconds, however it is spread: the floor under any
        # schedule of these checks on this machine, against which the wall time above is read.
        row(
            "verify_log CPU with PostgreSQL's",
            f"{took_cpu + verified.database:,.2f} CPU-s",
            f"PostgreSQL {verified.database:,.2f}; on {os.cpu_count() or 1} core(s) no schedule ends before "
            f"{verified.floor:,.2f} s ({verified.floor / stream.wall:.2f}x stream)",
        )
    else:
        row("verify_log CPU with PostgreSQL's", "absent", "PostgreSQL is not on this host, or there is no /proc")
    return report, verified


def bench_verify(size: int, rounds: int) -> None:
    from protocol.transparency import MerkleTree
    from registry.audit.verify.entries import entry_query, stream_chunks
    from registry.choices import CheckpointReason
    from registry.models import AuditEntry
    from registry.selectors import audit as selectors
    from registry.services.audit import checkpoint_sign

    print(f"\nSigning and verifying a log of {size:,} entries")
    start = time.perf_counter()
    checkpoint = checkpoint_sign(reason=CheckpointReason.MANUAL)
    row(
        "checkpoint_sign, cold (tree built from the table)",
        f"{time.perf_counter() - start:,.2f} s",
        f"size {checkpoint.size:,}",
    )
    texts = [
        text.encode()
        for text in AuditEntry.objects.order_by("seq").values_list("entry", flat=True).iterator(chunk_size=10_000)
    ]
    start = time.perf_counter()
    for text in texts:
        hashlib.sha256(b"\x00" + text).digest()
    sha = time.perf_counter() - start
    row("baseline: plain SHA-256 of the same entry texts, in memory", f"{sha:,.2f} s", f"{len(texts):,} entries")
    del texts
    # The stream and the verification alternate, so a host that speeds up or slows down meanwhile moves both.
    ratios: list[tuple[float, float | None]] = []
    for number in range(1, rounds + 1):
        if rounds > 1:
            print(f"  round {number} of {rounds}:")
        # The rows verify_log reads (its query: every column, the time spelled as entries spell it), read the way it
        # reads them (a server-side cursor inside a transaction, the next chunk fetched while the last is counted) and
        # dropped. Not Django's .iterator() outside a transaction: that declares the cursor WITH HOLD, and PostgreSQL
        # then builds and stores every row before sending the first, a slower stream that would flatter the ratio.
        stream = Spent.of(lambda: sum(len(chunk) for chunk in stream_chunks(entry_query())))
        n = stream.result
        row(
            "baseline: stream the same rows, no checks",
            f"{stream.wall:,.2f} s",
            f"{n:,} rows, {stream.here:,.2f} CPU-s here"
            + ("" if stream.database is None else f", {stream.database:,.2f} PostgreSQL's"),
        )
        report, verified = verify_once(stream, sha, n)
        ratios.append((verified.wall / stream.wall, None if verified.floor is None else verified.floor / stream.wall))
        if not report.ok:
            break
    if rounds > 1 and report.ok:
        floors = [floor for _, floor in ratios if floor is not None]
        row(
            f"verify_log / stream, median of {rounds} alternating rounds",
            f"{statistics.median(r for r, _ in ratios):,.2f}x",
            f"its CPU floor {statistics.median(floors):,.2f}x stream" if floors else "",
        )
    row("peak RSS of this process so far", f"{rss_mib():,.0f} MiB")
    if not report.ok:  # a time for verifying a log that does not verify measures the wrong work
        for finding in report.findings[:3]:
            print(f"  finding: {finding}", file=sys.stderr)
        sys.exit(f"bench.audit_append: the log it built does not verify ({len(report.findings):,} findings)")
    selectors.shared_tree.tree = MerkleTree()  # the next section starts cold


def bench_inclusion(size: int, calls: int) -> None:
    from django.test import Client

    from registry.selectors.audit import audit_inclusion

    print(f"\nInclusion proofs at {size:,} entries (through the selector and through the API)")
    start = time.perf_counter()
    proof = audit_inclusion(entry=size // 3, size=size)
    row("first proof in a process (builds the shared tree)", f"{time.perf_counter() - start:,.2f} s")
    start = time.perf_counter()
    for i in range(calls):
        audit_inclusion(entry=(i * 7919) % size, size=size)
    row(
        f"audit_inclusion, warm (mean of {calls:,})",
        f"{(time.perf_counter() - start) / calls * 1e6:,.0f} µs",
        "1 query: the head with the last cached leaf",
    )
    row("proof size", f"{len(proof.proof)} hashes", f"{len(proof.proof) * 32} bytes raw")
    client = Client(SERVER_NAME="localhost")  # a host the settings allow (testserver is for tests only)
    client.get("/api/v1/audit/public-key")  # the first request imports every view module: not counted
    start = time.perf_counter()
    for i in range(calls // 10):
        response = client.get(f"/api/v1/audit/inclusion?entry={(i * 7919) % size}&size={size}")
    row(
        f"GET /api/v1/audit/inclusion, anonymous (mean of {calls // 10:,})",
        f"{(time.perf_counter() - start) / (calls // 10) * 1e3:,.2f} ms",
        f"{len(response.content):,} bytes JSON",
    )
    assert json.loads(response.content)["tree_size"] == size
    row("peak RSS of this process so far", f"{rss_mib():,.0f} MiB")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: 20,000 entries, 400 appends")
    parser.add_argument(
        "--smoke", action="store_true", help="the smallest run that prints every figure (CI: does the bench run?)"
    )
    parser.add_argument("-n", type=int, default=None, help="entries in the large log (default 1,000,000)")
    parser.add_argument(
        "--appends", type=int, default=None, help="appends per writer configuration (default 4000, 400 with --quick)"
    )
    parser.add_argument(
        "--rounds",
        type=count(1, 100),  # at least one: the figures of a round are what the bench prints
        default=None,
        help="alternating rounds of the stream and verify_log, their ratio the median (default 3, 2 with --quick or "
        "--smoke)",
    )
    parser.add_argument("--scratch", default=SCRATCH_DB, help="scratch database name (created and dropped)")
    args = parser.parse_args(argv)
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        sys.exit("bench.audit_append needs DATABASE_URL=postgres://... (it creates and drops a scratch database)")
    size = args.n or (2_000 if args.smoke else 20_000 if args.quick else 1_000_000)
    threads, appends = ([1, 4], 40) if args.smoke else ([1, 4], 400) if args.quick else ([1, 4, 8, 16], 4000)
    appends = args.appends or appends
    scratch_url = scratch.database_url(url, args.scratch)
    print(
        f"benchreg audit log on PostgreSQL: Python {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs; scratch database {args.scratch}"
    )
    recreate_scratch(url, args.scratch)
    try:
        setup_django(scratch_url)
        bench_appends(scratch_url, threads, appends)
        print(f"\n  (loaded {size:,} synthetic entries with COPY in {load_synthetic(size):,.1f} s, not counted)")
        from registry.selectors.audit import audit_size

        bench_verify(audit_size(), args.rounds or (2 if args.smoke or args.quick else 3))
        bench_inclusion(audit_size(), 20 if args.smoke else 200 if args.quick else 2000)
    finally:
        from django.db import connections

        connections.close_all()
        recreate_scratch(url, args.scratch, drop_only=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
