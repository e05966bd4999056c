"""Witnesses for the witnessed-log tests and benchmarks: a signing key on disk, as `benchreg witness` reads it, and
`benchreg witness serve` started as a process of its own (its own key file and state), as on another machine."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from protocol.cosignature import cosigner_key, parse_cosigner_key
from verifier.witness import write_private_key_file

ROOT = Path(__file__).resolve().parent.parent


def new_key(directory: Path, name: str) -> tuple[Path, str]:
    """A fresh cosigner key for witness `name`, written under `directory`; returns its path and verifier key."""
    text = cosigner_key(name, Ed25519PrivateKey.generate())
    path = directory / f"{name.replace('/', '_')}.key"
    write_private_key_file(path, text)
    return path, parse_cosigner_key(text).public.vkey


@dataclass(frozen=True)
class WitnessProcess:
    url: str
    vkey: str
    process: subprocess.Popen[str]

    @property
    def setting(self) -> str:
        return f"{self.url} {self.vkey}"


@contextmanager
def witness(directory: Path, name: str, log_vkey: str) -> Iterator[WitnessProcess]:
    directory.mkdir(parents=True, exist_ok=True)
    key, vkey = new_key(directory, name)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}  # a witness has no database
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "registry.cli",
            "witness",
            "serve",
            "--key",
            str(key),
            "--log-key",
            log_vkey,
            "--state",
            str(directory / f"{key.stem}.state.json"),
            "--listen",
            "127.0.0.1:0",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if " on http://" not in line:
            raise RuntimeError(f"the witness did not start: {line!r}")
        yield WitnessProcess(line.rsplit(" on ", 1)[1].strip(), vkey, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
