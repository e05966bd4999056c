"""JSON columns are read with orjson where it reads as json does (registry/models/fields.py): the same value, of the
same types, for every text, and through the database for the values where the two parsers differ."""

from __future__ import annotations

import importlib
import json
import math
import uuid
from typing import Any

import pytest
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.models import DecisionAnswer, Plan, WebhookDelivery
from registry.models.fields import JSONField, JSONText, finite_json, loads_stored
from tests.registry.hostile.people import person

# Where orjson alone would differ from json: integers past 64 bits become doubles (-2**63 - 1 down, 2**64 up),
# 1e400 and lone surrogates are refused, NaN is refused; and what both read alike.
EDGES = [
    "9223372036854775807", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
    "18446744073709551616", "123456789012345678901234567890", "-123456789012345678901234567890",
    "[1e400, -1e400, 1e-400]", '"\\ud800"', "NaN", "[Infinity, -Infinity]", '{"a": 1, "a": 2}', "-0", "-0.0",
    "0.1", "1E5", '{"n": 99999999999999999999.5}', '"12345678901234567890"', '{"big": [1, 2, 12345678901234567890]}',
    "[" * 200 + "]" * 200,
]  # fmt: skip


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (1 and 1.0 differ; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)  # (JSONB keeps no key order)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b) and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


@pytest.mark.parametrize("text", EDGES)
def test_the_edges_where_orjson_differs_read_as_json_reads_them(text: str) -> None:
    expected = json.loads(text)
    assert _same(loads_stored(text), expected)
    assert _same(loads_stored(text.encode()), expected)


numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)
values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, st.text()),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


def test_nesting_json_cannot_read_is_refused_as_json_refuses_it() -> None:
    text = "[" * 2000 + "]" * 2000  # past orjson's 1,024 levels and Python's recursion limit
    with pytest.raises(RecursionError):
        json.loads(text)
    with pytest.raises(RecursionError):
        loads_stored(text)


@settings(max_examples=400, deadline=None)
@given(values)
def test_any_json_text_reads_as_json_reads_it(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=1, ensure_ascii=False)):
        assert _same(loads_stored(text), json.loads(text)), text


@pytest.mark.django_db
def test_stored_values_come_back_exact_with_their_types() -> None:
    owner = person()
    body = {"exact": 12345678901234567890123, "negative": -9223372036854775809, "float": 2.0, "tiny": 5e-324}
    hook = WebhookDelivery.objects.create(
        message_id="m", url="https://example.com/h", secret="s", event="e", body=body, created_at=timezone.now()
    )
    assert _same(WebhookDelivery.objects.get(pk=hook.pk).body, body)
    assert _same(WebhookDelivery.objects.filter(pk=hook.pk).values_list("body", flat=True).get(), body)
    plan = Plan.objects.create(
        runner="inference", workload="w", precisions=["bf16"], batch_sizes=[None], options={"n": 2**64},
        soft_time_limit=1, time_limit=2, created_by=owner,
    )  # fmt: skip
    assert _same(Plan.objects.get(pk=plan.pk).options, {"n": 2**64})


# Text every database stores: PostgreSQL's JSONB refuses NUL and lone surrogates however they are written.
stored_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8)
finite_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), stored_text,
        st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([2.0, -0.0, 1e-05, 1e16, 1e21, 5e-324]),
    ),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(stored_text, children, max_size=4),
    max_leaves=30,
)  # fmt: skip


@pytest.mark.django_db
@settings(max_examples=60, deadline=None)
@given(finite_values)
def test_a_value_written_from_orjson_text_reads_back_as_written_by_json(value: Any) -> None:
    """`finite_json` (a decision's answer) stores orjson's text, or the value itself where orjson cannot write it (an
    integer past 64 bits): either way the stored value reads back as the same value written by Django's json.dumps
    does, with the same types (on PostgreSQL a float written 1e+16 or 2.011088711486683e+16 comes back an int, the
    decimal the text says, either way)."""
    value = {"v": value}  # a column value (None alone is SQL NULL, as Django writes it)
    bodies = [finite_json(value), value]
    hooks = [
        WebhookDelivery.objects.create(
            message_id=uuid.uuid4().hex, url="https://h.ex/", secret="", event="e", body=b, created_at=timezone.now()
        )
        for b in bodies
    ]
    fast, plain = (WebhookDelivery.objects.get(pk=hook.pk).body for hook in hooks)
    assert _same(fast, plain)


