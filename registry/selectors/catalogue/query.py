"""What a catalogue reader asks for and gets back (CatalogueQuery, Facet, ComparableSet, CataloguePage), the
facets and sorts it may ask by, the runs and cells a query matches, and the data version results are cached under.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Exists, F, OuterRef, Q, QuerySet, TextField, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Upper
from django.utils.http import urlencode

from protocol.summary import software_summary
from registry.models import CatalogueCell, Submission, Withdrawal

PAGE_SIZE = 50


CACHE_SECONDS = 600


MAX_TERMS = 5


SEARCH_COLUMNS = ("workload_name", "system_name", "accelerator_model", "submitter")


# URL parameter -> (column, label). Order is the order shown. Columns have the same name on runs and on cells.
FACETS: dict[str, tuple[str, str]] = {
    "phase": ("phase", "Phase"),
    "workload": ("workload_name", "Workload"),
    "scenario": ("scenario_kind", "Scenario"),
    "precision": ("precision_weights", "Precision (weights)"),
    "batch": ("batch_size", "Batch size"),
    "accelerator": ("accelerator_model", "Accelerator"),
    "vendor": ("accelerator_vendor", "Vendor"),
    "software": ("software_summary", "Software (frameworks)"),
    # The overview matrix's filters (also the catalogue's): trust, and MLPerf's round, division and availability.
    "trust": ("trust", "Trust"),
    "round": ("origin_round", "MLPerf round"),
    "division": ("origin_division", "Division"),
    "availability": ("origin_availability", "Availability"),
}


SORTS = {
    "newest": ("Newest first", [F("id").desc()]),
    "headline_desc": ("Headline value, highest first", [F("headline_value").desc(nulls_last=True), F("id").desc()]),
    "headline_asc": ("Headline value, lowest first", [F("headline_value").asc(nulls_last=True), F("id").desc()]),
}
# Figures per accelerator (protocol.per_accelerator, stored beside each run): runs without the figure come last.
PER_ACCELERATOR_SORTS = {
    "per_accelerator": ("per_accelerator_throughput", "Throughput per accelerator"),
    "output_per_accelerator": ("per_accelerator_output_tokens", "Output tokens/s per accelerator"),
    "total_per_accelerator": ("per_accelerator_total_tokens", "Input+output tokens/s per accelerator"),
}
for _name, (_column, _words) in PER_ACCELERATOR_SORTS.items():
    SORTS[f"{_name}_desc"] = (f"{_words}, highest first", [F(_column).desc(nulls_last=True), F("id").desc()])
    SORTS[f"{_name}_asc"] = (f"{_words}, lowest first", [F(_column).asc(nulls_last=True), F("id").desc()])


# What a comparable set is described by: equal within a key (controlled fields), so Min() reads them.
SET_FIELDS = {
    "phase": "phase",
    "workload": "workload_name",
    "version": "workload_version",
    "scenario": "scenario_kind",
    "precision": "precision_weights",
    "batch": "batch_size",
    "metric": "headline_metric",
    "unit": "headline_unit",
}


GROUP_COLUMNS = tuple(
    dict.fromkeys(
        ["comparability_key", *SET_FIELDS.values(), *(c for c, _ in FACETS.values()), "headline_lower_is_better"]
    )
)


@dataclass(frozen=True)
class CatalogueQuery:
    """What the user asked for: facet values by parameter, free text, one comparable set, sort and page."""

    filters: Mapping[str, str] = field(default_factory=dict)
    q: str = ""
    set_key: str = ""
    sort: str = "newest"
    page: int = 1
    include_withdrawn: bool = False


@dataclass(frozen=True)
class FacetValue:
    value: str
    label: str
    count: int
    selected: bool


@dataclass(frozen=True)
class Facet:
    name: str
    label: str
    values: list[FacetValue]
    selected: str


@dataclass(frozen=True)
class ComparableSet:
    """Runs sharing one comparability key: they answer the same question on the system axis."""

    key: str
    name: str  # its question in words: "llama2-70b-99 · Server · fp8 · batch —" (set_labels)
    count: int
    phase: str
    workload: str
    workload_version: str
    scenario: str
    precision: str
    batch_size: int
    metric: str
    unit: str | None
    lower_is_better: bool
    best: float | None

    @property
    def question(self) -> str:
        return (
            f"{self.workload} {self.workload_version} · {self.phase} · {self.scenario} · "
            f"{self.precision} · batch {self.batch_size or '—'}"
        )

    @property
    def permalink(self) -> str:
        """The set's address: its comparability key only, so it does not change with filters."""
        return "/?" + urlencode({"set": self.key})


