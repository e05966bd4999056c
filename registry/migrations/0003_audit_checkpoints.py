"""Signed audit-log checkpoints: the table, append-only on PostgreSQL like the evidence (see 0002)."""

from django.db import migrations, models

TABLE = "registry_checkpoint"

# benchreg_refuse_change() is created by 0002_append_only_and_roles.
TRIGGERS = f"""
CREATE TRIGGER {TABLE}_no_update_delete BEFORE UPDATE OR DELETE ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION benchreg_refuse_change();
CREATE TRIGGER {TABLE}_no_truncate BEFORE TRUNCATE ON {TABLE}
    FOR EACH STATEMENT EXECUTE FUNCTION benchreg_refuse_change();
"""


def install_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGERS)


def remove_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {TABLE}_no_update_delete ON {TABLE};"
                              f"DROP TRIGGER IF EXISTS {TABLE}_no_truncate ON {TABLE};")


class Migration(migrations.Migration):
    dependencies = [("registry", "0002_append_only_and_roles")]

    operations = [
        migrations.CreateModel(
            name="Checkpoint",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("size", models.BigIntegerField(db_index=True)),
                ("root_hash", models.CharField(help_text="hex SHA-256 Merkle root of entries 0..size-1",
                                               max_length=64)),
                ("origin", models.CharField(max_length=200)),
                ("note", models.TextField(help_text="the C2SP signed note: checkpoint body, blank line, "
                                                    "signature line")),
                ("vkey", models.CharField(help_text="verifier key string of the signing key", max_length=300)),
                ("reason", models.CharField(choices=[("periodic", "periodic (Celery beat)"),
                                                     ("report", "report issued"), ("manual", "signed by hand")],
                                            max_length=20)),
                ("created_at", models.DateTimeField(db_index=True)),
            ],
            options={"ordering": ["-id"], "get_latest_by": "id"},
        ),
        migrations.RunPython(install_triggers, remove_triggers),
    ]
