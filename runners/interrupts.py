"""What a Ctrl-C interrupted, for the one line `benchreg` prints as it stops ("interrupted: ...").

A long step says what it does with `doing(what, left=...)`: when a KeyboardInterrupt passes through it, it records
its words, and `left` (what of the step is kept, or that nothing of it is). The line names the steps from the
outermost to the innermost and says what is left of the innermost that stated it. Plain Python: the runners, the
demo and `benchreg serve` all use it; nothing here catches the interrupt, so it stops the command as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_interrupted: list[tuple[str, str]] = []  # (what, left), innermost first: appended as the interrupt goes up


@contextmanager
def doing(what: str, *, left: str = "") -> Iterator[None]:
    """Run the block; if Ctrl-C interrupts it, remember that it was `what`, and `left`."""
    try:
        yield
    except KeyboardInterrupt:
        _interrupted.append((what, left))
        raise


def interrupted_line() -> str:
    """'interrupted', or 'interrupted: outer > inner; what is left' once steps said what they were doing."""
    if not _interrupted:
        return "interrupted"
    steps = " > ".join(what for what, _ in reversed(_interrupted))
    left = next((left for _, left in _interrupted if left), "")
    return f"interrupted: {steps}" + (f"; {left}" if left else "")


def forget() -> None:
    """Start afresh (a test, or a process that goes on after an interrupt it handled)."""
    _interrupted.clear()
