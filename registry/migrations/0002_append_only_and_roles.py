"""The audit head row, the role groups, and (PostgreSQL) triggers that make evidence tables append-only.

The triggers refuse UPDATE, DELETE and TRUNCATE below the ORM, so even raw SQL by the application's own
database user cannot rewrite evidence. A superuser can still disable them; the audit log's Merkle tree and
signed checkpoints are what make that visible afterwards.
"""

from django.db import migrations

EVIDENCE_TABLES = ["registry_submission", "registry_withdrawal", "registry_auditentry"]

FUNCTION = """
CREATE OR REPLACE FUNCTION benchreg_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'benchreg: % on % is refused: evidence is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


def _triggers(table: str) -> str:
    return f"""
CREATE TRIGGER {table}_no_update_delete BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION benchreg_refuse_change();
CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION benchreg_refuse_change();
"""


def install_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION, params=None)  # None: the body contains % for RAISE
    for table in EVIDENCE_TABLES:
        schema_editor.execute(_triggers(table))


def remove_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in EVIDENCE_TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_update_delete ON {table};"
                              f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};")


def create_head_and_roles(apps, schema_editor):
    apps.get_model("registry", "AuditHead").objects.get_or_create(id=1, defaults={"size": 0})
    group = apps.get_model("auth", "Group")
    for name in ("viewer", "submitter", "admin"):
        group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [("registry", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]

    operations = [
        migrations.RunPython(create_head_and_roles, migrations.RunPython.noop),
        migrations.RunPython(install_triggers, remove_triggers),
    ]
