"""Checking a large table in ranges, one forked process per range beyond the first (which the caller checks
itself, meanwhile): what `audit verify` does with the entries (by seq) and the runs (by id) of a large PostgreSQL
registry, since one process checking rows holds the GIL for all of them however many cores wait."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from django.db import connection

from registry.audit.verify import progress

# A table of RANGES_FROM rows or more is checked by up to MAX_PROCESSES processes, one per core this process may
# run on: below that a fork and a second connection (tens of milliseconds) gain little.
RANGES_FROM = 100_000
MAX_PROCESSES = 4

Work = Callable[[int, int | None], Any]  # (start, stop): a range's result, picklable


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def bounds(first: int | None, last: int | None, align: int = 1, at_least: int | None = None) -> list[int]:
    """Where the second and later ranges start over the keys first..last (none: one process checks every row, as
    for fewer than `at_least` keys, default RANGES_FROM). They are first plus multiples of `align` (a small table,
    as in tests: of a smaller power of two)."""
    if connection.vendor != "postgresql" or "fork" not in multiprocessing.get_all_start_methods():
        return []
    processes = min(MAX_PROCESSES, cores())
    if first is None or last is None or processes < 2:
        return []
    span = last - first + 1
    if span < (RANGES_FROM if at_least is None else at_least):
        return []
    align = min(align, 1 << max(0, (span // processes).bit_length() - 1))
    step = -(-span // processes // align) * align
    return list(range(first + step, last + 1, step))[: processes - 1]


@contextlib.contextmanager
def forked(starts: list[int], work: Work) -> Iterator[Callable[[int], Any]]:
    """Run work(start, stop) for each range starts[i] <= key < starts[i + 1] (the last open) in a forked process;
    yields result(i), which waits for range i's result and raises RuntimeError where its process failed.

    Each process reads its own snapshot over its own connection. The caller checks the rows before starts[0]
    meanwhile, and takes the results in order, so what it reports is what one pass would."""
    context = multiprocessing.get_context("fork")  # the checker, key and settings as this process has them
    workers: list[tuple[Any, Any]] = []
    results: list[Any] = []
    receivers: list[threading.Thread] = []

    def result(index: int) -> Any:
        receivers[index].join()
        process, _ = workers[index]
        if (found := results[index]) is None:
            process.join()
            raise RuntimeError(f"audit verify: the process checking a range exited with {process.exitcode}")
        if isinstance(found, str):
            raise RuntimeError(f"audit verify: the process checking a range failed:\n{found}")
        return found

    try:
        for start, stop in zip(starts, [*starts[1:], None], strict=True):
            receive, send = context.Pipe(duplex=False)
            process = context.Process(
                target=_in_process,
                args=(work, len(workers), start, stop, send),
                name="audit-verify-range",
                daemon=True,
            )
            process.start()  # before this process starts a thread: a fork copies no running thread
            send.close()
            workers.append((process, receive))
        for index, (_, receive) in enumerate(workers):  # each range's result (tens of MB of tree) read meanwhile
            results.append(None)
            receivers.append(threading.Thread(target=_receive, args=(receive, results, index), daemon=True))
            receivers[-1].start()
        yield result
    finally:
        for process, _ in workers:
            if process.is_alive():
                process.terminate()
            process.join()
        for receiver in receivers:  # each has its result or its end of file now
            receiver.join()
        for _, receive in workers:
            receive.close()


def _receive(pipe: Any, results: list[Any], index: int) -> None:
    """results[index] = what the range process sends (left None when it ends without sending)."""
    with contextlib.suppress(EOFError, OSError):
        results[index] = pipe.recv()


def _in_process(work: Work, index: int, start: int, stop: int | None, send: Any) -> None:
    """In a forked process, checking range `index`: send work(start, stop), or the traceback of what failed. The
    work runs in a new thread: Django keeps a connection per thread, so that thread opens its own, and the one copied
    from the parent (its socket still the parent's) is never used or closed here."""
    progress.in_range(index)
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work(start, stop))
        except BaseException:  # told to the parent, which raises
            outcome.append(traceback.format_exc())
        finally:
            connection.close()

    thread = threading.Thread(target=run, name="audit-verify-range")
    thread.start()
    thread.join()
    send.send(outcome[0] if outcome else "the checking thread ended without a result")
    send.close()
