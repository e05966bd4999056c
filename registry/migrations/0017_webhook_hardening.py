"""Webhooks: per-schedule secrets and delivery hardening."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("registry", "0016_search_shape_columns")]

    operations = [
        migrations.AddField(
            model_name="webhookdelivery",
            name="next_attempt_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(fields=["state", "next_attempt_at"], name="webhook_pending_due"),
        ),
    ]
