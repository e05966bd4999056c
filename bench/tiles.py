"""Serving the audit log as C2SP tlog-tiles, and the witnesses' cosigning round trip.

1. Requests per second for a full hash tile (8192 bytes) from `benchreg serve` (gunicorn), against the same server's
   whitenoise answer for a static file of the same size (the baseline: what serving 8 KiB costs without the app).
2. The cosigning round trip: sign a checkpoint and get it cosigned by one, then three `benchreg witness` processes
   (each its own process on loopback), median of several rounds.

Needs DATABASE_URL (PostgreSQL): a scratch database is created and dropped. `python -m bench.tiles --help`;
`--smoke` is CI's check that it runs.
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

import httpx

from devtools import scratch

ROOT = Path(__file__).resolve().parents[1]
HOST = {"Host": "localhost"}


def _rate(url: str, seconds: float, clients: int) -> tuple[float, int]:
    """Requests/s over `seconds` with `clients` keep-alive connections; returns (rate, bytes of one answer)."""
    counts = [0] * clients
    size = [0]
    stop = time.perf_counter() + seconds

    def loop(i: int) -> None:
        with httpx.Client(headers=HOST) as client:
            while time.perf_counter() < stop:
                response = client.get(url)
                if response.status_code != 200:
                    raise RuntimeError(f"{url}: HTTP {response.status_code} {response.text[:200]}")
                size[0] = len(response.content)
                counts[i] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - start), size[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, timeout: float = 300) -> None:  # a busy host starts gunicorn slowly
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, headers=HOST, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not come up")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=None, help="log size (default 4096: 16 full tiles)")
    parser.add_argument("--seconds", type=float, default=None, help="measuring time per URL (default 5)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent keep-alive clients")
    parser.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    parser.add_argument("--rounds", type=int, default=None, help="cosigning rounds per witness count (default 20)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="1,024 entries, 0.5 s per URL, 2 rounds, 1 worker: CI's check that the bench runs",
    )
    parser.add_argument("--scratch", default="bench_tiles", help="scratch database name (created and dropped)")
    args = parser.parse_args()
    args.entries = args.entries or (1024 if args.smoke else 4096)
    args.seconds = args.seconds or (0.5 if args.smoke else 5.0)
    args.rounds = args.rounds or (2 if args.smoke else 20)
    if args.entries < 1024:
        parser.error("--entries: at least 1024, so that the full tile it times (tile/0/003) exists")
    args.port = args.port or _free_port()
    workers = 1 if args.smoke else 2  # gunicorn workers serving the tile and the static file
    admin_url = os.environ.get("DATABASE_URL")
    if not admin_url or not admin_url.startswith("postgres"):
        sys.exit("set DATABASE_URL=postgres://... (a scratch database is created next to it)")

    name = args.scratch
    data = Path(tempfile.mkdtemp(prefix="bench-tiles-"))
    env = {
        **os.environ,
        "DATABASE_URL": scratch.recreate(admin_url, name),
        "BENCHREG_DATA_DIR": str(data),
        "BENCHREG_THROTTLE_AUDIT": "100000000/min",
        "BENCHREG_LOG_ORIGIN": "bench.local/audit",
        "DJANGO_SETTINGS_MODULE": "registry.settings",
    }
    os.environ.update(env)
    server = None
    witnesses = ExitStack()  # the witness processes, stopped on the way out
    try:
        import django

        django.setup()  # os.environ holds env: the scratch database and data directory
        from django.conf import settings
        from django.core.management import call_command

        call_command("migrate", verbosity=0)  # in this process: a second interpreter would start Django again

        from devtools.witnesses import witness
        from protocol.audit_entries import entry_text
        from protocol.transparency import leaf_hash
        from registry.audit.keys import checkpoint_key
        from registry.choices import CheckpointReason
        from registry.models import AuditEntry, AuditHead
        from registry.services.audit import checkpoint_sign
        from registry.services.witnesses import checkpoint_cosign

        now = datetime.now(UTC)
        rows = []
        for seq in range(args.entries):
            text = entry_text(seq=seq, time=now, kind="job.state", subject=f"job:{seq}", payload={"job": seq})
            rows.append(
                AuditEntry(
                    seq=seq,
                    created_at=now,
                    actor="bench",
                    kind="job.state",
                    subject=f"job:{seq}",
                    entry=text.decode(),
                    leaf_hash=leaf_hash(text).hex(),
                )
            )
        AuditEntry.objects.bulk_create(rows, batch_size=5000)
        AuditHead.objects.filter(id=1).update(size=args.entries)
        checkpoint_sign(reason=CheckpointReason.MANUAL)
        static = Path(settings.STATIC_ROOT) / "bench-8192.bin"
        static.write_bytes(os.urandom(8192))

        # -- 1. tiles vs a static file, same gunicorn ---------------------------------------------------------
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "registry.cli",
                "serve",
                "--bind",
                f"127.0.0.1:{args.port}",
                "--workers",
                str(workers),
                "--threads",
                "4",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        base = f"http://127.0.0.1:{args.port}"
        tile = f"{base}/api/v1/audit/log/tile/0/003"
        _wait(tile)
        static_url = f"{base}/static/{static.name}"
        _rate(tile, min(1.0, args.seconds), args.clients)  # warm both
        _rate(static_url, min(1.0, args.seconds), args.clients)
        tile_rate, tile_bytes = _rate(tile, args.seconds, args.clients)
        static_rate, static_bytes = _rate(static_url, args.seconds, args.clients)
        print(
            f"entries={args.entries} clients={args.clients} seconds={args.seconds} "
            f"(gunicorn {workers} worker(s) x 4 threads, loopback)"
        )
        print(f"hash tile tile/0/003 ({tile_bytes} B):   {tile_rate:8.0f} req/s")
        print(f"static file ({static_bytes} B, whitenoise): {static_rate:8.0f} req/s")
        print(f"ratio tile / static: {tile_rate / static_rate:.2f}")
        server.terminate()
        server.wait(timeout=30)
        server = None

        # -- 2. cosigning round trip --------------------------------------------------------------------------
        log_vkey = checkpoint_key().vkey
        configured = []
        for i in range(3):
            started = witnesses.enter_context(witness(data / "witnesses", f"bench.local/w{i}", log_vkey))
            configured.append(started.setting)
        seq = args.entries
        for count in (1, 3):
            settings.BENCHREG_WITNESSES = configured[:count]
            times = []
            for _ in range(args.rounds):
                text = entry_text(seq=seq, time=now, kind="job.state", subject=f"job:{seq}", payload={"job": seq})
                AuditEntry.objects.create(
                    seq=seq,
                    created_at=now,
                    actor="bench",
                    kind="job.state",
                    subject=f"job:{seq}",
                    entry=text.decode(),
                    leaf_hash=leaf_hash(text).hex(),
                )
                seq += 1
                AuditHead.objects.filter(id=1).update(size=seq)
                start = time.perf_counter()
                checkpoint = checkpoint_sign(reason=CheckpointReason.REPORT)  # REPORT: no queued task, we ask
                cosigned, problems = checkpoint_cosign(checkpoint=checkpoint)
                times.append(time.perf_counter() - start)
                if cosigned != count:
                    raise RuntimeError(f"{cosigned} cosignatures: {problems}")
            p90 = sorted(times)[math.ceil(len(times) * 0.9) - 1]  # nearest rank
            print(
                f"sign + cosign with {count} witness(es): median {statistics.median(times) * 1000:.1f} ms, "
                f"p90 {p90 * 1000:.1f} ms over {args.rounds} rounds"
            )
    finally:
        if server is not None:
            server.terminate()
        witnesses.close()
        from django.db import connections

        connections.close_all()
        scratch.drop(admin_url, name)


if __name__ == "__main__":
    main()
