"""An index for a scaling plan's runs (issue 43, item 2): /scaling/<id>/ selects the runs whose document names the
plan (scenario.distributed.scaling.id) with a JSON filter, and on PostgreSQL this expression index serves it.

Why an index on the document and not a summary column as 0026 gave serving sweeps: the value is read from the
JSONB document that every run already has, so nothing is backfilled, the append-only trigger is left alone, and
audit verify has no new column to recompute; the index only speeds a read. Without it the filter reads every
training run's document: `python -m bench.scaling_plan --runs 20000` measured 511 ms without it, 5.5 ms with it.
Partial: most runs are no plan's size. The expression is the one Django writes for the filter
(`document #> '{scenario,distributed,scaling,id}'`), with id for the plan's order; tests/registry/web/test_scaling.py
checks the planner uses it. SQLite (development, tests) reads the documents.
"""

from django.db import migrations

INDEX = "registry_sub_scaling_plan"
PLAN = "(document #> '{scenario,distributed,scaling,id}')"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE INDEX {INDEX} ON registry_submission ({PLAN}, id) WHERE {PLAN} IS NOT NULL")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0027_job_groups"),
    ]

    operations = [migrations.RunPython(create, drop)]
