"""Many rows of one model in one PostgreSQL COPY: the bulk path's insert of runs.

`bulk_create` of 200 runs compiles one INSERT of 200 × 40 placeholders: Django builds every placeholder
(`field_as_sql`) and psycopg splits the long query text in Python before it merges the values in. Both cost more
than PostgreSQL's own work, about 0.3 ms a run. COPY sends the same values as rows, which psycopg writes in C.
The ids come from the table's own sequence first, so the objects have their primary keys as `bulk_create` would
give them.

Fewer rows (a single submission's run and audit entry) go in one INSERT ... RETURNING whose text is built once per
model and row count: compiling it through the ORM cost about 0.5 ms a statement, more than PostgreSQL's work
(issue 42).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TypeVar, cast

from django.db import connections, models, router

M = TypeVar("M", bound=models.Model)

COPY_FROM = 16  # rows from which COPY beats one INSERT on PostgreSQL (a sequence query costs a round trip)


def create_many(model: type[M], objs: Sequence[M]) -> list[M]:
    """Insert `objs` (unsaved, without primary keys) in the current transaction, as
    `model.objects.bulk_create(objs)` would, and return them with their primary keys: COPY on PostgreSQL for
    COPY_FROM rows or more, else `bulk_create`.

    Only what COPY can store exactly goes through it: a table with its own single-table auto-increment key and no
    value the database fills in (database defaults, generated model fields, parent tables); anything else is
    bulk-created. A unique violation raises django.db.IntegrityError, as `bulk_create` does; the transaction is
    then aborted, as it is after a failed INSERT, so callers keep their savepoint or transaction around the call.
    """
    alias = router.db_for_write(model)
    connection = connections[alias]
    meta = model._meta
    fields = meta.concrete_fields
    plain = (
        connection.vendor == "postgresql"
        and len(objs) > 0
        and not meta.parents
        and isinstance(meta.pk, models.AutoField)  # Big and Small too
        and not any(f.generated or f.has_db_default() for f in fields)
        and all(obj.pk is None for obj in objs)
    )
    if plain and len(objs) < COPY_FROM:
        return _insert(alias, model, objs)
    sequence = _sequence(alias, meta.db_table, meta.pk.column) if plain else None
    if sequence is None:
        return model._default_manager.db_manager(alias).bulk_create(objs)
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(%s) FROM generate_series(1, %s)", [sequence, len(objs)])
        for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
            setattr(obj, meta.pk.attname, pk)
        columns = ", ".join(quote(cast(str, f.column)) for f in fields)  # a concrete field has a column
        # Through Django's cursor (DEBUG logs it); errors become Django's (IntegrityError) here.
        with (
            connection.wrap_database_errors,
            cursor.copy(f"COPY {quote(meta.db_table)} ({columns}) FROM STDIN") as copy,
        ):  # names from the model, quoted
            for obj in objs:
                copy.write_row([f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields])
    for obj in objs:
        obj._state.adding = False
        obj._state.db = alias
    return list(objs)


def _insert(alias: str, model: type[M], objs: Sequence[M]) -> list[M]:
    """One INSERT of `objs` with RETURNING their keys, in order (as `bulk_create` relies on PostgreSQL to)."""
    connection = connections[alias]
    meta = model._meta
    fields = _insert_fields(model)
    params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in objs for f in fields]
    with connection.cursor() as cursor:  # Django's cursor: DEBUG logs it, errors become Django's (IntegrityError)
        cursor.execute(_insert_sql(alias, model, len(objs)), params)
        for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
            setattr(obj, meta.pk.attname, pk)
    for obj in objs:
        obj._state.adding = False
        obj._state.db = alias
    return list(objs)


def _insert_fields(model: type[models.Model]) -> list[models.Field[object, object]]:
    return [f for f in model._meta.concrete_fields if not f.primary_key]


@cache
def _insert_sql(alias: str, model: type[models.Model], rows: int) -> str:
    """`INSERT INTO table (columns) VALUES (%s, ...), ... RETURNING key` for `rows` rows (names from the model,
    quoted)."""
    quote = connections[alias].ops.quote_name
    meta = model._meta
    fields = _insert_fields(model)
    columns = ", ".join(quote(cast(str, f.column)) for f in fields)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    values = ", ".join([row] * rows)
    key = quote(cast(str, meta.pk.column))
    return f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES {values} RETURNING {key}"  # noqa: S608 (names from the model, quoted)


@cache
def _sequence(alias: str, table: str, column: str) -> str | None:
    """The sequence behind an auto-increment key (serial or identity), or None."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [connection.ops.quote_name(table), column])
        return cast("str | None", cursor.fetchone()[0])
