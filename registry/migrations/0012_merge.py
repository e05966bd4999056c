"""Joins the migrations of the work merged together in one session (no operations)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0011_audit_queue"),
        ("registry", "0011_audit_public"),
        ("registry", "0011_schedules"),
        ("registry", "0011_catalogue"),
    ]

    operations: list[migrations.operations.base.Operation] = []
