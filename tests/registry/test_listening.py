"""`--bind` of `benchreg serve` and `benchreg demo`: read as an address and tried before any work
(registry/listening.py), through the command as a user types it."""

from __future__ import annotations

import argparse
import socket
from collections.abc import Iterator

import pytest

from registry.listening import bind_address, listen_problem, url
from tests.registry.test_cli import benchreg


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ("127.0.0.1:8000", "127.0.0.1:8000"),
        ("localhost", "localhost:8000"),
        (" 0.0.0.0:8080 ", "0.0.0.0:8080"),
        ("[::1]:9000", "[::1]:9000"),
        ("[::1]", "[::1]:8000"),
        ("unix:/run/benchreg.sock", "unix:/run/benchreg.sock"),
    ],
)
def test_an_address_is_read_as_gunicorn_takes_it(given: str, read: str) -> None:
    assert bind_address(given) == read


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("nonsense:abc", "'abc' is not a port (1 to 65535)"),
        ("127.0.0.1:0", "'0' is not a port"),
        ("127.0.0.1:65536", "'65536' is not a port"),
        ("127.0.0.1:٣٠", "is not a port"),  # digits, but not ASCII ones
        (":8000", "names no host: 127.0.0.1:8000 (this machine only)"),
        ("::1", "write an IPv6 address in brackets"),
        ("[::1:8000", "is not [IPv6]:PORT"),
        ("[::1]8000", "is not [IPv6]:PORT"),
        ("unix:", "unix: needs a socket path"),
    ],
)
def test_what_is_not_an_address_is_refused_in_words(given: str, said: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        bind_address(given)
    assert said in str(refused.value)


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def test_a_port_in_use_an_address_elsewhere_and_a_free_port(busy_port: int) -> None:
    said = listen_problem(f"127.0.0.1:{busy_port}") or ""
    assert said.startswith(f"cannot listen on 127.0.0.1:{busy_port}: the port is in use"), said
    said = listen_problem("192.0.2.1:8000") or ""  # TEST-NET-1: documentation only, no machine's own address
    assert "this machine has no such address" in said, said
    with socket.create_server(("127.0.0.1", 0)) as server:
        free = server.getsockname()[1]
    assert listen_problem(f"127.0.0.1:{free}") is None
    assert listen_problem("unix:/nowhere/x.sock") is None  # gunicorn's own words for a socket path
    assert url("[::1]:9000") == "http://[::1]:9000/" and url("unix:/run/b.sock") == "unix:/run/b.sock"


def test_serve_and_the_demo_refuse_a_port_in_use_in_one_line_before_any_work(tmp_path, busy_port: int) -> None:
    """gunicorn retried five times, with a timestamped log line each, then exited; the demo said so only after its
    minute of setting up and measuring."""
    for command in ("serve", "demo"):
        done = benchreg(command, "--bind", f"127.0.0.1:{busy_port}", data=tmp_path / command)
        assert done.returncode == 1, done.stderr
        assert done.stderr.count("\n") == 1 and "the port is in use" in done.stderr, done.stderr
        assert done.stdout == ""  # the demo has not started its first step: no database made
        assert not (tmp_path / command / "benchreg.sqlite3").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--workers", "0"), "argument --workers: 0 is not from 1 to 256"),  # served nothing, said it served
        (("--threads", "many"), "argument --threads: 'many' is not a whole number"),
        (("--bind", "127.0.0.1:http"), "argument --bind: '127.0.0.1:http': 'http' is not a port"),  # a traceback
    ],
)
def test_serve_refuses_bad_arguments_in_words(tmp_path, args: tuple[str, ...], said: str) -> None:
    done = benchreg("serve", *args, data=tmp_path)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
