"""What a Ctrl-C interrupted, for the one line `benchreg` prints as it stops ("interrupted: ...").

A long step says what it does with `doing(what, left=...)`: when a KeyboardInterrupt passes through it, it records
its words, and `left` (what of the step is kept, or that nothing of it is). The line names the steps from the
outermost to the innermost and says what is left of the innermost that stated it. Plain Python: the runners, the
demo and `benchreg serve` all use it; nothing here catches the interrupt, so it stops the command as before.

A Ctrl-C is also remembered once it arrives (`on_sigint`, the handler `benchreg` installs), because the exception
it raises can be lost on the way up: raised while a class is being created, Python 3.11 turns it into a RuntimeError
("Error calling __set_name__"), which a library's `except Exception` may then swallow; raised in a finalizer or a
ctypes callback, it is printed and dropped. Seen in CI on a busy host: a runner interrupted while it imported its
backend measured all its repetitions and ended with status 0. So a step that ends normally after a Ctrl-C raises
it again (`doing`), long loops look between iterations (`check`), and `benchreg` ends with 130 whatever came back.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_interrupted: list[tuple[str, str]] = []  # (what, left), innermost first: appended as the interrupt goes up
_received = threading.Event()  # a Ctrl-C arrived (set by on_sigint), whether or not its exception got through


def on_sigint(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler: remember the Ctrl-C, then raise KeyboardInterrupt as Python's own handler does."""
    _received.set()
    raise KeyboardInterrupt


def received() -> bool:
    """A Ctrl-C has arrived since the process started (or since `forget`)."""
    return _received.is_set()


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C arrived and was lost on the way: between the iterations of a long loop."""
    if _received.is_set():
        raise KeyboardInterrupt


@contextmanager
def doing(what: str, *, left: str = "") -> Iterator[None]:
    """Run the block; if Ctrl-C interrupts it, remember that it was `what`, and `left`."""
    try:
        yield
        check()  # the block ended normally, yet a Ctrl-C arrived inside it: its result does not stand
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
    _received.clear()
