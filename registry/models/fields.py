"""Model fields for the large texts of the evidence tables (a run's document and canonical text, audit entries).

Django 5.2 bulk-inserts on PostgreSQL through one array parameter per column (`INSERT ... SELECT * FROM
UNNEST(%s::jsonb[], ...)`, django/db/backends/postgresql/compiler.py), to save query planning. psycopg then
writes each array in Python and escapes every `"` and `\\` of every element with a regex template substitution:
for runs' JSON documents (hundreds of quotes each) that was 1.6 ms a document, over a quarter of the bulk path
(profile of `submission_create_batch`). A field with `get_placeholder` makes Django keep one
placeholder per value, which psycopg escapes in C: a 200-row INSERT of audit payloads went from 113 to 17 ms.

`deconstruct` reports the plain Django field, so migrations see (and keep) `models.JSONField` / `models.TextField`:
nothing in the schema changes, and migrations import no registry code (docs/contributing.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

# The largest id any row can have (a 64-bit signed primary key). A larger number names no row, and a lookup with
# it overflows the database driver (SQLite: OverflowError): callers answer "no such row" without asking.
MAX_ROW_ID = 2**63 - 1

if TYPE_CHECKING:  # Django's fields cannot be subscripted at run time; the stubs' are generic
    _TextField = models.TextField[Any, Any]
else:
    _TextField = models.TextField


class _OnePlaceholderPerValue:
    def get_placeholder(self, value: Any, compiler: Any, connection: Any) -> str:
        return "%s"  # what Django writes for a plain value; its presence alone keeps the INSERT off UNNEST


class BulkJSONField(_OnePlaceholderPerValue, models.JSONField):
    """models.JSONField, bulk-inserted one placeholder per value (see the module's docstring)."""

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


class BulkTextField(_OnePlaceholderPerValue, _TextField):
    """models.TextField, bulk-inserted one placeholder per value (see the module's docstring)."""

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.TextField", args, kwargs
