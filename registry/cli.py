"""The `benchreg` command. Client commands (submit, run, agent, verify) need no database and never start Django;
the rest are Django commands.

  benchreg demo [--no-serve]          the main job: embedded registry with runs of this machine, served
  benchreg serve                      the registry behind gunicorn
  benchreg submit FILE...             send documents to a registry (--server/--token or BENCHREG_SERVER/_TOKEN)
  benchreg run inference|training     the bundled runners
  benchreg create-token ...           manage.py create_token
  benchreg audit verify|checkpoint|export|show   manage.py audit: check the audit log, sign/export checkpoints
  benchreg import mlperf PATH         import a published MLPerf Inference or Training tree
  benchreg enrolment-token create --expires 1h   a single-use token for `benchreg agent enroll` (on the server)
  benchreg admin enrolment-token|agent|run|job ...  admin automation over the API with an admin-scoped token
  benchreg agent enroll|start|status  run this machine as an enrolled agent (needs no database)
  benchreg verify REPORT.pdf [--cert PEM --log-key VKEY] [--server URL]   check a signed decision report with the
                                      registry's published certificate and log key only (no Django, no database)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Subcommands served by a Django management command of the same purpose.
DJANGO_COMMANDS = {"demo": "demo", "serve": "serve", "create-token": "create_token", "migrate": "migrate",
                   "import": "import_results", "enrolment-token": "enrolment_token",
                   "audit": "audit"}


def submit_main(argv: list[str]) -> int:
    """`benchreg submit FILE...`: one line per file; exit 1 if any was rejected, 2 on connection errors."""
    from runners.client import RegistryClient

    parser = argparse.ArgumentParser(prog="benchreg submit", description="Submit run documents to a registry.")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--server", default=os.environ.get("BENCHREG_SERVER", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("BENCHREG_TOKEN"))
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("no token: pass --token or set BENCHREG_TOKEN")
    worst = 0
    with RegistryClient(args.server, args.token) as client:
        for path in args.files:
            try:
                outcome = client.submit_file(path)
            except OSError as exc:
                print(f"{path}: error: cannot read: {exc.strerror}")
                worst = max(worst, 2)
                continue
            print(outcome.line(str(path)))
            worst = max(worst, {"stored": 0, "known": 0, "rejected": 1}.get(outcome.status, 2))
    return worst


def django_main(command: str, argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["benchreg", command, *argv])
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "submit":
        return submit_main(rest)
    if command == "run":
        from runners.cli import main as runners_main

        return runners_main(argv)
    if command == "admin":  # automation: an admin-scoped token over the API, no database
        from registry.admin_cli import admin_main

        return admin_main(rest)
    if command == "agent":  # runs on lab machines: plain Python, no Django, no database
        from runners.agent.cli import main as agent_main

        return agent_main(rest)
    if command == "verify":  # third parties run it: plain Python, the report and published public material only
        from verifier.cli import main as verify_main

        return verify_main(rest)
    if command in DJANGO_COMMANDS:
        return django_main(DJANGO_COMMANDS[command], rest)
    print(f"benchreg: unknown command {command!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
