"""How MLCommons cites a run imported from a published round: the row of the round's results table that the
import was refereed against (docs/mlperf-import.md, "Citing MLCommons' result").

MLCommons' results messaging guidelines ask a published result to be cited by its result ID, suite, version,
division, benchmark and scenario, with the date the figure was retrieved. The run's document holds what its
result folder measured; the table is MLCommons' publication of it, so the citation is kept beside the run, not in
its document (whose digest stays a function of the source files). Evidence: append-only, like the run.
"""

from __future__ import annotations

from django.db import models

from .immutable import AppendOnlyModel
from .submissions import Submission


class PublishedCitation(AppendOnlyModel):
    """One published table row matched to one stored run. Importing the same round again with the same table
    adds nothing; a corrected table (another digest) adds its own citation beside the first."""

    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="citations")
    table_name = models.CharField(max_length=100, help_text="summary_results.json or summary.json")
    table_digest = models.CharField(max_length=71, help_text="sha256:<hex> of the table file's bytes")
    round = models.CharField(max_length=20, help_text="the table's version column, 'v5.1'")
    result_id = models.CharField(max_length=100, blank=True, help_text="the table's ID ('5.1-0001'); '' if none")
    unique_id = models.CharField(max_length=500, blank=True, help_text="'Unique ID (e.g. for Audit)'")
    details = models.URLField(max_length=1000, blank=True, help_text="the table's Details link")
    suite = models.CharField(max_length=40, blank=True)
    division = models.CharField(max_length=40)
    submitter = models.CharField(max_length=200, blank=True)
    system = models.CharField(max_length=500, blank=True)
    benchmark = models.CharField(max_length=200, help_text="the benchmark MLCommons publishes it under")
    scenario = models.CharField(max_length=40)
    location = models.CharField(max_length=1000, help_text="the table's Location, as it writes it")
    retrieved_at = models.DateTimeField(help_text="when the table was read: the import")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "table_digest", "location"], name="registry_citation_once_per_table_row"
            )
        ]

    def __str__(self) -> str:
        return f"MLPerf {self.label} for run {self.submission_id}"

    @property
    def label(self) -> str:
        """'Inference v5.1 result 5.1-0001' or, where the table gives no ID, the audit ID."""
        return f"Inference {self.round} result {self.result_id or self.unique_id or self.location}"

    def as_evidence(self) -> dict[str, str]:
        """The citation as a signed report's evidence carries it (and `citation_words` reads)."""
        return {
            "round": self.round,
            "result_id": self.result_id,
            "unique_id": self.unique_id,
            "details": self.details,
            "suite": self.suite,
            "division": self.division,
            "submitter": self.submitter,
            "system": self.system,
            "benchmark": self.benchmark,
            "scenario": self.scenario,
            "table": self.table_name,
            "table_digest": self.table_digest,
            "retrieved": self.retrieved_at.date().isoformat(),
        }
