"""A decision's answers, the runs each cites and the reports issued from them become append-only below the ORM
(PostgreSQL triggers, as for runs, withdrawals, audit entries and comparisons): what a decision said then is
evidence, like the runs it cites. The Decision row itself stays mutable (its status and what changed)."""

from django.db import migrations

TABLES = ["registry_decisionanswer", "registry_decisionevidence", "registry_decisionreport"]


def _triggers(table: str) -> str:
    # benchreg_refuse_change() is created by 0002_append_only_and_roles.
    return f"""
CREATE TRIGGER {table}_no_update_delete BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION benchreg_refuse_change();
CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION benchreg_refuse_change();
"""


def install_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(_triggers(table))


def remove_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for table in TABLES:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_update_delete ON {table};"
                                  f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};")


class Migration(migrations.Migration):
    dependencies = [("registry", "0013_schedule_webhook_length")]

    operations = [migrations.RunPython(install_triggers, remove_triggers)]
