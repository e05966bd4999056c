"""The catalogue's summary table: a derived index over runs, not evidence."""

from __future__ import annotations

from django.db import models

# The columns a cell is keyed by: every column the catalogue filters or groups on except free text, plus what
# a comparable set's headline is read with. Same names as on Submission, so one Q filters both.
CELL_KEY = (
    "comparability_key",
    "phase",
    "workload_name",
    "workload_version",
    "scenario_kind",
    "precision_weights",
    "batch_size",
    "accelerator_model",
    "accelerator_vendor",
    "software_summary",
    "headline_metric",
    "headline_unit",
    "headline_lower_is_better",
    "withdrawn",
    # 0011 (the overview matrix): rows are accelerator configurations, cells show trust and steady state,
    # and round, division and availability filter like the other facets.
    "accelerator_count",
    "steady_state",
    "trust",
    "origin_round",
    "origin_division",
    "origin_availability",
)
# steady_state is the only key column that is not a column of runs: "yes", "no" or "" (not stated), from
# conditions.steady_state.reached. It is controlled by the contract, so it is one value per comparable set.


class CatalogueCell(models.Model):
    """How many runs share one combination of the catalogue's facet values, with their headline range.

    One row per distinct CELL_KEY among the runs (`withdrawn`: whether the run has a withdrawal), kept exact in
    the same transaction as each new run and each withdrawal (registry.services.catalogue), so facet counts, set
    sizes and totals are GROUP BYs over cells (one per combination actually stored, not one per run). A cell with
    no run left is deleted. It is derived data, recomputable at any time from the runs with
    `manage.py rebuild_catalogue`, and is not append-only.
    """

    comparability_key = models.CharField(max_length=71)
    phase = models.CharField(max_length=20)
    workload_name = models.CharField(max_length=200)
    workload_version = models.CharField(max_length=100)
    scenario_kind = models.CharField(max_length=40)
    precision_weights = models.CharField(max_length=20)
    batch_size = models.PositiveIntegerField()
    accelerator_model = models.CharField(max_length=500)
    accelerator_vendor = models.CharField(max_length=200)
    software_summary = models.CharField(max_length=500)
    headline_metric = models.CharField(max_length=60)
    headline_unit = models.CharField(max_length=20, help_text='"" where the runs state no unit (NULL on runs)')
    headline_lower_is_better = models.BooleanField()
    withdrawn = models.BooleanField()

    accelerator_count = models.PositiveIntegerField(default=0)
    steady_state = models.CharField(max_length=3, default="", help_text='"yes", "no" or "" (not stated)')
    trust = models.CharField(max_length=10, default="")
    origin_round = models.CharField(max_length=100, default="")
    origin_division = models.CharField(max_length=100, default="")
    origin_availability = models.CharField(max_length=100, default="")

    runs = models.PositiveIntegerField()
    # The runs that count as independent evidence (Submission.objects.independent(): measured, newest document of
    # their measurement); the log sums below are over these only, so a derived or superseded run shows in the
    # catalogue but never weighs in an estimate or a count of evidence.
    independent = models.PositiveIntegerField(default=0)
    headline_low = models.FloatField(null=True, help_text="smallest headline value of the cell's runs")
    headline_high = models.FloatField(null=True, help_text="largest headline value of the cell's runs")
    # Sums for a geometric mean with a Student t interval on the logs (the statistics' method for one value per
    # run), over the independent runs whose headline is positive: how many, the sum of ln(value) and of ln(value)².
    valued = models.PositiveIntegerField(default=0)
    log_sum = models.FloatField(default=0.0)
    log_sq_sum = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=list(CELL_KEY), name="catalogue_cell_key")]

    def __str__(self) -> str:
        return f"{self.runs} run(s) {self.workload_name} {self.precision_weights} on {self.accelerator_model}"
