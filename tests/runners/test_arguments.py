"""runners/arguments.py: a registry URL and a port are refused at the command line, in words, before anything is
sent or bound (a URL httpx cannot parse, and a port bind() refuses, were tracebacks)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from runners.arguments import port, server_url
from tests.conftest import ROOT


@pytest.mark.parametrize("text", ["http://127.0.0.1:8000", "https://benchreg.lab", "http://[::1]:8000/", " http://h "])
def test_a_registry_url_is_taken(text: str) -> None:
    assert server_url(text) == text.strip()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("notaurl", "http:// or https:// and a host"),
        ("ftp://x", "http:// or https:// and a host"),
        (":80", "http:// or https:// and a host"),
        ("http://", "http:// or https:// and a host"),
        ("http://[::1", "is not a URL (Invalid IPv6 URL)"),
        ("http://h:99999", "is not a URL (Port out of range"),
    ],
)
def test_what_is_no_registry_url_is_refused_with_what_it_should_be(text: str, words: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=words.replace("(", r"\(").replace(")", r"\)")):
        server_url(text)


def test_an_empty_server_is_not_given_and_the_command_decides() -> None:
    assert server_url("") == "" and server_url("  ") == ""


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("8000", 8000), ("65535", 65535)])
def test_a_port_is_taken(text: str, value: int) -> None:
    assert port(text) == value


@pytest.mark.parametrize("text", ["-1", "65536", "99999", "eighty", "1.5"])
def test_what_is_no_port_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        port(text)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["submit", "x.json", "--server", "http://[::1", "--token", "t"], "argument --server: 'http://[::1' is not"),
        (["serve-simulated", "--port", "99999"], "argument --port: 99999 is not a port"),
    ],
)
def test_through_the_command_a_bad_value_is_a_usage_error_not_a_traceback(args: list[str], words: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr and words in done.stderr, done.stderr
