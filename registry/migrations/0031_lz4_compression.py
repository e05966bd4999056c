"""The large JSON and text columns compressed with LZ4 on PostgreSQL (issue 42, item 2: a decision's answer).

PostgreSQL compresses a value over ~2 KB before storing it out of line (TOAST), with pglz unless told otherwise.
A decision's answer is ~170 KB of JSON: storing it took 9.1 ms with pglz and 2.5 ms with LZ4 (the same row, psql's
server on the 2-core development machine; LZ4 also decompresses faster on every read). Runs' documents and canonical
texts, and comparisons' results, are the other values that size or larger.

`SET COMPRESSION` changes how new values are written; stored ones stay as they are and read as before (each value
records its own method). PostgreSQL 14 and later, built with LZ4 (the Debian and Docker Hub builds are): where the
server has no LZ4 the column keeps pglz and the migration says so, since nothing else depends on it. SQLite stores
these as plain text and is left alone.
"""

from django.db import migrations

COLUMNS = [
    ("registry_decisionanswer", "answer"),
    ("registry_submission", "document"),
    ("registry_submission", "canonical"),
    ("registry_comparison", "result"),
    ("registry_comparison", "canonical"),
]


def _set(schema_editor, method: str) -> None:
    for table, column in COLUMNS:
        schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        # default_toast_compression (PostgreSQL 14 and later) lists lz4 where the server was built with it
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    if not (row and row[0]):
        print("\n  registry 0031: no LZ4 in this PostgreSQL; large values keep pglz")
        return
    _set(schema_editor, "lz4")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        _set(schema_editor, "default")  # the server's default_toast_compression, as before


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0030_run_artifacts"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