def test_a_value_orjson_cannot_write_is_left_to_json() -> None:
    assert finite_json({"n": 2**64}) == {"n": 2**64}
    assert isinstance(finite_json({"n": 2**63 - 1}), JSONText)


@pytest.mark.postgres
@pytest.mark.django_db
def test_large_values_are_compressed_with_lz4_where_the_server_has_it() -> None:
    """Migration 0031: decisions' answers, runs' documents and canonical texts, comparisons' results are written
    with LZ4 (storing a decision's 170 KB answer: 9 ms with pglz, 2.5 ms with LZ4)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        if not cursor.fetchone()[0]:
            pytest.skip("this PostgreSQL was built without LZ4: migration 0031 leaves pglz")
        columns = importlib.import_module("registry.migrations.0031_lz4_compression").COLUMNS
        cursor.execute(
            "SELECT attrelid::regclass::text, attname, attcompression FROM pg_attribute "
            "WHERE attrelid::regclass::text || '.' || attname = ANY(%s)",
            [[f"{table}.{column}" for table, column in columns]],
        )
        rows = cursor.fetchall()
        assert len(rows) == len(columns) == 5 and {r[2] for r in rows} == {"l"}, rows
    # A value past the out-of-line threshold (~2 KB) is compressed with the column's method: stored in a copy of the
    # answers' table (LIKE … INCLUDING ALL keeps the column's compression), as a decision's answer is written.
    big = {"samples": [i / 7 for i in range(20_000)]}
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE probe_answer (LIKE registry_decisionanswer INCLUDING ALL)")
        cursor.execute(
            "INSERT INTO probe_answer (decision_id, number, answer, digest, created_at) VALUES (1, 1, %s, 'd', now())",
            [DecisionAnswer._meta.get_field("answer").get_db_prep_save(finite_json(big), connection)],
        )
        cursor.execute("SELECT pg_column_compression(answer), answer = %s::jsonb FROM probe_answer", [json.dumps(big)])
        assert cursor.fetchone() == ("lz4", True)


@pytest.mark.django_db
def test_a_stored_run_is_written_from_orjson_text_and_keeps_its_document_as_a_value(
    server_example, monkeypatch
) -> None:
    """runs_store writes a checked document's JSON from orjson's text (a checked document is finite), not through
    json.dumps; the stored run it returns holds the document itself, and the row holds what json.dumps would have
    written."""
    from django.db import transaction

    import protocol
    from registry.models import Submission
    from registry.services import runs

    checked = protocol.check(server_example)
    owner = person()
    written = []
    prepare = JSONField.get_db_prep_save

    def watched(field: Any, value: Any, connection: Any) -> Any:
        written.append(value)
        return prepare(field, value, connection)

    monkeypatch.setattr(JSONField, "get_db_prep_save", watched)
    with transaction.atomic():
        (run,) = runs.runs_store(checked=[checked], submitted_by=owner, token=None, trust="declared")
    monkeypatch.undo()
    assert any(isinstance(value, JSONText) and value.value is checked.document for value in written)
    assert run.document is checked.document
    # The JSON column as stored (a loaded run's `document` is its canonical text's parse), against the same document
    # written by Django's json.dumps into another JSON column.
    stored = Submission.objects.filter(pk=run.pk).values_list("document", flat=True).get()
    hook = WebhookDelivery.objects.create(
        message_id="m", url="https://h.ex/", secret="", event="e", body=checked.document, created_at=timezone.now()
    )
    assert _same(stored, WebhookDelivery.objects.filter(pk=hook.pk).values_list("body", flat=True).get())
