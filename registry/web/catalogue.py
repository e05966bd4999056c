"""The catalogue (runs by what they answer, with facets) and the overview matrix, each with its CSV and JSON."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from protocol import comparability
from registry import policy
from registry.selectors.catalogue import (
    FACETS,
    SORTS,
    CatalogueQuery,
    catalogue_facets,
    catalogue_search,
    data_version,
)
from registry.selectors.matrix import Matrix, catalogue_matrix
from registry.web import exports
from registry.web.forms import CatalogueForm

_Query = dict[str, str | int]  # a query string's parameters, as urlencode takes them


@login_required
@require_GET
def catalogue(request: HttpRequest) -> HttpResponse:
    policy.require(policy.for_request(request), policy.RUN_READ)
    form = CatalogueForm(request.GET)
    query = form.to_query()
    fmt = exports.export_format(request)
    if fmt:
        return _catalogue_download(request, fmt, query)
    page = catalogue_search(query)
    # A parsed query string's values are strings (django-stubs allow for an empty list).
    params = cast(dict[str, str], {k: v for k, v in request.GET.items() if k != "page" and v})
    return render(request, "registry/catalogue.html", _catalogue_context(request, form, query, page, params))


def _catalogue_download(request: HttpRequest, fmt: str, query: CatalogueQuery) -> HttpResponse:
    rows, cut = exports.catalogue_export(query, request.build_absolute_uri)
    return exports.respond(
        fmt,
        "benchreg-catalogue",
        rows=rows,
        columns=exports.RUN_COLUMNS,
        document={"runs": rows, "complete": not cut, "limit": exports.EXPORT_LIMIT},
        cut=cut,
    )


def _catalogue_context(
    request: HttpRequest, form: CatalogueForm, query: CatalogueQuery, page: Any, params: dict[str, str]
) -> dict[str, Any]:
    sort_links = {name: "?" + urlencode({**params, "sort": name}) for name in SORTS}
    return {
        "page": page,
        "form": form,
        "query": query,
        "sorts": [(k, v[0]) for k, v in SORTS.items()],
        "sort_links": sort_links,
        "facet_names": list(FACETS),
        # cast: mypy joins the strings and the page number to dict[str, object].
        "prev_link": "?" + urlencode(cast(_Query, {**params, "page": page.page - 1})) if page.page > 1 else None,
        "next_link": "?" + urlencode(cast(_Query, {**params, "page": page.page + 1}))
        if page.page < page.pages
        else None,
        "axes": comparability.contract().axes,
        "active_filters": _active_filters(page, params),
        "exports": exports.export_links(request),
        "matrix_link": reverse("matrix") + _filters_only(params),
    }


def _filters_only(params: dict[str, str]) -> str:
    """The facet filters of `params` as a query string ("" when none): what the catalogue and the matrix share."""
    kept = {k: v for k, v in params.items() if k in FACETS or k == "withdrawn"}
    return "?" + urlencode(kept) if kept else ""


@login_required
@require_GET
def matrix(request: HttpRequest) -> HttpResponse:
    """The overview: comparable sets by configuration and by workload × scenario, with the catalogue's facets."""
    policy.require(policy.for_request(request), policy.RUN_READ)
    form = CatalogueForm(request.GET)
    query = form.to_query()
    query = type(query)(filters=query.filters, include_withdrawn=query.include_withdrawn)  # no search, set or page
    version = data_version()
    fmt = exports.export_format(request)
    if fmt:  # the whole matrix, not the page of columns on screen
        return _matrix_download(request, fmt, catalogue_matrix(query, version=version), query)
    grid = catalogue_matrix(query, version=version, column_page=_column_page(request))
    params = cast(dict[str, str], {k: v for k, v in request.GET.items() if v})  # strings, as in catalogue()
    return render(request, "registry/matrix.html", _matrix_context(request, form, query, grid, version, params))


def _column_page(request: HttpRequest) -> int:
    """The page of columns asked for (`cols`), 1 when absent or not a number."""
    raw = request.GET.get("cols", "")
    return int(raw) if raw.isdigit() and 0 < len(raw) < 6 else 1


def _matrix_context(
    request: HttpRequest, form: CatalogueForm, query: CatalogueQuery, grid: Matrix, version: Any, params: dict[str, str]
) -> dict[str, Any]:
    return {
        "matrix": grid,
        "form": form,
        "query": query,
        "facets": catalogue_facets(query, version=version),
        "total": grid.total,
        "exports": exports.export_links(request),
        "catalogue_link": reverse("home") + _filters_only(params),
        "active_filters": _matrix_filters(params),
        "column_links": [
            (p, "?" + urlencode({**{k: v for k, v in params.items() if k != "cols"}, "cols": str(p.number)}))
            for p in grid.column_pages
        ],
    }


def _matrix_download(request: HttpRequest, fmt: str, grid: Matrix, query: CatalogueQuery) -> HttpResponse:
    """The matrix's cells: JSON as they are, CSV one line per run (a cell without runs on one line)."""
    cells, cut = exports.matrix_export(grid, query, request.build_absolute_uri)
    lines = [{**{k: v for k, v in c.items() if k != "runs"}, **r} for c in cells for r in (c["runs"] or [{}])]
    return exports.respond(
        fmt,
        "benchreg-matrix",
        rows=lines,
        columns=(*exports.MATRIX_COLUMNS, "run", "digest", "url"),
        document={"cells": cells, "complete": not cut},
        cut=cut,
    )


def _matrix_filters(params: dict[str, str]) -> list[tuple[str, str, str]]:
    """(label, value, link that removes it) for each facet filter in force."""
    return [
        # removing a filter changes the columns: back to their first page
        (label, value, "?" + urlencode({k: v for k, v in params.items() if k not in (name, "cols")}))
        for name, (_, label) in FACETS.items()
        if (value := params.get(name))
    ]


def _active_filters(page: Any, params: dict[str, str]) -> list[tuple[str, str, str]]:
    """(label, value, link that removes it) for each filter in force."""
    out = []
    labels = {name: label for name, (_, label) in FACETS.items()} | {"q": "Search", "set": "Comparable set"}
    for name, value in params.items():
        if name in labels:
            shown = page.selected_set.question if name == "set" and page.selected_set else value
            if name == "software":
                shown = next((v.label for f in page.facets if f.name == name for v in f.values if v.selected), value)
            rest = {k: v for k, v in params.items() if k != name}
            out.append((labels[name], shown, "?" + urlencode(rest)))
    return out