@dataclass(frozen=True)
class RunRow:
    run: Submission
    set_name: str
    set_size: int


@dataclass(frozen=True)
class CataloguePage:
    query: CatalogueQuery
    total: int
    set_total: int
    facets: list[Facet]
    sets: list[ComparableSet]
    rows: list[RunRow]
    page: int
    pages: int
    selected_set: ComparableSet | None


class UncountedRunsError(Exception):
    """Runs that no catalogue cell counts were read joined to the cells (the summary table needs a rebuild)."""


def software_param(value: str) -> str:
    """The software facet's URL value is the summary string; links made before it was a frameworks JSON object."""
    if value.startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return software_summary(parsed) if isinstance(parsed, dict) else value
    return value


def facet_filters(query: CatalogueQuery, without: str | None = None) -> dict[str, Any]:
    """Facet filters in force as {column: value}; a malformed value matches nothing (None never equals a column)."""
    out: dict[str, Any] = {}
    for name, value in query.filters.items():
        if name == without or not value or name not in FACETS:
            continue
        if name == "batch":
            out["batch_size"] = int(value) if value.isascii() and value.isdigit() else None
        elif name == "software":
            out["software_summary"] = software_param(value)
        else:
            out[FACETS[name][0]] = value
    return out


def as_q(filters: Mapping[str, Any]) -> Q:
    return Q(pk__in=[]) if any(v is None for v in filters.values()) else Q(**filters)


def _search(runs: QuerySet[Submission], q: str) -> QuerySet[Submission]:
    """Every term must appear in one of the searched columns, case-insensitive. On PostgreSQL that is one
    trigram-indexed generated column, the columns' UPPER joined by newlines (migration 0016): a term has no
    whitespace, so it is in the joined text exactly when it is in one of the columns."""
    terms = q.split()[:MAX_TERMS]
    if connection.vendor == "postgresql":
        runs = runs.alias(search_text=RawSQL('"registry_submission"."search_text"', (), output_field=TextField()))
        return runs.filter(*[Q(search_text__contains=Upper(Value(term))) for term in terms])
    condition = Q()
    for term in terms:
        any_column = Q()
        for column in SEARCH_COLUMNS:
            any_column |= Q(**{f"{column}__icontains": term})
        condition &= any_column
    return runs.filter(condition)


def matching_runs(query: CatalogueQuery, *, facets: bool = True) -> QuerySet[Submission]:
    """The runs matching `query` (facet filters left out with facets=False)."""
    runs: QuerySet[Submission] = Submission.objects.all()
    if not query.include_withdrawn:
        # NOT EXISTS plans as an anti-join with a sound row estimate (LEFT JOIN ... IS NULL estimates 1 row).
        runs = runs.filter(~Exists(Withdrawal.objects.filter(submission=OuterRef("pk"))))
    if query.q.strip():
        runs = _search(runs, query.q)
    if query.set_key:
        runs = runs.filter(comparability_key=query.set_key)
    return runs.filter(as_q(facet_filters(query))) if facets else runs


def matching_cells(query: CatalogueQuery, *, without: str | None = None) -> QuerySet[CatalogueCell]:
    """The cells of the runs matching `query` (not for free text), its facet `without` left out."""
    cells = CatalogueCell.objects.all()
    if not query.include_withdrawn:
        cells = cells.filter(withdrawn=False)
    if query.set_key:
        cells = cells.filter(comparability_key=query.set_key)
    return cells.filter(as_q(facet_filters(query, without)))


def data_version() -> tuple[Any, ...]:
    """What identifies the catalogue's data: its newest run and newest withdrawal (two primary-key lookups).

    Runs and withdrawals are append-only (never updated or deleted; triggers enforce it on PostgreSQL) and
    their ids only grow, so equal versions mean equal data and a result cached under a version is exact.
    """
    run = Submission.objects.order_by("-id").values_list("id", "digest").first()
    withdrawal = Withdrawal.objects.order_by("-id").values_list("id", "submission_id").first()
    return (run, withdrawal)


def cache_key_for(version: tuple[Any, ...], *parts: Any) -> str:
    raw = json.dumps([version, *parts], sort_keys=True, default=str)
    return "catalogue:" + hashlib.sha256(raw.encode()).hexdigest()
