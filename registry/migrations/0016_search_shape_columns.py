"""A search that matches most runs, counted without grouping every run thirteen ways (PostgreSQL only).

Two generated columns, computed by PostgreSQL on every INSERT whatever path stores the row (services, imports,
benchmarks' bulk loads), so no Python code writes them and no stored run is updated for them:

- `cell_shape` (uuid) on registry_submission and on registry_cataloguecell: 128 bits of the SHA-256 of the cell
  key's columns but `withdrawn` (CELL_SHAPE_COLUMNS; length-prefixed, so no two keys give the same text). A run and
  the cell that counts it have the same shape. The catalogue's search groups the matching runs by this one column
  (~29k groups at 100k runs), then joins the cells for the facet values and counts each facet over those groups
  instead of over every run (registry.selectors.catalogue._summary_from_runs_postgres).
- `search_text` (text) on registry_submission: UPPER of the four searched columns joined by newlines, with one
  trigram index that replaces the four of 0007. A search term has no whitespace (the query is split on it), so
  "the term is in one of the columns" and "the term is in search_text" are the same condition.

Why ADD COLUMN and not UPDATE: registry_submission is append-only (0002's trigger refuses UPDATE). A stored
generated column is filled by the table rewrite of ALTER TABLE, which fires no row trigger; nothing of the evidence
changes, and the columns are recomputed from the row by PostgreSQL itself, never supplied. The rewrite holds an
exclusive lock on the table: about 10 s per 100k runs on a 2-core machine.

SQLite has neither column: there the search groups the matching runs by the cell columns in Python (as before).
The columns are not model fields (they exist on one backend only); the selector names them in its SQL.

A later migration that changes the type of a column named below must drop these columns (PostgreSQL refuses to
alter a column a generated column reads) and add them again; tests/registry/test_migrations.py checks that
CELL_SHAPE_COLUMNS is the cell key but `withdrawn`, so a new cell column cannot be forgotten here silently.
"""

from django.db import migrations

# The cell key (registry.models.catalogue.CELL_KEY) without `withdrawn`, frozen as of this migration.
CELL_SHAPE_COLUMNS = ("comparability_key", "phase", "workload_name", "workload_version", "scenario_kind",
                      "precision_weights", "batch_size", "accelerator_model", "accelerator_vendor",
                      "software_summary", "headline_metric", "headline_unit", "headline_lower_is_better",
                      "accelerator_count", "steady_state", "trust", "origin_round", "origin_division",
                      "origin_availability")
SEARCH_COLUMNS = ("workload_name", "system_name", "accelerator_model", "submitter")

# convert_to() is only STABLE (a conversion could be redefined), so a generated column may not call it directly; a
# database's own encoding never changes, which makes this wrapper immutable in fact.
DIGEST_FUNCTION = """
CREATE FUNCTION benchreg_shape_digest(text) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT encode(substr(sha256(convert_to($1, 'UTF8')), 1, 16), 'hex')::uuid $$
"""

# steady_state is a column of cells; on runs it is conditions.steady_state.reached, as
# registry.services.catalogue.steady_state_word reads it. A run's NULL headline unit is a cell's "".
RUN_SOURCES = {
    "steady_state": ("CASE document -> 'conditions' -> 'steady_state' -> 'reached' "
                     "WHEN 'true'::jsonb THEN 'yes' WHEN 'false'::jsonb THEN 'no' ELSE '' END"),
}


def _shape_expression(sources: dict[str, str]) -> str:
    parts = []
    for column in CELL_SHAPE_COLUMNS:
        value = f"coalesce(({sources.get(column, column)})::text, '')"
        parts.append(f"length({value})::text || ':' || {value}")
    return "benchreg_shape_digest(" + " || ".join(parts) + ")"


def _postgres(schema_editor):
    return schema_editor.connection.vendor == "postgresql"


def add_columns(apps, schema_editor):
    if not _postgres(schema_editor):
        return
    search = " || E'\\n' || ".join(f"{column}::text" for column in SEARCH_COLUMNS)
    schema_editor.execute(DIGEST_FUNCTION)
    schema_editor.execute(
        "ALTER TABLE registry_submission "
        f"ADD COLUMN cell_shape uuid GENERATED ALWAYS AS ({_shape_expression(RUN_SOURCES)}) STORED, "
        f"ADD COLUMN search_text text GENERATED ALWAYS AS (UPPER({search})) STORED")
    schema_editor.execute("ALTER TABLE registry_cataloguecell "
                          f"ADD COLUMN cell_shape uuid GENERATED ALWAYS AS ({_shape_expression({})}) STORED")
    schema_editor.execute("CREATE INDEX registry_sub_search_trgm ON registry_submission "
                          "USING gin (search_text gin_trgm_ops)")
    for column in SEARCH_COLUMNS:
        schema_editor.execute(f"DROP INDEX IF EXISTS registry_sub_{column}_trgm")


def drop_columns(apps, schema_editor):
    if not _postgres(schema_editor):
        return
    for column in SEARCH_COLUMNS:
        schema_editor.execute(f"CREATE INDEX registry_sub_{column}_trgm ON registry_submission "
                              f"USING gin (UPPER({column}::text) gin_trgm_ops)")
    schema_editor.execute("ALTER TABLE registry_submission DROP COLUMN cell_shape, DROP COLUMN search_text")
    schema_editor.execute("ALTER TABLE registry_cataloguecell DROP COLUMN cell_shape")
    schema_editor.execute("DROP FUNCTION benchreg_shape_digest(text)")


class Migration(migrations.Migration):

    dependencies = [
        ("registry", "0015_report_file_in_storage"),
    ]

    operations = [
        migrations.RunPython(add_columns, drop_columns),
    ]
