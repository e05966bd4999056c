"""Decisions: flagged on a stored run, recomputed later."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("registry", "0017_webhook_hardening")]

    operations: list[migrations.operations.base.Operation] = [
        migrations.AddField(
            model_name="decision",
            name="stale_since",
            field=models.DateTimeField(blank=True, null=True,
                                       help_text="a run was stored on its workload since; not yet recomputed"),
        ),
        migrations.AddField(
            model_name="decision",
            name="recompute_error",
            field=models.CharField(blank=True, default="", max_length=500,
                                   help_text="why the last recompute could not finish (empty: it did)"),
        ),
        migrations.AddIndex(
            model_name="decision",
            index=models.Index(fields=["workload_name", "scenario_kind"], name="decision_question_key"),
        ),
    ]
