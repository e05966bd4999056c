"""The embedded default (SQLite, no broker, no other service) renders reports in a worker process of its own:
`benchreg serve` starts one beside gunicorn over kombu's filesystem transport, so a report request is answered
at once as queued and the PDF is ready a little later, never rendered inside the web request."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import protocol
from tests.registry.ops.services import ROOT, free_port
from tests.registry.reports.conftest import PRICES, SIZING, fleet_documents

pytestmark = [pytest.mark.slow]


def test_benchreg_serve_renders_reports_in_its_own_worker_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL",
                                                            "BENCHREG_EMBEDDED_WORKER", "DJANGO_SETTINGS_MODULE")}
    env.update(BENCHREG_DATA_DIR=str(tmp_path), BENCHREG_THROTTLE_USER="100000/min")
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    token = subprocess.run([*manage, "create_token", "--username", "lab-embedded", "--scopes", "submit,read",
                            "--grant-role"], cwd=ROOT, env=env, check=True, capture_output=True,
                           text=True).stdout.strip().splitlines()[-1]
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "registry.cli", "serve", "--bind", f"127.0.0.1:{port}",
                               "--workers", "1"], cwd=ROOT, env=env, start_new_session=True,
                              stdout=(tmp_path / "serve.log").open("wb"), stderr=subprocess.STDOUT)
    base, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Token {token}"}
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        with httpx.Client(base_url=base, headers=headers, timeout=120) as api:
            runs = [api.post("/api/v1/submissions", content=protocol.canonicalize(doc),
                             headers={"Content-Type": "application/json"}).json()["id"]
                    for doc in fleet_documents(2)]
            comparison = api.post("/api/v1/comparisons", json={"runs": runs, "prices": PRICES, "sizing": SIZING})
            assert comparison.status_code == 201, comparison.text
            answer = api.post("/api/v1/reports", json={"comparison": comparison.json()["id"], "title": "Embedded",
                                                       "decision": "d"})
            assert answer.status_code == 202 and answer.json()["status"] == "queued", answer.text
            deadline, report = time.monotonic() + 240, answer.json()
            while report["status"] in ("queued", "rendering") and time.monotonic() < deadline:
                time.sleep(1)
                report = api.get(f"/api/v1/reports/{report['id']}").json()
            assert report["status"] == "ready", (report, (tmp_path / "serve.log").read_text()[-3000:])
            pdf = api.get(f"/api/v1/reports/{report['id']}/pdf")
            assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
