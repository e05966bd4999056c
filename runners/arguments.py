"""Argument types shared by the commands (argparse `type=`), each refusing a bad value with the value and what it
should be, before anything is sent or bound. Plain Python: the client commands load no Django and no httpx for it."""

from __future__ import annotations

import argparse
import math
import os
from urllib.parse import urlsplit


def server_url(text: str) -> str:
    """A registry's base URL: http or https, a host, a port that is one. An address httpx cannot even parse was a
    traceback (`http://[::1`), and a typo without a scheme was retried five times before it was called unreachable."""
    if not text.strip():  # not given (an empty BENCHREG_SERVER): the command says whether it needs one
        return ""
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018 (raises ValueError on a port that is none)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not a registry URL: http:// or https:// and a host, e.g. "
                                         "https://benchreg.lab")  # fmt: skip
    return text.strip()


def port(text: str) -> int:
    """A TCP port to listen on: 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: 0 (any free one) to 65535")
    return value


class count:
    """A whole number from `low` to `high` (processes, threads, steps, a seed), refused by argparse otherwise, before
    anything runs: 0 workers would serve nothing while saying they serve, and a runner's `x or default` would read 0
    as not given. The bounds are kept on the type, so a test can try each option's edges."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.__name__ = "count"  # argparse names a type by it in its own messages

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if why := self.problem(value):
            raise argparse.ArgumentTypeError(why)
        return value

    def problem(self, value: object) -> str | None:
        """Why `value` (a field of a job's spec, or a parsed argument) is out of this range, or None."""
        if type(value) is not int:
            return f"{value!r} is not a whole number"
        if not self.low <= value <= self.high:
            return f"{value} is not from {self.low:,} to {self.high:,}"
        return None


class number:
    """A finite decimal number from `low` to `high`; with `above`, greater than it instead of at least `low` (a rate,
    a duration, an objective: 0 is none of them). NaN and infinity are refused here, before a measurement: a window
    of NaN seconds never ends, and a NaN objective would only be caught in the finished document."""

    def __init__(self, low: float | None = None, high: float | None = None, *, above: float | None = None) -> None:
        self.low, self.high, self.above = low, high, above
        self.__name__ = "number"

    def __call__(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if why := self.problem(value, text):
            raise argparse.ArgumentTypeError(why)
        return value

    def problem(self, value: object, text: str | None = None) -> str | None:
        """Why `value` (a field of a job's spec, or a parsed argument, written as `text`) is out of this range, or
        None."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{value!r} is not a number"
        said = repr(value) if text is None else text
        if not math.isfinite(value):
            return f"{said!r} is not a finite number" if text is not None else f"{said} is not a finite number"
        if self.above is not None and not value > self.above:
            return f"{said} is not above {self.above:g}"
        if self.low is not None and value < self.low:
            return f"{said} is below {self.low:g}"
        if self.high is not None and value > self.high:
            return f"{said} is above {self.high:g}"
        return None


SEED = count(0, 2**32 - 1)  # numpy's and torch's seeds alike
THREADS = count(1, 4096)
PROCESSES = count(1, 1024)  # ranks on a node, as the distributed runners' own check says
SAMPLES = count(1, 1_000_000)  # a batch, a sequence, a number of tokens
MILLISECONDS = number(above=0, high=86_400_000)  # an objective or a delay: a day at most
SECONDS = number(above=0, high=86_400)
ROW_ID = count(1, 2**63 - 1)  # a run's or a job's id (PostgreSQL's bigint)
REPETITIONS = count(1, 100)
TRAINING_STEPS = count(1, 10_000_000)
RATE = number(above=0, high=1e6)  # queries or requests a second
CONCURRENCY = count(1, 100_000)
LEARNING_RATE = number(above=0, high=1e3)
PEAK_TFLOPS = number(above=0, high=1e9)


def add_registry_server(parser: argparse.ArgumentParser) -> None:
    """--server: the registry a client command talks to (BENCHREG_SERVER, else this machine's default port)."""
    parser.add_argument(
        "--server",
        type=server_url,
        default=os.environ.get("BENCHREG_SERVER", "http://127.0.0.1:8000"),
        help="registry URL (default: BENCHREG_SERVER, else http://127.0.0.1:8000)",
    )
