"""The overview matrix: catalogue cells keyed also by accelerator count, steady state, trust, MLPerf round, division
and availability, with log sums for each cell's geometric mean and its interval; the cells are then recomputed.

Cells are derived data (not evidence, not append-only): this migration deletes them and fills them again from the
runs, as `manage.py rebuild_catalogue` does, with the grouping frozen here (a migration never imports registry/).
"""

from django.db import migrations, models
from django.db.models import Case, Count, Exists, Max, Min, OuterRef, Q, Sum, Value, When
from django.db.models.functions import Coalesce, Ln

OLD_KEY = ("comparability_key", "phase", "workload_name", "workload_version", "scenario_kind",
           "precision_weights", "batch_size", "accelerator_model", "accelerator_vendor", "software_summary",
           "headline_metric", "headline_unit", "headline_lower_is_better", "withdrawn")
NEW_KEY = (*OLD_KEY, "accelerator_count", "steady_state", "trust", "origin_round", "origin_division",
           "origin_availability")


def refill_cells(apps, schema_editor):
    Submission = apps.get_model("registry", "Submission")
    Withdrawal = apps.get_model("registry", "Withdrawal")
    CatalogueCell = apps.get_model("registry", "CatalogueCell")
    reached = "document__conditions__steady_state__reached"
    runs = Submission.objects.annotate(
        withdrawn=Exists(Withdrawal.objects.filter(submission=OuterRef("pk"))),
        cell_unit=Coalesce("headline_unit", Value("")),
        steady_state=Case(When(Q(**{reached: True}), then=Value("yes")), When(Q(**{reached: False}), then=Value("no")),
                          default=Value("")))
    names = [n for n in NEW_KEY if n != "headline_unit"]
    positive = Q(headline_value__gt=0)
    grouped = (runs.values(*names, "cell_unit")
               .annotate(n=Count("*"), low=Min("headline_value"), high=Max("headline_value"),
                         valued=Count("headline_value", filter=positive),
                         log_sum=Sum(Ln("headline_value"), filter=positive),
                         log_sq_sum=Sum(Ln("headline_value") * Ln("headline_value"), filter=positive))
               .order_by())
    CatalogueCell.objects.all().delete()
    CatalogueCell.objects.bulk_create(
        [CatalogueCell(**{n: row[n] for n in names}, headline_unit=row["cell_unit"], runs=row["n"],
                       headline_low=row["low"], headline_high=row["high"], valued=row["valued"],
                       log_sum=row["log_sum"] or 0.0, log_sq_sum=row["log_sq_sum"] or 0.0) for row in grouped],
        batch_size=2000)


class Migration(migrations.Migration):

    # After 0011_decisions, which re-keys every run for contract 1.1 and rebuilds the cells the old way: these are
    # then refilled with the new grouping from the new keys.
    dependencies = [("registry", "0011_decisions")]

    operations = [
        migrations.RemoveConstraint(model_name="cataloguecell", name="catalogue_cell_key"),
        migrations.AddField("cataloguecell", "accelerator_count", models.PositiveIntegerField(default=0)),
        migrations.AddField("cataloguecell", "steady_state",
                            models.CharField(default="", help_text='"yes", "no" or "" (not stated)', max_length=3)),
        migrations.AddField("cataloguecell", "trust", models.CharField(default="", max_length=10)),
        migrations.AddField("cataloguecell", "origin_round", models.CharField(default="", max_length=100)),
        migrations.AddField("cataloguecell", "origin_division", models.CharField(default="", max_length=100)),
        migrations.AddField("cataloguecell", "origin_availability", models.CharField(default="", max_length=100)),
        migrations.AddField("cataloguecell", "valued", models.PositiveIntegerField(default=0)),
        migrations.AddField("cataloguecell", "log_sum", models.FloatField(default=0.0)),
        migrations.AddField("cataloguecell", "log_sq_sum", models.FloatField(default=0.0)),
        migrations.AddConstraint(model_name="cataloguecell",
                                 constraint=models.UniqueConstraint(fields=list(NEW_KEY), name="catalogue_cell_key")),
        migrations.RunPython(refill_cells, migrations.RunPython.noop),
    ]
