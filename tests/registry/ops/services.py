"""Private services for fault tests: a PostgreSQL cluster and a registry server process of their own, so a test
can stop and restart them without touching the machine's shared servers."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(command: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: run them as the `postgres` user then (runuser)."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


class PrivateCluster:
    """initdb + pg_ctl in a temporary directory, on its own port, trust authentication for user postgres."""

    def __init__(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found:
            raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
        self.bin = Path(found[-1]).parent
        # Not under pytest's tmp_path: as root that lies in a 0700 folder the postgres user cannot enter.
        self.folder = Path(tempfile.mkdtemp(prefix="benchreg-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(
            [str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]
        )

    @staticmethod
    def _run(command: list[str], check: bool = True) -> None:
        done = subprocess.run(_as_postgres(command), capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stdout}{done.stderr}")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def database_url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "-l",
                str(self.folder / "log"),
                "start",
            ]
        )

    def stop(self) -> None:
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"], check=False)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


class RegistryServer:
    """The registry behind gunicorn (2 workers), in a process of its own, on a free port."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    def manage(self, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True, text=True
        ).stdout

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "registry.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "2",
                "--timeout",
                "60",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise RuntimeError("the registry server did not start within 120 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
