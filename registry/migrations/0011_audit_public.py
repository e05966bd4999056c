"""Audit entries get a format number (1: the entries before this migration, which named users and token prefixes
and stay restricted; 2: public entries, registry/audit/entries.py), and witnesses' cosignatures of checkpoints
get an append-only table."""

import django.db.models.deletion
from django.db import migrations, models

TABLE = "registry_cosignature"

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
    dependencies = [("registry", "0010_comparison_request_key")]

    operations = [
        # Adding a column fires no row trigger: existing entries get format 1 without an UPDATE.
        migrations.AddField(
            model_name="auditentry", name="format",
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AlterField(
            model_name="auditentry", name="format",
            field=models.PositiveSmallIntegerField(
                default=2, help_text="entry format (registry/audit/entries.py): 1 before migration 0011 "
                                     "(restricted), 2 since (public)"),
        ),
        migrations.CreateModel(
            name="Cosignature",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("witness", models.CharField(help_text="the witness key's name", max_length=200)),
                ("vkey", models.CharField(help_text="the witness's verifier key string (cosignature/v1)",
                                          max_length=300)),
                ("line", models.CharField(help_text="the signature line, `— <name> <base64>`", max_length=400)),
                ("timestamp", models.BigIntegerField(help_text="seconds since the epoch, as the witness signed it")),
                ("created_at", models.DateTimeField()),
                ("checkpoint", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT,
                                                 related_name="cosignatures", to="registry.checkpoint")),
            ],
            options={"ordering": ["id"]},
        ),
        migrations.AddConstraint(
            model_name="cosignature",
            constraint=models.UniqueConstraint(fields=("checkpoint", "vkey"), name="one_cosignature_per_witness"),
        ),
        migrations.RunPython(install_triggers, remove_triggers),
    ]
