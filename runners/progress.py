"""Progress reporting: a small Protocol, a silent implementation and a rich one.

The measurement code only calls `stage`, `advance` and `note`; whether anything is drawn is the caller's
choice (`execute(spec, progress=True)` or the CLI), so tests and agents stay quiet.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class Reporter(Protocol):
    """Where the runner says what it is doing."""

    def stage(self, label: str, total: float | None) -> None:
        """Begin a stage (warm-up, a repetition); `total` in the unit `advance` counts, None if unknown."""

    def advance(self, completed: float, info: str = "") -> None:
        """Set the stage's progress to `completed` and show `info` beside it."""

    def note(self, text: str) -> None:
        """A one-line message (steady state reached or not, where a file went)."""


class Silent:
    """A Reporter that reports nothing."""

    def stage(self, label: str, total: float | None) -> None:
        return None

    def advance(self, completed: float, info: str = "") -> None:
        return None

    def note(self, text: str) -> None:
        return None


class RichReporter:
    """A Reporter drawing one rich progress bar per stage; use it as a context manager."""

    def __init__(self, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("{task.description:<28}"),
            BarColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> RichReporter:
        self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._finish()
        self._progress.stop()

    def stage(self, label: str, total: float | None) -> None:
        self._finish()
        self._task = self._progress.add_task(label, total=total, info="")

    def _finish(self) -> None:
        """The stage before stops its clock: each bar's time is its own stage's, not the time since it began."""
        if self._task is not None:
            self._progress.stop_task(self._task)

    def advance(self, completed: float, info: str = "") -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=completed, info=info)

    def note(self, text: str) -> None:
        self._progress.console.print(text)
