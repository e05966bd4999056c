"""Facet counts and comparable sets counted portably: one GROUP BY over the cells per facet and one for the
sets, or, for a free-text search, the matching runs grouped by the cell columns and counted here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import Count, IntegerField, Max, Min, QuerySet, Sum
from django.db.models.functions import Cast

from registry.models import CatalogueCell

from .labels import base_label
from .query import (
    FACETS,
    GROUP_COLUMNS,
    SET_FIELDS,
    CatalogueQuery,
    ComparableSet,
    Facet,
    FacetValue,
    facet_filters,
    matching_cells,
    matching_runs,
    software_param,
)

FACET_LIMIT = 40  # values listed per facet, most frequent first


SETS_LIMIT = 12  # comparable sets listed, largest first


SET_SCAN_LIMIT = 5_000  # sets read at most; beyond, the total and the number of sets are counted separately


def counted_facet(query: CatalogueQuery, name: str, counted: Iterable[tuple[Any, int]]) -> Facet:
    """A facet from (value, runs) pairs, most frequent first; a selected value is listed even with no run."""
    label = FACETS[name][1]
    selected = query.filters.get(name, "")
    chosen = software_param(selected) if name == "software" else selected
    values = []
    for raw, n in counted:
        value = str(raw)
        shown = value or "not stated"
        values.append(FacetValue(value, shown, n, bool(chosen) and value == chosen))
    if chosen and not any(v.selected for v in values):
        values.insert(0, FacetValue(chosen, chosen, 0, True))
    return Facet(name, label, values, chosen)


def _cell_facet(query: CatalogueQuery, name: str) -> Facet:
    column = FACETS[name][0]
    rows = (
        matching_cells(query, without=name).values(column).annotate(n=Sum("runs")).order_by("-n", column)[:FACET_LIMIT]
    )
    return counted_facet(query, name, ((row[column], row["n"]) for row in rows))


def as_set(row: Mapping[str, Any], name: str | None = None) -> ComparableSet:
    lower = bool(row["lower"])
    return ComparableSet(
        key=row["comparability_key"],
        name=name or base_label(row),
        count=row["n"],
        phase=row["phase"],
        workload=row["workload"],
        workload_version=row["version"],
        scenario=row["scenario"],
        precision=row["precision"],
        batch_size=row["batch"],
        metric=row["metric"],
        unit=row["unit"] or None,
        lower_is_better=lower,
        best=row["low"] if lower else row["high"],
    )


def cell_sets(cells: QuerySet[CatalogueCell]) -> QuerySet[CatalogueCell, Mapping[str, Any]]:
    """One GROUP BY comparability_key over cells: size, description and headline range of every set."""
    return (
        cells.values("comparability_key")
        .annotate(
            n=Sum("runs"),
            **{name: Min(column) for name, column in SET_FIELDS.items()},
            high=Max("headline_high"),
            low=Min("headline_low"),
            lower=Max(Cast("headline_lower_is_better", IntegerField())),  # PostgreSQL has no MAX(boolean)
        )
        .order_by("-n", "comparability_key")
    )


def summary_from_cells(query: CatalogueQuery) -> dict[str, Any]:
    facets = [_cell_facet(query, name) for name in FACETS]
    cells = matching_cells(query)
    rows = list(cell_sets(cells)[: SET_SCAN_LIMIT + 1])
    if len(rows) > SET_SCAN_LIMIT:
        counted = cells.aggregate(total=Sum("runs"), sets=Count("comparability_key", distinct=True))
        total, set_total, rows = counted["total"] or 0, counted["sets"], rows[:SET_SCAN_LIMIT]
        complete = False
    else:
        total, set_total, complete = sum(row["n"] for row in rows), len(rows), True
    return summary_from_rows(facets, rows, total, set_total, complete)


def summary_from_runs(query: CatalogueQuery) -> dict[str, Any]:
    """For a search: the matching runs read once, grouped by the cell columns; facets and sets counted here.

    One pass over the groups: a group that fails no facet filter counts everywhere; one that fails exactly one
    counts only in that filter's own facet (disjunctive faceting); one that fails two counts nowhere.
    """
    groups = (
        matching_runs(query, facets=False)
        .values(*GROUP_COLUMNS)
        .annotate(n=Count("*"), low=Min("headline_value"), high=Max("headline_value"))
        .order_by()
    )
    wanted = list(facet_filters(query).items())
    columns = {name: column for name, (column, _) in FACETS.items()}
    counts: dict[str, Counter[Any]] = {name: Counter() for name in FACETS}
    sets: dict[str, dict[str, Any]] = {}
    for group in groups:
        failing = [column for column, value in wanted if group[column] != value]
        if len(failing) > 1:
            continue
        for name, column in columns.items():
            if not failing or failing[0] == column:
                counts[name][group[column]] += group["n"]
        if not failing:
            _count_in_set(sets, group)
    facets = [
        counted_facet(query, name, sorted(counts[name].items(), key=lambda item: (-item[1], item[0]))[:FACET_LIMIT])
        for name in FACETS
    ]
    rows = sorted(sets.values(), key=lambda row: (-row["n"], row["comparability_key"]))
    return summary_from_rows(facets, rows, sum(row["n"] for row in rows), len(rows), True)


def _count_in_set(sets: dict[str, dict[str, Any]], group: Mapping[str, Any]) -> None:
    """Add a group of runs to its comparable set's row, shaped like a row of `cell_sets`."""
    key = group["comparability_key"]
    row = sets.get(key)
    if row is None:
        sets[key] = {
            "comparability_key": key,
            "n": group["n"],
            "low": group["low"],
            "high": group["high"],
            "lower": int(group["headline_lower_is_better"]),
            **{name: group[column] for name, column in SET_FIELDS.items()},
        }
        return
    row["n"] += group["n"]  # SET_FIELDS are controlled, so equal within a key: the first group's stand
    row["lower"] = max(row["lower"], int(group["headline_lower_is_better"]))
    if group["low"] is not None:
        row["low"] = group["low"] if row["low"] is None else min(row["low"], group["low"])
        row["high"] = group["high"] if row["high"] is None else max(row["high"], group["high"])


def summary_from_rows(
    facets: list[Facet], rows: Sequence[Mapping[str, Any]], total: int, set_total: int, complete: bool
) -> dict[str, Any]:
    """What is cached per data version: the listed sets by name, and the others' sizes when all were read."""
    sets = [as_set(row) for row in rows[:SETS_LIMIT]]
    others = {row["comparability_key"]: as_set(row) for row in rows[SETS_LIMIT:]} if complete else None
    return {"total": total, "facets": facets, "sets": sets, "others": others, "set_total": set_total}
