"""Submission.trust: how far the registry stands behind a run (vouched, declared, imported, example).

The column is added with the default "declared" (on PostgreSQL 11+ a constant default is stored in the catalogue:
no row is rewritten, so the append-only UPDATE trigger of 0002 never fires). Existing runs are then given the
level of the path they came in by, which the registry recorded itself, never the document:
  * a run linked to an agent's job (Job.run) was measured by an enrolled agent: "vouched";
  * a run named by an `import.completed` audit entry came from a published source: "imported".
Hand-written examples loaded by earlier demos cannot be told apart from declared runs after the fact; they stay
"declared" (the demo marks them "example" from now on).

As in 0007, on PostgreSQL the trigger is disabled for this migration's own transaction only, while the
ALTER TABLE lock keeps other sessions out, and only the new column is set.
"""

import json

from django.db import migrations, models

TRIGGER = "registry_submission_no_update_delete"


def backfill_trust(apps, schema_editor):
    submission, job = apps.get_model("registry", "Submission"), apps.get_model("registry", "Job")
    audit = apps.get_model("registry", "AuditEntry")
    vouched = set(job.objects.filter(run__isnull=False).values_list("run_id", flat=True))
    imported_digests = set()
    for text in audit.objects.filter(kind="import.completed").values_list("entry", flat=True):
        payload = json.loads(text).get("payload") or {}
        imported_digests.update(d for d in payload.get("runs") or [] if isinstance(d, str))
    imported = set(submission.objects.filter(digest__in=imported_digests).exclude(id__in=vouched)
                   .values_list("id", flat=True)) if imported_digests else set()
    if not (vouched or imported):
        return
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission DISABLE TRIGGER {TRIGGER}")
    # Through the base manager's QuerySet class: the model's own refuses updates (it is evidence), and this
    # column is the registry's record of the path in, not part of the hashed document.
    for ids, level in ((vouched, "vouched"), (imported, "imported")):
        if ids:
            models.QuerySet(submission).filter(id__in=ids).update(trust=level)
    if postgres:
        schema_editor.execute(f"ALTER TABLE registry_submission ENABLE TRIGGER {TRIGGER}")


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0007_catalogue_cells"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="trust",
            field=models.CharField(choices=[
                ("vouched", "vouched: measured by an enrolled agent for a registry job"),
                ("declared", "declared: submitted by a token holder, self-declared"),
                ("imported", "imported: from a published source (MLPerf)"),
                ("example", "example: a hand-written example document, not a measurement")],
                db_index=True, default="declared", max_length=10),
        ),
        migrations.RunPython(backfill_trust, migrations.RunPython.noop),
    ]
