"""`benchreg rebuild-catalogue [--check]`: recompute the catalogue's summary table (CatalogueCell) from the runs.

The cells are kept exact in the transaction of every new run and withdrawal; this is the repair (after restoring
a backup of only some tables, or a bulk insert that bypassed the services) and the check. Idempotent.
--check changes nothing: it lists what differs and exits 1 when anything does.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry.services.catalogue import catalogue_cells_differ, catalogue_rebuild


class Command(BaseCommand):
    help = "Recompute the catalogue's summary table from the runs (or, with --check, say what differs)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if the cells differ")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["check"]:
            problems = catalogue_cells_differ()
            for problem in problems[:50]:
                self.stdout.write(problem)
            if problems:
                raise CommandError(
                    f"{len(problems)} catalogue cell(s) differ from the runs: run `benchreg rebuild-catalogue`"
                )
            self.stdout.write("catalogue cells match the runs")
            return
        before, after = catalogue_rebuild()
        if options["verbosity"]:
            self.stdout.write(f"catalogue rebuilt: {before} cell(s) replaced by {after}")
