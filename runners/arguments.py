"""Argument types shared by the commands (argparse `type=`), each refusing a bad value with the value and what it
should be, before anything is sent or bound. Plain Python: the client commands load no Django and no httpx for it."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
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


def count(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high` (processes, threads): 0 workers served nothing while saying it served."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not from {low} to {high}")
        return value

    return parse


def add_registry_server(parser: argparse.ArgumentParser) -> None:
    """--server: the registry a client command talks to (BENCHREG_SERVER, else this machine's default port)."""
    parser.add_argument(
        "--server",
        type=server_url,
        default=os.environ.get("BENCHREG_SERVER", "http://127.0.0.1:8000"),
        help="registry URL (default: BENCHREG_SERVER, else http://127.0.0.1:8000)",
    )
