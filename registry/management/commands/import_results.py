"""`benchreg import mlperf PATH`: import a published MLPerf Inference submission tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry.importers import mlperf
from registry.services.imports import mlperf_import
from registry.services.tokens import user_for_token


class Command(BaseCommand):
    help = "Import published results (MLPerf Inference submission trees) through the normal validation path."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind", choices=["mlperf"], help="what kind of published results")
        parser.add_argument("path", type=Path)
        parser.add_argument("--round", dest="round_name", help="MLPerf round, e.g. v5.1 (default: from the logs)")
        parser.add_argument("--username", default="mlperf-import", help="registry user recorded as submitter")
        parser.add_argument("--json", action="store_true", help="print the per-file report as JSON")

    def handle(self, *args: Any, kind: str, path: Path, round_name: str | None, username: str,
               json: bool, **options: Any) -> None:
        if not path.is_dir():
            raise CommandError(f"{path} is not a directory")
        result = mlperf_import(root=path, submitted_by=user_for_token(username=username), round_name=round_name)
        if json:
            self.stdout.write(_json_report(result))
        else:
            self.stdout.write(result.render())
        if result.counts.get("refused"):
            raise CommandError(f"{result.counts['refused']} run(s) refused; the valid ones were kept")


def _json_report(result: Any) -> str:
    report = mlperf.report_dict(result.plan)
    report["registry"] = [o.__dict__ for o in result.outcomes]
    return json.dumps(report, indent=2)
