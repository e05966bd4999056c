"""`benchreg admin ...`: what an admin does in the browser, done by automation with an `admin`-scoped token.

  benchreg admin enrolment-token create [--expires 1h] [--note TEXT]   prints the single-use token, alone
  benchreg admin agent list | revoke AGENT                             AGENT: id or name
  benchreg admin run withdraw RUN --reason TEXT
  benchreg admin job cancel JOB

Talks to a registry over its API (--server/--token or BENCHREG_SERVER/BENCHREG_TOKEN), like `benchreg submit`;
needs no database. The registry's policy decides: a token without the `admin` right is refused (403), and the
problem's detail is printed. Exit status: 0 done, 1 refused, 2 unreachable.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

import httpx

from runners.arguments import ROW_ID, add_registry_server

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Refused(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("detail") or f"HTTP {status}")
        self.status, self.body = status, body

    def line(self) -> str:
        errors = "".join(f"\n  {e.get('pointer', '')}: {e.get('message', '')}" for e in self.body.get("errors", []))
        return f"refused ({self.status} {self.body.get('code', 'error')}): {self}{errors}"


def seconds(text: str) -> int:
    """'90s', '15m', '1h', '2d' (or plain seconds)."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhd]?)\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"a duration like 30m, 1h or 2d, not {text!r}")
    return int(match.group(1)) * UNITS[match.group(2) or "s"]


class AdminClient:
    def __init__(self, server: str, token: str, transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(
            base_url=server.rstrip("/") + "/api/v1/",
            transport=transport,
            timeout=30,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
        )

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, path, json=body)
        try:
            data = response.json()
        except ValueError:
            data = {"detail": response.text[:200]}
        if response.status_code >= 400:
            raise Refused(response.status_code, data if isinstance(data, dict) else {"detail": str(data)})
        return data

    def agent_id(self, reference: str) -> int:
        if reference.isascii() and reference.isdigit():
            return int(reference)
        for agent in self.call("GET", "agents"):
            if agent["name"] == reference:
                return int(agent["id"])
        raise Refused(404, {"code": "not-found", "detail": f"no enrolled agent named {reference!r}"})


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchreg admin", description=__doc__.split("\n\n")[0])
    add_registry_server(parser)
    parser.add_argument(
        "--token", default=os.environ.get("BENCHREG_TOKEN"), help="an admin-scoped API token (default: BENCHREG_TOKEN)"
    )
    things = parser.add_subparsers(dest="thing", required=True)
    enrolment = things.add_parser("enrolment-token", help="tokens that let a lab machine enrol").add_subparsers(
        dest="action", required=True
    )
    create = enrolment.add_parser("create", help="a single-use token for `benchreg agent enroll`")
    create.add_argument("--expires", type=seconds, default=3600, help="lifetime: 30m, 1h, 2d (default 1h)")
    create.add_argument("--note", default="", help="what it is for, e.g. the machine's name")
    agent = things.add_parser("agent", help="the enrolled lab machines").add_subparsers(dest="action", required=True)
    agent.add_parser("list", help="every agent: id, name, and online, offline or revoked")
    revoke = agent.add_parser("revoke", help="its token stops working; its unfinished jobs are cancelled")
    revoke.add_argument("agent", help="the agent's id or name")
    run = things.add_parser("run", help="stored runs").add_subparsers(dest="action", required=True)
    withdraw = run.add_parser("withdraw", help="the run stays, marked withdrawn, with the reason")
    withdraw.add_argument("run", type=ROW_ID, help="the run's id, as the catalogue shows it")
    withdraw.add_argument("--reason", required=True, help="why, in words: shown with the run and in the audit log")
    job = things.add_parser("job", help="jobs sent to agents").add_subparsers(dest="action", required=True)
    cancel = job.add_parser(
        "cancel", help="a job not finished yet: a worker still running it is refused on its next call"
    )
    cancel.add_argument("job", type=ROW_ID, help="the job's id")
    return parser


def admin_main(argv: list[str], transport: httpx.BaseTransport | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("no token: pass --token or set BENCHREG_TOKEN (an admin-scoped token)")
    client = AdminClient(args.server, args.token, transport)
    try:
        match (args.thing, args.action):
            case ("enrolment-token", "create"):
                made = client.call("POST", "enrolment-tokens", {"expires_in": args.expires, "note": args.note})
                print(made["token"])
            case ("agent", "list"):
                for agent in client.call("GET", "agents"):
                    state = "revoked" if agent["revoked_at"] else "online" if agent["online"] else "offline"
                    print(f"{agent['id']}\t{agent['name']}\t{state}")
            case ("agent", "revoke"):
                agent = client.call("POST", f"agents/{client.agent_id(args.agent)}/revoke")
                print(f"agent {agent['name']} revoked at {agent['revoked_at']}")
            case ("run", "withdraw"):
                done = client.call("POST", f"submissions/{args.run}/withdraw", {"reason": args.reason})
                print(f"run {done['run']} withdrawn: {done['reason']}")
            case ("job", "cancel"):
                job = client.call("POST", f"jobs/{args.job}/cancel")
                print(f"job {job['id']} {job['status']}")
    except Refused as exc:
        print(exc.line(), file=sys.stderr)
        return 1
    except httpx.HTTPError as exc:
        print(f"cannot reach {args.server}: {exc}", file=sys.stderr)
        return 2
    return 0
