"""Text for a terminal: long messages wrapped to its width, each problem on lines of its own with its pointer first.

Plain Python (no Django): `benchreg submit`, the runners' --submit, and the registry's commands print through it.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

INDENT = "  "
NARROWEST = 40  # below this, wrapping makes more lines than it saves


def width() -> int | None:
    """The terminal's columns ($COLUMNS first, then the terminal's own size); None when neither stdout nor stderr
    is a terminal: a log, a pipe or a pasted copy keeps each message on one line (a wrapped command or path would
    break when pasted), whatever $COLUMNS says (test runners and CI set it)."""
    if not (sys.stdout.isatty() or sys.stderr.isatty()):
        return None
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return max(int(os.environ["COLUMNS"]), NARROWEST)
    return max(shutil.get_terminal_size((100, 24)).columns, NARROWEST)


def wrap(text: str, *, indent: str = "", hang: str = INDENT, columns: int | None = None) -> str:
    """`text` wrapped to the terminal: its first line starts with `indent`, the lines that follow with `indent` +
    `hang`. Line breaks already in `text` are kept; words (paths, commands) are never broken. Not a terminal (see
    `width`): each line is only indented."""
    columns = columns or width()
    if columns is None:
        return "\n".join(indent + line for line in text.splitlines() or [""])
    return "\n".join(
        textwrap.fill(
            line,
            width=columns,
            initial_indent=indent,
            subsequent_indent=indent + hang,
            break_long_words=False,
            break_on_hyphens=False,
        )
        or indent
        for line in text.splitlines() or [""]
    )


def problem_lines(problems: Iterable[Mapping[str, Any]], *, indent: str = INDENT, columns: int | None = None) -> str:
    """One problem per entry, its JSON pointer first ('/' for the whole document), then its words and its code:
    `  /metrics/throughput: is not a number JSON allows [non-finite-number]`, wrapped under its own words."""
    out = []
    for problem in problems:
        code = f" [{problem['code']}]" if problem.get("code") else ""
        out.append(
            wrap(f"{problem.get('pointer') or '/'}: {problem.get('message')}{code}", indent=indent, columns=columns)
        )
    return "\n".join(out)
