"""The same counts on PostgreSQL in one statement: every facet's grouping set (each counted with every filter
but its own) and the comparable sets, as GROUPING SETS over the cells, or over a search's runs grouped by
their cell's shape and joined to it. tests/registry/selectors check both readings agree exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Count, Exists, Max, Min, OuterRef, UUIDField, Value
from django.db.models.expressions import RawSQL

from registry.models import CatalogueCell, Withdrawal

from . import counts
from .counts import FACET_LIMIT, counted_facet, summary_from_rows
from .query import FACETS, SET_FIELDS, CatalogueQuery, UncountedRunsError, facet_filters, matching_cells, matching_runs

logger = logging.getLogger(__name__)


# One scan on PostgreSQL: each facet's grouping set counted with every filter but its own (FILTER), and the
# comparable sets as one more grouping set. A search matching most of 100k runs took ~390 ms cold when the
# runs were grouped by every cell column and counted in Python; this is the same arithmetic in the database.
FACET_GROUPING = [column for column, _ in FACETS.values()]


SET_GROUPING = ["comparability_key", *SET_FIELDS.values()]


def summary_from_runs(query: CatalogueQuery) -> dict[str, Any]:
    """A search's facets and sets on PostgreSQL, in one statement: the matching runs grouped by their cell's shape
    (one uuid column, migration 0016) and withdrawal, each group joined to the cell that counts its runs, and the
    grouping sets taken over those groups (~29k at 100k runs) instead of over every run: 13 hash tables fed 100k
    rows cost more than the scan itself. A run the cells do not count (rows stored around the services, before
    `manage.py rebuild_catalogue`) finds no cell: then the runs are counted in Python instead, exactly."""
    withdrawn = (
        Exists(Withdrawal.objects.filter(submission=OuterRef("pk")))
        if query.include_withdrawn
        else Value(False, output_field=BooleanField())
    )
    groups = (
        matching_runs(query, facets=False)
        .order_by()
        .annotate(shape=RawSQL('"registry_submission"."cell_shape"', (), output_field=UUIDField()), gone=withdrawn)
        .values("shape", "gone")
        .annotate(n=Count("*"), low=Min("headline_value"), high=Max("headline_value"))
    )
    sql, params = groups.query.sql_with_params()
    columns = ", ".join(
        f'c."{column}"' for column in dict.fromkeys([*SET_GROUPING, *FACET_GROUPING, "headline_lower_is_better"])
    )
    inner = (
        f"SELECT g.n, g.low, g.high, {columns} FROM ({sql}) AS g "  # noqa: S608 (the module's constants)
        f"LEFT JOIN {CatalogueCell._meta.db_table} AS c ON c.cell_shape = g.shape AND c.withdrawn = g.gone"
    )
    try:
        return summary_grouping_sets(query, (inner, params), count="sum(m.n)", low="m.low", high="m.high")
    except UncountedRunsError:
        logger.error("runs that no catalogue cell counts match a search: run `benchreg rebuild-catalogue`")
        return counts.summary_from_runs(query)


def summary_from_cells(query: CatalogueQuery) -> dict[str, Any]:
    """The same single scan over the cells instead of the runs (sums of their run counts): on PostgreSQL the
    catalogue's 12 facets and its sets cost one pass over the summary table, not 13 GROUP BYs."""
    inner = matching_cells(CatalogueQuery(set_key=query.set_key, include_withdrawn=query.include_withdrawn)).values(
        *dict.fromkeys(
            [*SET_GROUPING, *FACET_GROUPING, "runs", "headline_low", "headline_high", "headline_lower_is_better"]
        )
    )
    return summary_grouping_sets(
        query, inner.query.sql_with_params(), count="sum(m.runs)", low="m.headline_low", high="m.headline_high"
    )


def summary_grouping_sets(
    query: CatalogueQuery,
    rows_in: tuple[str, Iterable[Any]],
    *,
    count: str,
    low: str,
    high: str,
    with_sets: bool = True,
) -> dict[str, Any]:
    """One scan over `rows_in` (SQL and its parameters): a grouping set per facet column (counted under the other
    filters) and, `with_sets`, one for the comparable sets. Without it (the matrix's sidebar) only "facets" is
    meaningful in the result. Raises UncountedRunsError where a set's key is NULL: a run that no cell counts."""
    inner, params = rows_in[0], list(rows_in[1])
    filters = facet_filters(query)

    def condition(without: str | None) -> tuple[str, list[Any]]:
        used = {c: v for c, v in filters.items() if c != without}
        if any(v is None for v in used.values()):
            return "FALSE", []
        return " AND ".join([f'm."{c}" = %s' for c in used] or ["TRUE"]), list(used.values())

    selects, select_params = [], []
    for column in FACET_GROUPING:
        sql, values = condition(column)
        selects.append(f'{count} FILTER (WHERE {sql}) AS "n_{column}"')
        select_params += values
    every, every_params = condition(None)
    columns = list(dict.fromkeys([*FACET_GROUPING, *(SET_GROUPING if with_sets else [])]))
    grouping = ", ".join(f'm."{c}"' for c in columns)
    sets = ", ".join(f'(m."{c}")' for c in FACET_GROUPING)
    totals, total_params = "", []
    if with_sets:
        sets += ", (" + ", ".join(f'm."{c}"' for c in SET_GROUPING) + ")"
        totals = (
            f", {count} FILTER (WHERE {every}) AS n_all, min({low}) FILTER (WHERE {every}) AS low, "
            f"max({high}) FILTER (WHERE {every}) AS high, "
            f"max(m.headline_lower_is_better::int) FILTER (WHERE {every}) AS lower"
        )
        total_params = every_params * 4
    # Column names are the module's constants; every value is a query parameter.
    sql = (
        f"SELECT GROUPING({grouping}) AS gid, {grouping}, {', '.join(selects)}{totals} "  # noqa: S608
        f"FROM ({inner}) AS m GROUP BY GROUPING SETS ({sets})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*select_params, *total_params, *params])
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return _summary_from_grouped(query, rows, columns)


def _summary_from_grouped(query: CatalogueQuery, rows: list[dict[str, Any]], grouped: list[str]) -> dict[str, Any]:
    """Facets and sets from the GROUPING SETS rows; GROUPING() has a 1 bit for each column rolled up."""
    width = len(grouped)

    def mask(kept: list[str]) -> int:
        return sum(1 << (width - 1 - i) for i, c in enumerate(grouped) if c not in kept)

    key_mask = mask(SET_GROUPING)
    if "comparability_key" in grouped and any(r["gid"] == key_mask and r["comparability_key"] is None for r in rows):
        raise UncountedRunsError
    facets = []
    for name, (column, _) in FACETS.items():
        wanted = mask([column])
        counted = [(r[column], r[f"n_{column}"]) for r in rows if r["gid"] == wanted and r[f"n_{column}"]]
        facets.append(counted_facet(query, name, sorted(counted, key=lambda item: (-item[1], item[0]))[:FACET_LIMIT]))
    if "comparability_key" not in grouped:  # facets only (catalogue_facets)
        return summary_from_rows(facets, [], 0, 0, False)
    sets = [
        {
            "comparability_key": r["comparability_key"],
            "n": r["n_all"],
            "low": r["low"],
            "high": r["high"],
            "lower": r["lower"] or 0,
            **{name: r[column] for name, column in SET_FIELDS.items()},
        }
        for r in rows
        if r["gid"] == key_mask and r["n_all"]
    ]
    sets.sort(key=lambda row: (-row["n"], row["comparability_key"]))
    return summary_from_rows(facets, sets, sum(row["n"] for row in sets), len(sets), True)
