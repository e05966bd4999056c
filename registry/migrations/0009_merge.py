"""Joins the three 0008 migrations written side by side (authz roles, trust levels, MLPerf origin columns).

They touch different columns and rows, so their order does not matter; this node only makes the graph one line.
"""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0008_authz"),
        ("registry", "0008_mlperf_round"),
        ("registry", "0008_submission_trust"),
    ]

    operations = []
