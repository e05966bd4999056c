"""Model fields for the large texts of the evidence tables (a run's document and canonical text, audit entries).

Django 5.2 bulk-inserts on PostgreSQL through one array parameter per column (`INSERT ... SELECT * FROM
UNNEST(%s::jsonb[], ...)`, django/db/backends/postgresql/compiler.py), to save query planning. psycopg then
writes each array in Python and escapes every `"` and `\\` of every element with a regex template substitution:
for runs' JSON documents (hundreds of quotes each) that was 1.6 ms a document, over a quarter of the bulk path
(profile of `submission_create_batch`). A field with `get_placeholder` makes Django keep one
placeholder per value, which psycopg escapes in C: a 200-row INSERT of audit payloads went from 113 to 17 ms.

`deconstruct` reports the plain Django field, so migrations see (and keep) `models.JSONField` / `models.TextField`:
nothing in the schema changes, and migrations import no registry code (docs/contributing.md).

Every JSON column, and a run's canonical text, is read with `loads_stored`: orjson where it reads as json does (a
run's document 12 µs against json's 24), json elsewhere. A decision reads 60 runs, the catalogue and reports more.

A value whose JSON text its writer has already made (`JSONText`) is stored as that text: Django's JSONField would
encode it again with json.dumps (3.5 ms for a decision's 172 KB answer, against 0.25 ms in orjson).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import orjson
from django.db import models
from django.db.models.fields.json import KeyTransform

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


# orjson reads an integer literal beyond 64 bits as a double, where json keeps it exact (from -2**63 - 1 down; 19
# digits are enough for that): a text with a run of 19 digits or more, found in C, is read by json. A text orjson
# refuses (1e400, a lone surrogate, nesting past 1,024) is too, and gets json's answer.
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_NINETEEN_DIGITS = b"0" * 19


def loads_stored(text: str | bytes) -> Any:
    """json.loads(text), the same value of the same types, through orjson where that is so."""
    raw = text.encode(errors="surrogatepass") if isinstance(text, str) else text
    if _NINETEEN_DIGITS not in raw.translate(_DIGITS_AS_ZEROS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


class JSONText:
    """A JSON value with its JSON text, for a JSONField to store as it is. The writer vouches that the text is the
    value's: made by orjson from a value known to hold only what JSON carries (orjson writes NaN as null where json
    writes NaN, so only a value checked finite may take this way)."""

    __slots__ = ("text", "value")

    def __init__(self, value: Any, text: bytes) -> None:
        self.value, self.text = value, text


def finite_json(value: Any) -> Any:
    """`value` to store in a JSONField, its text made by orjson (a `JSONText`); the value as it is where orjson cannot
    write it (json then does). Only for a value known to hold no NaN or infinity (see JSONText)."""
    if value is None:
        return None  # SQL NULL, as Django writes None
    try:
        return JSONText(value, orjson.dumps(value))
    except orjson.JSONEncodeError:  # a type orjson does not write (a Mapping that is not a dict, an int past 64 bits)
        return value


class JSONField(models.JSONField):
    """models.JSONField read with `loads_stored` (see the module's docstring); written as Django writes it, or from a
    `JSONText`'s text."""

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        if not isinstance(value, JSONText):
            return super().get_db_prep_save(value, connection)
        text = value.text
        if connection.vendor == "postgresql":
            from psycopg.types.json import Jsonb  # PostgreSQL's driver: not imported where SQLite serves

            return Jsonb(value.value, dumps=lambda _value: text)
        return text.decode()

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value is None or self.decoder is not None:
            return super().from_db_value(value, expression, connection)
        if isinstance(expression, KeyTransform) and not isinstance(value, str):
            return value  # SQLite gives a key's scalar value as it is (as Django's field does)
        try:
            return loads_stored(value)
        except ValueError:
            return value  # not JSON: as Django's field does

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


class BulkJSONField(_OnePlaceholderPerValue, JSONField):
    """models.JSONField, bulk-inserted one placeholder per value (see the module's docstring)."""

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


class BulkTextField(_OnePlaceholderPerValue, _TextField):
    """models.TextField, bulk-inserted one placeholder per value (see the module's docstring)."""

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.TextField", args, kwargs
