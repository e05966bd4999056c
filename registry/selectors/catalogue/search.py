"""The catalogue's reads: `catalogue_summary` (facets, sets, totals), `catalogue_facets` (the matrix's
sidebar) and `catalogue_search` (all of it and one page of runs), each cached under the data version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.core.cache import cache
from django.db import connection

from registry.models import Submission
from registry.selectors.derivations import with_derivation
from registry.selectors.submissions import LIST_DEFERRED

from . import counts, postgres
from .counts import as_set, cell_sets
from .labels import set_labels
from .query import (
    CACHE_SECONDS,
    PAGE_SIZE,
    SORTS,
    CataloguePage,
    CatalogueQuery,
    Facet,
    RunRow,
    cache_key_for,
    data_version,
    matching_cells,
    matching_runs,
)


def _page_ids(query: CatalogueQuery, summary: Mapping[str, Any], sort: str, page: int) -> tuple[list[int], list[Any]]:
    """One page of run ids, and the sets of its runs that are not listed (from the summary, or one query)."""
    window = matching_runs(query).order_by(*SORTS[sort][1]).values_list("id", "comparability_key")
    listed = list(window[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]) if summary["total"] else []
    missing = sorted({key for _, key in listed} - {s.key for s in summary["sets"]})
    if summary["others"] is not None:
        extra = [summary["others"][key] for key in missing if key in summary["others"]]
    elif missing:  # more sets than were read: only the search path never gets here (it reads every set)
        extra = [as_set(row) for row in cell_sets(matching_cells(query).filter(comparability_key__in=missing))]
    else:
        extra = []
    return [pk for pk, _ in listed], extra


def catalogue_summary(query: CatalogueQuery, *, version: tuple[Any, ...] | None = None) -> dict[str, Any]:
    """Facets (with counts), the largest comparable sets and the totals for `query`, cached per data version:
    {"total", "facets", "sets", "others", "set_total"}."""
    version = version if version is not None else data_version()
    summary_key = cache_key_for(version, "summary", query.filters, query.q, query.set_key, query.include_withdrawn)
    summary = cache.get(summary_key)
    if summary is None:
        if not query.q.strip() and connection.vendor == "postgresql":
            summary = postgres.summary_from_cells(query)
        elif not query.q.strip():
            summary = counts.summary_from_cells(query)
        elif connection.vendor == "postgresql":
            summary = postgres.summary_from_runs(query)
        else:
            summary = counts.summary_from_runs(query)
        cache.set(summary_key, summary, CACHE_SECONDS)
    return summary  # type: ignore[no-any-return]


def catalogue_facets(query: CatalogueQuery, *, version: tuple[Any, ...] | None = None) -> list[Facet]:
    """The facets (with counts) for `query` without its comparable sets: the matrix's sidebar. The catalogue's
    cached summary answers when there is one; on PostgreSQL a cold call scans the cells grouped by facet only
    (the sets' grouping is most of the summary's cost, and the matrix has its own)."""
    version = version if version is not None else data_version()
    summary = cache.get(
        cache_key_for(version, "summary", query.filters, query.q, query.set_key, query.include_withdrawn)
    )
    if summary is not None:
        return summary["facets"]  # type: ignore[no-any-return]
    if query.q.strip() or connection.vendor != "postgresql":
        return catalogue_summary(query, version=version)["facets"]  # type: ignore[no-any-return]
    key = cache_key_for(version, "facets", query.filters, query.set_key, query.include_withdrawn)
    facets = cache.get(key)
    if facets is None:
        inner = matching_cells(CatalogueQuery(set_key=query.set_key, include_withdrawn=query.include_withdrawn)).values(
            *dict.fromkeys(
                [*postgres.FACET_GROUPING, "runs", "headline_low", "headline_high", "headline_lower_is_better"]
            )
        )
        facets = postgres.summary_grouping_sets(
            query,
            inner.query.sql_with_params(),
            count="sum(m.runs)",
            low="m.headline_low",
            high="m.headline_high",
            with_sets=False,
        )["facets"]
        cache.set(key, facets, CACHE_SECONDS)
    return facets  # type: ignore[no-any-return]


def catalogue_search(query: CatalogueQuery) -> CataloguePage:
    """Facets, comparable sets and one page of runs for `query`, in a fixed number of queries.

    Counts come from the catalogue's summary table (or, for a search, one grouped read of the matching runs);
    they are also cached under the data version, so an unchanged registry answers repeated requests from the
    cache. The cached values are exact, never stale.
    """
    version = data_version()
    filters = [query.filters, query.q, query.set_key, query.include_withdrawn]
    summary = catalogue_summary(query, version=version)
    total, sets = summary["total"], summary["sets"]
    by_key = {s.key: s for s in sets}

    pages = max(1, math.ceil(total / PAGE_SIZE))
    page = min(max(query.page, 1), pages)
    sort = query.sort if query.sort in SORTS else "newest"
    page_key = cache_key_for(version, "page", sort, page, *filters)
    cached = cache.get(page_key)
    if cached is None:
        cached = _page_ids(query, summary, sort, page)
        cache.set(page_key, cached, CACHE_SECONDS)
    ids, extra = cached
    by_key.update({s.key: s for s in extra})
    labels = set_labels(by_key.values(), version=version)
    by_key = {key: replace(s, name=labels[key]) for key, s in by_key.items()}
    sets = [by_key[s.key] for s in sets]
    rows_read = with_derivation(Submission.objects.defer(*LIST_DEFERRED).select_related("withdrawal"))
    found = rows_read.in_bulk(ids) if ids else {}
    runs = [found[pk] for pk in ids if pk in found]
    rows = [RunRow(r, by_key[r.comparability_key].name, by_key[r.comparability_key].count) for r in runs]
    selected = by_key.get(query.set_key) if query.set_key else None
    return CataloguePage(
        query=query,
        total=total,
        set_total=summary["set_total"],
        facets=summary["facets"],
        sets=sets,
        rows=rows,
        page=page,
        pages=pages,
        selected_set=selected,
    )
