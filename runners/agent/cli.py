"""`benchreg agent enroll|start|status`: enrol this machine, run its worker, show what the registry knows.

benchreg agent enroll --server URL --token ENROLMENT_TOKEN [--name NAME] [--broker URL] [--config PATH]
benchreg agent start [--config PATH] [--loglevel info]
benchreg agent status [--config PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

from runners.arguments import server_url

from ..client import RegistryClient, RegistryError
from ..environment import capture
from . import credentials
from .credentials import Credential


def _default_name() -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", socket.gethostname().lower()).strip("-.") or "agent"
    return name[:60]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="benchreg agent", description="Run this machine as an enrolled agent.")
    sub = top.add_subparsers(dest="command", required=True)
    enroll = sub.add_parser("enroll", help="register this machine with a single-use enrolment token")
    enroll.add_argument(
        "--server", type=server_url, required=True, help="the registry's base URL, e.g. https://benchreg.lab"
    )
    enroll.add_argument("--token", required=True, help="the enrolment token an admin created")
    enroll.add_argument("--name", default=_default_name(), help="agent name (default: the host name)")
    enroll.add_argument("--broker", help="broker URL as this machine reaches it (default: what the registry says)")
    for name, sub_parser in (
        ("enroll", enroll),
        ("start", sub.add_parser("start", help="run the Celery worker for this agent")),
        ("status", sub.add_parser("status", help="this agent as the registry sees it")),
    ):
        sub_parser.add_argument(
            "--config",
            type=Path,
            default=None,
            help=f"credential file (default: ${credentials.CONFIG_ENV} or ~/.config/benchreg/agent.json)",
        )
        if name == "start":
            sub_parser.add_argument(
                "--loglevel", default="info", help="the Celery worker's log level, e.g. debug, warning (default info)"
            )
    return top


def _enrolment(args: argparse.Namespace) -> tuple[int, Any]:
    """(0, the registry's answer to the enrolment), or (the exit status, None) when it refused or was away (said
    on stderr)."""
    body = {"token": args.token, "name": args.name, "inventory": capture()}
    with RegistryClient(args.server, args.token) as client:
        try:
            response = client.request("POST", "/api/v1/agents/enroll", json=body)
        except RegistryError as exc:
            print(f"benchreg agent enroll: {exc}", file=sys.stderr)
            return 2, None
    answer = response.json() if response.headers.get("content-type", "").endswith("json") else {}
    if response.status_code != 201:
        print(
            f"benchreg agent enroll: refused ({response.status_code}): {answer.get('detail', response.text)}",
            file=sys.stderr,
        )
        return 1, None
    return 0, answer


def enroll(args: argparse.Namespace) -> int:
    path = args.config or credentials.default_path()
    status, answer = _enrolment(args)
    if status:
        return status
    broker = args.broker or answer.get("broker_url") or ""
    credential = Credential(
        server=args.server,
        token=answer["token"],
        agent=answer["agent"]["name"],
        agent_id=answer["agent"]["id"],
        queue=answer["agent"]["queue"],
        broker_url=broker,
    )
    credentials.save(credential, path)
    print(f"enrolled as agent {credential.agent} (queue {credential.queue}); credential saved to {path} (0600)")
    if not broker:
        print("no broker URL known: pass --broker or set BENCHREG_AGENT_BROKER_URL before `benchreg agent start`")
    return 0


def worker_argv(credential: Credential, loglevel: str = "info") -> list[str]:
    """The Celery worker command line for this agent: its own queue, one job at a time."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "runners.agent.worker",
        "worker",
        "--queues",
        credential.queue,
        "--hostname",
        f"{credential.agent}@%h",
        "--pool",
        "prefork",
        "--concurrency",
        "1",
        "--prefetch-multiplier",
        "1",
        "--without-gossip",
        "--without-mingle",
        "--loglevel",
        loglevel,
    ]


def start(args: argparse.Namespace) -> int:
    path = (args.config or credentials.default_path()).resolve()
    credential = credentials.load(path)
    if not credential.broker_url:
        print("benchreg agent start: no broker URL: set BENCHREG_AGENT_BROKER_URL", file=sys.stderr)
        return 2
    os.environ[credentials.CONFIG_ENV] = str(path)
    os.environ.pop("DJANGO_SETTINGS_MODULE", None)  # set by the `benchreg` entry point; the agent has no Django
    argv = worker_argv(credential, args.loglevel)
    os.execv(argv[0], argv)  # noqa: S606 - the worker replaces this process: signals reach Celery directly


def status(args: argparse.Namespace) -> int:
    credential = credentials.load(args.config)
    with RegistryClient(credential.server, credential.token) as client:
        try:
            response = client.request("GET", "/api/v1/agents/me")
        except RegistryError as exc:
            print(f"benchreg agent status: {exc}", file=sys.stderr)
            return 2
    if response.status_code != 200:
        print(f"benchreg agent status: {response.status_code}: {response.text[:300]}", file=sys.stderr)
        return 1
    print(json.dumps(response.json(), indent=2))
    return 0


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        return {"enroll": enroll, "start": start, "status": status}[args.command](args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"benchreg agent {args.command}: {exc}", file=sys.stderr)
        return 2
