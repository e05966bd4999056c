"""How far `audit verify` has got, said every few seconds while it checks a large log (a million runs take minutes).

Each part that checks rows (the entries, the runs) is a phase. Rows are counted where they are checked: in this
process and in the processes that check ranges of the table (registry/audit/verify/ranges.py), each of which adds
to its own slot of a counter array in shared memory made before they fork (one writer per slot: no lock, which a
fork could copy held). Only this process speaks, from its own checking loop, so no thread runs beside a fork.

Nothing is said unless `reporting` is given a place to say it; a phase shorter than the interval says nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from multiprocessing.sharedctypes import RawArray
from typing import Any

Say = Callable[[str], None]

_say: Say | None = None
_every = 5.0
_phase: _Phase | None = None
_slot = 0  # this process's counter: 0 in the verifying process, i + 1 in the process checking range i
_SURE = 0.05  # the share of a phase's rows checked before the time left is guessed
_SLOTS = 64  # counters: far more than the verifying process and its range processes (ranges.MAX_PROCESSES)


class _Phase:
    def __init__(self, name: str, total: int) -> None:
        self.name, self.total = name, total
        self.counts: Any = RawArray("q", _SLOTS)  # shared memory: a process forked after this writes to it too
        self.started = self.said = time.monotonic()
        self.said_done = -1  # the count the last line said

    def done(self) -> int:
        return sum(self.counts)

    def line(self, now: float) -> str:
        done, elapsed = self.done(), now - self.started
        self.said_done = done
        share = f" ({100 * done / self.total:.0f}%)" if self.total else ""
        left = ""
        if _SURE * self.total <= done < self.total:  # from too few rows, the start's waits would weigh too much
            left = f", about {_duration(elapsed * (self.total - done) / done)} left"
        return f"audit verify: {self.name} {done:,} of {self.total:,}{share} in {_duration(elapsed)}{left}"


@contextlib.contextmanager
def reporting(say: Say | None, every: float = 5.0) -> Iterator[None]:
    """Within: each phase's progress said through `say` every `every` seconds (None: nothing said)."""
    global _say, _every
    _say, _every = say, every
    try:
        yield
    finally:
        _say = None


@contextlib.contextmanager
def phase(name: str, total: Callable[[], int]) -> Iterator[None]:
    """Within: rows `counted` are rows of this phase, of `total()` (asked only when progress is said)."""
    global _phase
    if _say is None:
        yield
        return
    _phase = _Phase(name, total())
    try:
        yield
        now = time.monotonic()
        # a phase that took a while says that it is through, unless its last line said so already
        if now - _phase.started >= _every and _phase.said_done != _phase.done():
            _say(_phase.line(now))
    finally:
        _phase = None


def in_range(index: int) -> None:
    """In the process checking range `index` (ranges.py): its rows go to that range's slot."""
    global _slot
    _slot = index + 1


def counted(rows: int) -> None:
    """`rows` more rows checked in this process; in the verifying process, say how far the phase has got when the
    interval has passed since it last did."""
    current = _phase
    if current is None or not rows:
        return
    current.counts[_slot] += rows
    if _slot == 0 and _say is not None and (now := time.monotonic()) - current.said >= _every:
        current.said = now
        _say(current.line(now))


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, seconds = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"
