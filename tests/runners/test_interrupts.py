"""A Ctrl-C whose exception is lost on the way up still stops the command (runners.interrupts).

The losses are Python's own, not made up: on 3.11 a KeyboardInterrupt raised while a class is created comes out as
a RuntimeError ("Error calling __set_name__"), which a library's `except Exception` swallows. Each test sends a
real SIGINT to this process with benchreg's handler installed, at a point where that happens."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from runners import interrupts, measure
from runners.measure import Policy

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="signal handlers are set in the main thread"
)


@pytest.fixture(autouse=True)
def _handler() -> Iterator[None]:
    before = signal.signal(signal.SIGINT, interrupts.on_sigint)
    interrupts.forget()
    yield
    signal.signal(signal.SIGINT, before)
    interrupts.forget()


class _CtrlCWhileNamed:
    """A descriptor whose __set_name__ is where the Ctrl-C lands (as in a module being imported)."""

    def __set_name__(self, owner: type, name: str) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        signal.pthread_sigmask(signal.SIG_BLOCK, set())  # a call into C: the handler runs by now


def import_that_swallows() -> None:
    """A library's optional import: on any error it goes on without the feature."""
    try:

        class Optional:  # created for its side effect: the descriptor is named
            field = _CtrlCWhileNamed()

    except Exception as exc:
        assert isinstance(exc, RuntimeError) and isinstance(exc.__cause__, KeyboardInterrupt), exc  # Python's loss


def test_a_ctrl_c_lost_inside_a_step_stops_it_when_the_step_ends_and_is_named():
    after: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupts.doing("measuring", left="nothing was written"):
        import_that_swallows()
        after.append("the step went on")  # what the swallowing library did: it went on
    assert interrupts.received()
    assert interrupts.interrupted_line() == "interrupted: measuring; nothing was written"


def test_a_ctrl_c_lost_before_a_measurement_stops_it_at_its_first_iteration():
    import_that_swallows()
    assert interrupts.received()
    calls: list[int] = []

    def timed() -> float:
        calls.append(1)
        return 1.0

    with pytest.raises(KeyboardInterrupt):
        measure.measure_repetition(timed, Policy(), min_seconds=60.0)
    with pytest.raises(KeyboardInterrupt):
        measure.warm_up(timed, Policy())
    assert len(calls) <= 2  # the warm-up's two sizing calls at most; no repetition ran


def test_without_a_ctrl_c_nothing_changes():
    with interrupts.doing("measuring"):
        pass
    assert not interrupts.received()
    assert interrupts.interrupted_line() == "interrupted"


class _CtrlCOnceSaid:
    """stderr that takes a Ctrl-C as soon as `words` are written: where a user (or a test) watching the output
    presses it first."""

    def __init__(self, words: str) -> None:
        self.words = words

    def write(self, text: str) -> int:
        if self.words in text:
            os.kill(os.getpid(), signal.SIGINT)
            signal.pthread_sigmask(signal.SIG_BLOCK, set())  # a call into C: the handler runs by now
        return len(text)

    def flush(self) -> None:
        pass


def test_a_ctrl_c_as_soon_as_a_run_says_what_it_measures_names_that_run(monkeypatch, tmp_path):
    from runners import cli

    monkeypatch.setattr("sys.stderr", _CtrlCOnceSaid("measuring inference"))
    argv = ["run", "inference", "--workload", "mlp-classifier", "--backend", "numpy", "--out", str(tmp_path)]
    with pytest.raises(KeyboardInterrupt):
        cli.main(argv)
    assert interrupts.interrupted_line().startswith("interrupted: measuring inference mlp-classifier batch")
    assert not list(tmp_path.glob("*.json"))


def test_a_ctrl_c_as_soon_as_the_demo_says_its_step_names_that_step():
    from registry.management.commands.demo import Steps

    said = _CtrlCOnceSaid("[1/2] loading")
    steps = Steps(said, total=2)
    with pytest.raises(KeyboardInterrupt), steps.step("loading the examples"):
        pass
    assert interrupts.interrupted_line().startswith("interrupted: step 1 of 2 (loading the examples)")
