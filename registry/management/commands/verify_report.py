"""`benchreg verify REPORT.pdf`: VALID or INVALID with reasons; exit 0 when valid, 1 when not, 2 on usage errors.

  benchreg verify report.pdf                      against this registry: its keys, its database (runs, withdrawals)
  benchreg verify report.pdf --server URL         keys from that registry's API (unless given), runs asked over HTTP
  benchreg verify report.pdf --offline --cert registry-report-cert.pem --log-key VKEY
                                                  no registry at all: signature, evidence and proofs only
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry.reports.verify import RunLookup, Verdict, load_certificates, verify_report


class Command(BaseCommand):
    help = "Verify a signed decision report PDF: signature, evidence, audit-log proofs and the runs' standing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--cert", type=Path, help="the registry's report certificate bundle (PEM)")
        parser.add_argument("--log-key", action="append", default=[], metavar="VKEY",
                            help="the audit log's verifier key (C2SP); repeatable")
        parser.add_argument("--server", help="ask this registry (its API) about keys and runs")
        parser.add_argument("--token", default=os.environ.get("BENCHREG_TOKEN"),
                            help="API token for --server (shows withdrawal reasons); default $BENCHREG_TOKEN")
        parser.add_argument("--offline", action="store_true", help="do not consult any registry about the runs")
        parser.add_argument("--json", action="store_true", help="print the verdict as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pdf = options["file"].read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc.strerror}", returncode=2) from None
        if options["server"] and not options["offline"]:
            certificates, keys, registry = _remote(options["server"], options["token"], pdf, options)
        else:
            certificates, keys, registry = _local(options)
        verdict = verify_report(pdf, certificates=certificates, log_keys=keys, registry=registry)
        self._print(verdict, options["json"], registry is None)
        if not verdict.valid:
            sys.exit(1)

    def _print(self, verdict: Verdict, as_json: bool, offline: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(verdict.as_dict(), indent=2))
            return
        report = verdict.report
        if report.get("title"):
            self.stdout.write(f"report {report.get('id')}: {report.get('title')}")
        for line in verdict.lines():
            self.stdout.write(line)
        if offline:
            self.stdout.write("  (no registry consulted: run existence and withdrawals were not checked)")


def _local(options: Mapping[str, Any]) -> tuple[list[Any], list[Any], RunLookup | None]:
    """Keys from the options or this registry's own; runs from this registry's database unless --offline."""
    from registry.audit.keys import trusted_verifier_keys
    from registry.reports.signing import trusted_certificates
    from registry.selectors.reports import run_statuses

    certificates = _cert_file(options["cert"]) if options["cert"] else trusted_certificates()
    keys: list[Any] = list(options["log_key"]) or list(trusted_verifier_keys())
    return certificates, keys, None if options["offline"] else run_statuses


def _remote(server: str, token: str | None, pdf: bytes,
            options: Mapping[str, Any]) -> tuple[list[Any], list[Any], RunLookup]:
    """Keys and run statuses from a registry's HTTP API. Keys given on the command line take precedence."""
    import httpx

    base = server.rstrip("/") + "/api/v1"
    headers = {"Authorization": f"Token {token}"} if token else {}
    try:
        with httpx.Client(timeout=60, headers=headers) as client:
            cert_pem = options["cert"].read_bytes() if options["cert"] else _get(client, f"{base}/reports/certificate")
            keys = list(options["log_key"]) or [json.loads(_get(client, f"{base}/audit/public-key"))["verifier_key"]]
            answer = client.post(f"{base}/reports/verify", files={"file": ("report.pdf", pdf, "application/pdf")})
            answer.raise_for_status()
            runs = answer.json().get("runs") or []
    except (httpx.HTTPError, OSError, ValueError, KeyError) as exc:
        raise CommandError(f"cannot ask {server}: {exc}", returncode=2) from None
    statuses = {r["digest"]: r for r in runs}

    def lookup(digests: Sequence[str]) -> Mapping[str, Mapping[str, Any]]:
        return {d: statuses[d] for d in digests if d in statuses}

    return load_certificates(cert_pem), keys, lookup


def _get(client: Any, url: str) -> bytes:
    response = client.get(url)
    response.raise_for_status()
    return bytes(response.content)


def _cert_file(path: Path) -> list[Any]:
    try:
        return load_certificates(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise CommandError(f"--cert {path}: {exc}", returncode=2) from None
