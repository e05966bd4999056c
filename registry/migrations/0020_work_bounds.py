"""Bounds on queued work (reports, schedules)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("registry", "0019_audit_commitments")]

    operations: list[migrations.operations.base.Operation] = []
