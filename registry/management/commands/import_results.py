"""`benchreg import mlperf PATH`: import a published MLPerf Inference or Training tree (a whole round, a
division, a submitter or one system, or a folder holding several rounds, each imported on its own) through the
normal validation path, with a progress bar, a summary and a per-file report.

`benchreg import nccl-tests LOG...`: store nccl-tests' logs as collective runs, each refused unless it reproduces
its own printed figures (docs/interconnect.md).

`benchreg import serving FILE...`: import the result files of serving benchmark tools (aiperf, guidellm, vLLM's bench
serve), one run per load level, with the deployment they do not describe from --deployment FILE and flags
(docs/serving.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry.importers import nccl_tests_documents, serving
from registry.importers.serving.deployment import FLAGS as DEPLOYMENT_FLAGS
from registry.services.import_outcomes import BATCH_SIZE
from registry.services.imports_collectives import nccl_tests_import
from registry.services.imports_serving import serving_import
from registry.services.tokens import user_for_token


class Command(BaseCommand):
    help = (
        "Import published results through the normal validation path: MLPerf rounds, and serving tools' result files."
    )
    # Django's system checks look at the web server's configuration (URLs, views, templates: importing them is ~2 s
    # of a busy host's start), which `benchreg serve` and `migrate` check; an import's checks are the protocol's.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind", choices=list(IMPORTERS), help="what kind of published results")
        parser.add_argument(
            "path",
            type=Path,
            nargs="+",
            help="mlperf: a results repository, division, submitter or system folder, or a folder holding several "
            "rounds (one; each round imported on its own, its suite and round from its contents and its folder's "
            "name); serving: result files (aiperf's, guidellm's, vLLM bench serve's), or folders holding aiperf's "
            "profile_export_aiperf.json or guidellm's "
            "benchmarks.json (.yaml); nccl-tests: the logs (stdout) of nccl-tests' *_perf binaries",
        )
        parser.add_argument(
            "--system",
            type=Path,
            help="nccl-tests: a YAML or JSON file holding the protocol's system object (name, nodes, accelerators, "
            "host, ...); default: the log's hosts and device names",
        )
        parser.add_argument(
            "--collective", help="nccl-tests: the collective (all_reduce, ...) of a log too old to name its own"
        )
        parser.add_argument(
            "--deployment", type=Path, help="serving: a YAML or JSON description of the deployment (docs/serving.md)"
        )
        for key, (flag, kind) in DEPLOYMENT_FLAGS.items():
            parser.add_argument(
                flag,
                dest=f"deploy__{key}",
                type=kind,
                metavar=key.rsplit(".", 1)[-1].upper(),  # `--accelerator-count COUNT`, not the internal dest
                help=f"serving: {key} of the deployment file",
            )
        parser.add_argument(
            "--round",
            dest="round_name",
            help="MLPerf round, e.g. v5.1 (default: from the folder's name, ..._v5.1, else for Inference from the "
            "logs); for one round only",
        )
        parser.add_argument(
            "--suite",
            choices=["auto", "inference", "training"],
            default="auto",
            help="MLPerf suite (default: each round folder's own: training where result_<n>.txt files are found); "
            "with a folder holding several rounds, import only that suite's",
        )
        parser.add_argument("--username", default="mlperf-import", help="registry user recorded as submitter")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="runs stored per transaction")
        parser.add_argument("--report", type=Path, help="write the per-file report (JSON) to this file")
        parser.add_argument("--json", action="store_true", help="print the per-file report as JSON")
        parser.add_argument(
            "--full",
            action="store_true",
            help="print the per-file text report, not only the summary and the folders that were refused or skipped",
        )
        parser.add_argument(
            "--published",
            help="MLCommons' results table (summary_results.json) that referees the import; default: the one at "
            "the root of the round the tree belongs to, if any; 'none': no referee",
        )
        parser.add_argument(
            "--published-scope",
            help="where the tree lies in the round, as the table's Location starts (e.g. closed/AMD); default: "
            "from the folders (closed/<submitter>/...)",
        )
        parser.add_argument(
            "--accept-disagreements",
            action="store_true",
            help="store the runs the published table disagrees with too (held back otherwise); the exit status "
            "stays non-zero",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar (logs, CI)")
        parser.add_argument(
            "--attempts",
            type=int,
            default=6,
            help="tries in all when the database is "
            "unavailable (backoff 1, 2, 4... s up to 30 s); retrying is safe: stored runs come "
            "back as known",
        )

    def handle(self, *args: Any, kind: str, path: list[Path], username: str, json: bool, **options: Any) -> None:
        IMPORTERS[kind](self, path, options, username=username, json_out=json)

    def _mlperf(self, paths: list[Path], options: dict[str, Any], *, username: str, json_out: bool) -> None:
        from registry.management.mlperf_import import run  # MLPerf's importers, rich and tenacity: that kind only

        run(self, paths, options, username=username, json_out=json_out)

    def _serving(self, paths: list[Path], options: dict[str, Any], *, username: str, json_out: bool) -> None:
        flags = {key: options.get(f"deploy__{key}") for key in DEPLOYMENT_FLAGS}
        user = user_for_token(username=username if username != "mlperf-import" else "serving-import")
        try:
            deployment = serving.load(options.get("deployment"), flags)
            result = serving_import(paths=paths, deployment=deployment, submitted_by=user)
        except serving.ServingImportError as exc:
            raise CommandError(f"{exc}; nothing was stored") from None
        if json_out:
            rows = [
                {"path": lv.path, "sweep": lv.sweep, "index": lv.index, **o.__dict__}
                for lv, o in zip(result.levels, result.outcomes, strict=True)
            ]
            self.stdout.write(json.dumps(rows, indent=2))
        else:
            self.stdout.write(f"serving import: {len(result.levels)} load level(s)\n{result.render()}")
        if result.counts.get("refused"):
            raise CommandError(f"{result.counts['refused']} level(s) refused; the valid ones were kept")

    def _nccl_tests(self, paths: list[Path], options: dict[str, Any], *, username: str, json_out: bool) -> None:
        user = user_for_token(username=username if username != "mlperf-import" else "nccl-tests-import")
        try:
            system = nccl_tests_documents.load_system(options.get("system"))
            result = nccl_tests_import(
                paths=paths,
                submitted_by=user,
                system=system,
                collective=options.get("collective"),
                submitter=options.get("deploy__submitter"),  # --submitter, shared with serving
            )
        except nccl_tests_documents.NcclImportError as exc:
            raise CommandError(f"{exc}; nothing was stored") from None
        if json_out:
            rows = [{"path": s.path, **o.__dict__} for s, o in zip(result.sweeps, result.outcomes, strict=True)]
            self.stdout.write(json.dumps(rows, indent=2))
        else:
            self.stdout.write(f"nccl-tests import: {len(result.sweeps)} sweep(s)\n{result.render()}")


# Every kind `benchreg import` knows (the first argument's choices), and the method that imports it, called with
# the paths, the command's other options, the user and whether to answer in JSON: adding an importer is a row here,
# its method and its options in add_arguments (docs/architecture.md, "Adding an importer").
IMPORTERS: dict[str, Callable[..., None]] = {
    "mlperf": Command._mlperf,
    "serving": Command._serving,
    "nccl-tests": Command._nccl_tests,
}
