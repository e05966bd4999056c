"""Where `benchreg serve` and `benchreg demo` listen: `--bind` read as an address, and tried before any work starts.

Left to gunicorn, a port in use was five retries of its timestamped log and exit status 1 (after the demo's minute
of setting up), an address this machine lacks the same, and a port that is not a number a traceback.
"""

from __future__ import annotations

import argparse
import errno
import socket

DEFAULT_PORT = 8000

_WHY = {
    errno.EADDRINUSE: "the port is in use (another `benchreg serve`, or another server, listens there): stop it, or "
    "choose another port with --bind HOST:PORT",
    errno.EADDRNOTAVAIL: "this machine has no such address (127.0.0.1 is this machine only, 0.0.0.0 every interface)",
    errno.EACCES: "permission denied (a port below 1024 needs privileges: choose one from 1024)",
}


def bind_address(text: str) -> str:
    """An argparse type: HOST, HOST:PORT, [IPv6]:PORT or unix:PATH, as gunicorn takes them (the port 8000 when none is
    given)."""
    text = text.strip()
    if text.startswith("unix:"):
        if not text[len("unix:") :]:
            raise argparse.ArgumentTypeError("unix: needs a socket path, e.g. unix:/run/benchreg.sock")
        return text
    host, port = _split(text)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _split(text: str) -> tuple[str, int]:
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise argparse.ArgumentTypeError(f"{text!r} is not [IPv6]:PORT, e.g. [::1]:8000")
        port = rest[1:] if rest else str(DEFAULT_PORT)
    elif text.count(":") > 1:
        raise argparse.ArgumentTypeError(f"{text!r}: write an IPv6 address in brackets, e.g. [::1]:8000")
    else:
        host, colon, port = text.partition(":")
        port = port if colon else str(DEFAULT_PORT)
    if not host:
        raise argparse.ArgumentTypeError(
            f"{text!r} names no host: 127.0.0.1:{DEFAULT_PORT} (this machine only) or 0.0.0.0:{DEFAULT_PORT} (every "
            "interface)"
        )
    if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: {port!r} is not a port (1 to 65535)")
    return host, int(port)


def url(bind: str) -> str:
    """The address a browser opens for `bind` (a value bind_address returned)."""
    if bind.startswith("unix:"):
        return bind
    return f"http://{bind}/"


def listen_problem(bind: str) -> str | None:
    """Why this process could not listen on `bind` (a value bind_address returned), in words; None when it can.
    Tried by binding a socket the way gunicorn does (SO_REUSEADDR, so a port a stopped server left in TIME_WAIT is
    free) and closing it: gunicorn binds a moment later, and says so itself should the port be taken meanwhile."""
    if bind.startswith("unix:"):
        return None
    host, port = _split(bind)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        return f"cannot listen on {bind}: no such host ({exc.strerror})"
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return f"cannot listen on {bind}: {_WHY.get(exc.errno or 0, exc.strerror)}"
    return None
