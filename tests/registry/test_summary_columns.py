"""The summary columns are declared once (protocol.summary.COLUMNS): the model's fields equal the declaration, and
the store's checks, the API's filters, the exports and audit verify read it; sweep pages select on the indexed
sweep_id column, not on the runs' JSON."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from protocol.summary import COLUMN_NAMES, COLUMNS
from registry.models import Submission
from tests.protocol.serving_law import sweep_docs

INTERNAL_TYPES = {
    "text": "CharField",
    "integer": "PositiveIntegerField",
    "float": "FloatField",
    "boolean": "BooleanField",
    "datetime": "DateTimeField",
}


@pytest.mark.parametrize("column", COLUMNS, ids=COLUMN_NAMES)
def test_the_models_field_is_the_declared_column(column: Any) -> None:
    field = Submission._meta.get_field(column.name)
    assert field.get_internal_type() == INTERNAL_TYPES[column.kind]
    assert field.max_length == column.max_length and field.null == column.null
    if column.indexed:
        indexed = {tuple(i.fields) for i in Submission._meta.indexes}
        assert field.db_index or any(column.name in {n.lstrip("-") for n in f} for f in indexed), column.name


def test_the_model_has_no_summary_like_column_the_declaration_lacks() -> None:
    """Every model field that is not the run's identity, keys, evidence or who/when is a declared column."""
    other = {"id", "digest", "measurement", "derived", "document", "canonical", "trust", "submitted_by"}
    other |= {"submitted_by_name", "token", "submitted_at", *Submission.KEY_COLUMNS.values()}
    fields = {f.name for f in Submission._meta.concrete_fields}
    assert fields - other == set(COLUMN_NAMES)


def test_the_run_lists_filters_are_the_declared_ones() -> None:
    from registry.api.filters import SubmissionFilter

    for column in COLUMNS:
        if column.filter:
            declared = SubmissionFilter.base_filters[column.filter]
            assert (declared.field_name, declared.lookup_expr) == (column.name, column.lookup)


def test_audit_verify_and_the_exports_read_the_declaration() -> None:
    from registry.audit.verify.runs import SUMMARY_COLUMNS
    from registry.web.exports import RUN_COLUMNS

    assert SUMMARY_COLUMNS == COLUMN_NAMES
    assert {c.export for c in COLUMNS if c.export} <= set(RUN_COLUMNS)


@pytest.mark.django_db
def test_a_sweeps_levels_are_filtered_on_the_sweep_id_column(user: Any) -> None:
    from registry.selectors.sweeps import recent_sweeps, sweep_runs

    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(user)
    docs = sweep_docs((1, 2, 4))
    ids = [api.post("/api/v1/submissions", doc, format="json").json()["id"] for doc in docs]
    sweep = docs[0]["scenario"]["sweep"]["id"]
    assert set(Submission.objects.filter(pk__in=ids).values_list("sweep_id", flat=True)) == {sweep}
    listed = api.get("/api/v1/submissions", {"sweep": sweep}).json()
    assert sorted(r["id"] for r in listed["results"]) == sorted(ids)
    assert api.get("/api/v1/submissions", {"sweep": "no-such-sweep"}).json()["results"] == []
    with CaptureQueriesContext(connection) as queries:
        assert [r.pk for r in sweep_runs(sweep_id=sweep)] == sorted(ids)
    assert (
        len(queries) == 1 and "sweep_id" in queries[0]["sql"] and "document" not in queries[0]["sql"].split("WHERE")[1]
    )
    assert sweep_runs(sweep_id="") == []
    with CaptureQueriesContext(connection) as queries:
        assert [s for s, _ in recent_sweeps()] == [sweep]
    assert "->" not in queries[0]["sql"]  # no JSON path read to find the sweeps


@pytest.mark.django_db
@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_postgresql_plans_a_sweeps_levels_on_the_partial_sweep_index(user: Any) -> None:
    """With sequential scans priced out (the table is tiny here), the plan for a sweep's levels and for the newest
    sweeps is an index scan on the sweep indexes: neither reads every run."""
    from registry.selectors.sweeps import MAX_LEVELS

    levels = Submission.objects.filter(sweep_id="a-sweep", withdrawal__isnull=True).order_by("pk")[:MAX_LEVELS]
    newest = Submission.objects.exclude(sweep_id="").order_by("-pk").values_list("pk", "sweep_id")[:500]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plans = []
        for query in (levels, newest):
            sql, params = query.query.sql_with_params()
            cursor.execute(f"EXPLAIN {sql}", params)
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
        cursor.execute("SET LOCAL enable_seqscan = on")
    assert "registry_sub_sweep_levels" in plans[0], plans[0]
    # the newest sweeps: either partial sweep index (both skip every run outside a sweep); on a tiny table the
    # planner may prefer a bitmap scan of the levels index and a sort to walking the newest index
    assert "registry_sub_sweep_" in plans[1] and "Seq Scan" not in plans[1], plans[1]


def test_the_catalogues_facets_sorts_and_search_are_declared_columns() -> None:
    """The catalogue keeps its URL names and labels (words for readers), on declared summary columns only."""
    from registry.selectors.catalogue.query import FACETS, PER_ACCELERATOR_SORTS, SEARCH_COLUMNS, SET_FIELDS

    columns = {column for column, _ in FACETS.values()} - {"trust"}  # trust: set by the registry, not the document
    columns |= {column for column, _ in PER_ACCELERATOR_SORTS.values()} | set(SEARCH_COLUMNS) | set(SET_FIELDS.values())
    assert columns <= set(COLUMN_NAMES), columns - set(COLUMN_NAMES)


@pytest.mark.django_db
def test_a_figure_filter_takes_any_finite_number_the_description_allows_and_refuses_the_rest(user: Any) -> None:
    """The float columns' filters compare floats: 1e60 is a number the API description allows (a decimal filter
    refused it beyond 1e50, found by schemathesis); 'inf' and words are a 400 naming the parameter."""
    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(user)
    assert api.get("/api/v1/submissions", {"min_output_tokens_per_accelerator": "1e60"}).status_code == 200
    for bad in ("inf", "lots"):
        response = api.get("/api/v1/submissions", {"min_total_tokens_per_accelerator": bad})
        assert response.status_code == 400 and "min_total_tokens_per_accelerator" in response.content.decode()
