"""`manage.py verify_report REPORT.pdf`: verify a report against this registry, from its own keys and database.

For operators on the registry's host. Exit 0 when valid, 1 when not, 2 on usage errors.

  manage.py verify_report report.pdf              this registry's certificates and log keys; runs from its database
  manage.py verify_report report.pdf --offline --cert benchreg-report-certificate.pem --log-key VKEY
                                                  the given public material only; no run is looked up

Everyone else uses `benchreg verify` (verifier.cli): the same checks, without Django, from published material.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry.audit.keys import trusted_verifier_keys
from registry.reports.signing import trusted_certificates
from registry.selectors.reports import run_statuses
from verifier.cli import log_key
from verifier.report import RunLookup, load_certificates, verify_report
from verifier.verdict import Verdict


class Command(BaseCommand):
    help = "Verify a signed decision report PDF against this registry: signature, evidence, proofs, runs' standing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--cert", type=Path, help="the registry's report certificate bundle (PEM)")
        parser.add_argument(
            "--log-key",
            action="append",
            default=[],
            type=log_key,  # a key that does not parse is a usage error, as in `benchreg verify`
            metavar="VKEY",
            help="the audit log's verifier key (C2SP); repeatable",
        )
        parser.add_argument("--offline", action="store_true", help="do not look the runs up in this registry")
        parser.add_argument("--json", action="store_true", help="print the verdict as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pdf = options["file"].read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc.strerror}", returncode=2) from None
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
    certificates = _cert_file(options["cert"]) if options["cert"] else trusted_certificates()
    keys: list[Any] = list(options["log_key"]) or list(trusted_verifier_keys())
    return certificates, keys, None if options["offline"] else run_statuses


def _cert_file(path: Path) -> list[Any]:
    try:
        return load_certificates(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise CommandError(f"--cert {path}: {exc}", returncode=2) from None
