"""Bounds on queued work (reports, schedules)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("registry", "0019_audit_commitments")]

    operations: list[migrations.operations.base.Operation] = [
        migrations.AddField(
            model_name="schedule",
            name="webhook_secret",
            field=models.CharField(blank=True, default="", max_length=100,
                                   help_text="Standard Webhooks signing secret (whsec_…) of this schedule's "
                                             "alerts, shown to its owner once"),
        ),
        migrations.AddField(
            model_name="report",
            name="dedup_key",
            field=models.CharField(blank=True, db_index=True, default="", max_length=64,
                                   help_text="SHA-256 of (requester, comparison, title, decision): an identical "
                                             "request returns the report queued, rendering or ready with this key"),
        ),
    ]
