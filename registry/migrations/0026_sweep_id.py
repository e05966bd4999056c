"""The sweep id as a column (issue 42, item 4): Submission.sweep_id, indexed, so sweep pages stop reading JSON.

`sweep_id` is scenario.sweep.id, the serving sweep the run is a level of ("" for any other run): a pure function of
the canonical text (`manage.py audit verify` recomputes it with protocol.summary, like every summary column). Sweep
pages and pickers select on it through two partial indexes (most runs are no sweep's level): (sweep_id, id) for a
sweep's levels in order, (id DESC) over levels for the newest sweeps.

As 0021 and 0025 do, on PostgreSQL the backfill disables the append-only trigger of registry_submission for its own
transaction only and sets only this column, for the runs whose document has a scenario.sweep. The function is
frozen here (a migration must not follow later code); tests/registry/test_migrations.py checks it against
protocol/. The indexes are made after the backfill. Reversing drops the column: the backfill has nothing to undo.
"""

import json

from django.db import migrations, models

TRIGGER = "registry_submission_no_update_delete"
BATCH = 1000


# --- frozen: protocol.summary.sweep_id as of this migration ---------------------------------------------------------

def sweep_id_column(doc):
    scenario = doc.get("scenario") if isinstance(doc, dict) else None
    sweep = scenario.get("sweep") if isinstance(scenario, dict) else None
    found = sweep.get("id") if isinstance(sweep, dict) else None
    return found if isinstance(found, str) and found else ""


# --- the backfill ---------------------------------------------------------------------------------------------------

def backfill(apps, schema_editor):
    submission = apps.get_model("registry", "Submission")
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {TRIGGER}")
    # Only runs whose stored document has a scenario.sweep can have a sweep id; the value is read from the canonical
    # text (the evidence), not from the JSON column.
    levels = submission.objects.filter(document__scenario__has_key="sweep").order_by("id")
    ids = list(levels.values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        rows = [
            submission(id=pk, sweep_id=sweep_id_column(json.loads(canonical)))
            for pk, canonical in submission.objects.filter(id__in=ids[start:start + BATCH]).values_list("id",
                                                                                                        "canonical")
        ]
        # Through the base QuerySet class: the model's own refuses updates (it is evidence); this column is read
        # from the canonical text, not part of it.
        models.QuerySet(submission).bulk_update([r for r in rows if r.sweep_id], ["sweep_id"])
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {TRIGGER}")


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0025_per_accelerator"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="sweep_id",
            field=models.CharField(default="", max_length=100),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="submission",
            index=models.Index(
                condition=models.Q(("sweep_id", ""), _negated=True),
                fields=["sweep_id", "id"],
                name="registry_sub_sweep_levels",
            ),
        ),
        migrations.AddIndex(
            model_name="submission",
            index=models.Index(
                condition=models.Q(("sweep_id", ""), _negated=True), fields=["-id"], name="registry_sub_sweep_newest"
            ),
        ),
    ]
