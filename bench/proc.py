"""Processes as Linux's /proc tells them, for the benches that count CPU or processes: a helper, not a bench.

`/proc/PID/stat` holds the command name in parentheses (which may hold spaces and parentheses of its own), then the
fields proc(5) numbers from 3; `stat_fields` gives those, so field N of proc(5) is index N - 3 (ppid 1, utime 11, stime
12, cutime 13, cstime 14, num_threads 17). Each function raises OSError for a process that has ended, or has none.
"""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")  # the unit of the times in stat


def stat_fields(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds `pid` has spent (not its children's)."""
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / TICKS


def parents() -> dict[int, int]:
    """Every live process and its parent (those that end while they are read are left out)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = int(stat_fields(entry.name)[1])
            except OSError:  # ended meanwhile
                continue
    return found
