"""Webhooks: per-schedule secrets and delivery hardening."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("registry", "0016_search_shape_columns")]

    operations: list[migrations.operations.base.Operation] = []
