"""Decisions: flagged on a stored run, recomputed later."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("registry", "0017_webhook_hardening")]

    operations: list[migrations.operations.base.Operation] = []
