"""Joins the two 0003 branches (agents/jobs and audit checkpoints), which touch different tables."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("registry", "0003_agents_jobs"), ("registry", "0003_audit_checkpoints")]

    operations: list[migrations.operations.base.Operation] = []
