"""The procurement catalogue: faceted search over runs, grouped by comparability (the run page: run_page.py).

Where the numbers come from. Facet counts, totals and comparable-set sizes are read from CatalogueCell, a summary
table with one row per combination of the catalogue's facet values (registry.models.catalogue), kept exact in the
same transaction as every new run and withdrawal (registry.services.catalogue). A GROUP BY over cells reads one
row per combination actually stored, not one per run, and never a run's document, so the first request after a
change is as cheap as any. Each facet counts with every filter but its own (disjunctive faceting), so a chosen
value still shows its alternatives. Comparable sets are GROUP BY comparability_key over the same cells; a set's
best headline comes from the cells' headline ranges. The software facet groups on Submission.software_summary
(the frameworks map as one string), a column like the others.

Free text is the exception: the searched columns (system, submitter) are not in cells. A search reads the matching
runs once. On PostgreSQL it matches one generated column (the searched columns' UPPER joined by newlines, with a
trigram index; migration 0016), groups the matching runs by their cell's shape (another generated column: one
uuid per combination of cell columns), joins each group to its cell and counts every facet (each with a FILTER of
the other filters) and the comparable sets in one GROUPING SETS statement over those groups
(`_summary_from_runs_postgres`). Elsewhere the runs are grouped by the cell columns and counted in Python
(`_summary_from_runs`); tests check the two agree. A search matching all of 100k runs: ~185 ms cold on
PostgreSQL (bench/pages.py); ~230 ms with the grouping sets over every run, ~390 ms counted in Python.

Query budget (pinned in tests/registry/web): two primary-key lookups for the data version; then, unless cached
for that version, one GROUP BY over cells per facet and one for the sets (with their sizes, details and the
total), or one grouped read of the matching runs for a search; one page of ids; the page's rows. One more when
more than SET_SCAN_LIMIT sets match (the total and the number of sets) and one more for the sizes of the page's
sets in that case. The results are still cached under the data version (`data_version`): exact, and reused until
the next run or withdrawal, so an unchanged registry answers from the cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    F,
    IntegerField,
    Max,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Sum,
    TextField,
    UUIDField,
    Value,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, Upper
from django.utils.http import urlencode

from protocol import comparability
from protocol.summary import software_summary
from registry.models import CatalogueCell, Submission, Withdrawal
from registry.selectors.submissions import LIST_DEFERRED

logger = logging.getLogger(__name__)

PAGE_SIZE = 50
FACET_LIMIT = 40  # values listed per facet, most frequent first
SETS_LIMIT = 12  # comparable sets listed, largest first
SET_SCAN_LIMIT = 5_000  # sets read at most; beyond, the total and the number of sets are counted separately
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


# ------------------------------------------------------------------------------------------ filters


def _software_param(value: str) -> str:
    """The software facet's URL value is the summary string; links made before it was a frameworks JSON object."""
    if value.startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return software_summary(parsed) if isinstance(parsed, dict) else value
    return value


def _filters(query: CatalogueQuery, without: str | None = None) -> dict[str, Any]:
    """Facet filters in force as {column: value}; a malformed value matches nothing (None never equals a column)."""
    out: dict[str, Any] = {}
    for name, value in query.filters.items():
        if name == without or not value or name not in FACETS:
            continue
        if name == "batch":
            out["batch_size"] = int(value) if value.isascii() and value.isdigit() else None
        elif name == "software":
            out["software_summary"] = _software_param(value)
        else:
            out[FACETS[name][0]] = value
    return out


def _as_q(filters: Mapping[str, Any]) -> Q:
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


def _runs(query: CatalogueQuery, *, facets: bool = True) -> QuerySet[Submission]:
    """The runs matching `query` (facet filters left out with facets=False)."""
    runs = Submission.objects.all()
    if not query.include_withdrawn:
        # NOT EXISTS plans as an anti-join with a sound row estimate (LEFT JOIN ... IS NULL estimates 1 row).
        runs = runs.filter(~Exists(Withdrawal.objects.filter(submission=OuterRef("pk"))))
    if query.q.strip():
        runs = _search(runs, query.q)
    if query.set_key:
        runs = runs.filter(comparability_key=query.set_key)
    return runs.filter(_as_q(_filters(query))) if facets else runs


def _cells(query: CatalogueQuery, *, without: str | None = None) -> QuerySet[CatalogueCell]:
    """The cells of the runs matching `query` (not for free text), its facet `without` left out."""
    cells = CatalogueCell.objects.all()
    if not query.include_withdrawn:
        cells = cells.filter(withdrawn=False)
    if query.set_key:
        cells = cells.filter(comparability_key=query.set_key)
    return cells.filter(_as_q(_filters(query, without)))


# ------------------------------------------------------------------------------------------ facets and sets


def _facet(query: CatalogueQuery, name: str, counted: Iterable[tuple[Any, int]]) -> Facet:
    """A facet from (value, runs) pairs, most frequent first; a selected value is listed even with no run."""
    label = FACETS[name][1]
    selected = query.filters.get(name, "")
    chosen = _software_param(selected) if name == "software" else selected
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
    rows = _cells(query, without=name).values(column).annotate(n=Sum("runs")).order_by("-n", column)[:FACET_LIMIT]
    return _facet(query, name, ((row[column], row["n"]) for row in rows))


def _base_label(row: Mapping[str, Any]) -> str:
    """A set's question in words, from the fields every catalogue reading has: "decoder-small · server · bf16 ·
    batch 8" ("batch —" where no batch size is stated)."""
    return f"{row['workload']} · {row['scenario']} · {row['precision']} · batch {row['batch'] or '—'}"


def _as_set(row: Mapping[str, Any], name: str | None = None) -> ComparableSet:
    lower = bool(row["lower"])
    return ComparableSet(
        key=row["comparability_key"],
        name=name or _base_label(row),
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


def _cell_sets(cells: QuerySet[CatalogueCell]) -> QuerySet[CatalogueCell]:
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


def _summary_from_cells(query: CatalogueQuery) -> dict[str, Any]:
    facets = [_cell_facet(query, name) for name in FACETS]
    cells = _cells(query)
    rows = list(_cell_sets(cells)[: SET_SCAN_LIMIT + 1])
    if len(rows) > SET_SCAN_LIMIT:
        counted = cells.aggregate(total=Sum("runs"), sets=Count("comparability_key", distinct=True))
        total, set_total, rows = counted["total"] or 0, counted["sets"], rows[:SET_SCAN_LIMIT]
        complete = False
    else:
        total, set_total, complete = sum(row["n"] for row in rows), len(rows), True
    return _summary(facets, rows, total, set_total, complete)


def _summary_from_runs(query: CatalogueQuery) -> dict[str, Any]:
    """For a search: the matching runs read once, grouped by the cell columns; facets and sets counted here.

    One pass over the groups: a group that fails no facet filter counts everywhere; one that fails exactly one
    counts only in that filter's own facet (disjunctive faceting); one that fails two counts nowhere.
    """
    groups = (
        _runs(query, facets=False)
        .values(*GROUP_COLUMNS)
        .annotate(n=Count("*"), low=Min("headline_value"), high=Max("headline_value"))
        .order_by()
    )
    wanted = list(_filters(query).items())
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
        _facet(query, name, sorted(counts[name].items(), key=lambda item: (-item[1], item[0]))[:FACET_LIMIT])
        for name in FACETS
    ]
    rows = sorted(sets.values(), key=lambda row: (-row["n"], row["comparability_key"]))
    return _summary(facets, rows, sum(row["n"] for row in rows), len(rows), True)


# One scan on PostgreSQL: each facet's grouping set counted with every filter but its own (FILTER), and the
# comparable sets as one more grouping set. A search matching most of 100k runs took ~390 ms cold when the
# runs were grouped by every cell column and counted in Python; this is the same arithmetic in the database.
_FACET_GROUPING = [column for column, _ in FACETS.values()]
_SET_GROUPING = ["comparability_key", *SET_FIELDS.values()]


def _summary_from_runs_postgres(query: CatalogueQuery) -> dict[str, Any]:
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
        _runs(query, facets=False)
        .order_by()
        .annotate(shape=RawSQL('"registry_submission"."cell_shape"', (), output_field=UUIDField()), gone=withdrawn)
        .values("shape", "gone")
        .annotate(n=Count("*"), low=Min("headline_value"), high=Max("headline_value"))
    )
    sql, params = groups.query.sql_with_params()
    columns = ", ".join(
        f'c."{column}"' for column in dict.fromkeys([*_SET_GROUPING, *_FACET_GROUPING, "headline_lower_is_better"])
    )
    inner = (
        f"SELECT g.n, g.low, g.high, {columns} FROM ({sql}) AS g "  # noqa: S608 (the module's constants)
        f"LEFT JOIN {CatalogueCell._meta.db_table} AS c ON c.cell_shape = g.shape AND c.withdrawn = g.gone"
    )
    try:
        return _summary_grouping_sets(query, (inner, params), count="sum(m.n)", low="m.low", high="m.high")
    except UncountedRunsError:
        logger.error("runs that no catalogue cell counts match a search: run `manage.py rebuild_catalogue`")
        return _summary_from_runs(query)


def _summary_from_cells_postgres(query: CatalogueQuery) -> dict[str, Any]:
    """The same single scan over the cells instead of the runs (sums of their run counts): on PostgreSQL the
    catalogue's 12 facets and its sets cost one pass over the summary table, not 13 GROUP BYs."""
    inner = _cells(CatalogueQuery(set_key=query.set_key, include_withdrawn=query.include_withdrawn)).values(
        *dict.fromkeys(
            [*_SET_GROUPING, *_FACET_GROUPING, "runs", "headline_low", "headline_high", "headline_lower_is_better"]
        )
    )
    return _summary_grouping_sets(
        query, inner.query.sql_with_params(), count="sum(m.runs)", low="m.headline_low", high="m.headline_high"
    )


def _summary_grouping_sets(
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
    filters = _filters(query)

    def condition(without: str | None) -> tuple[str, list[Any]]:
        used = {c: v for c, v in filters.items() if c != without}
        if any(v is None for v in used.values()):
            return "FALSE", []
        return " AND ".join([f'm."{c}" = %s' for c in used] or ["TRUE"]), list(used.values())

    selects, select_params = [], []
    for column in _FACET_GROUPING:
        sql, values = condition(column)
        selects.append(f'{count} FILTER (WHERE {sql}) AS "n_{column}"')
        select_params += values
    every, every_params = condition(None)
    columns = list(dict.fromkeys([*_FACET_GROUPING, *(_SET_GROUPING if with_sets else [])]))
    grouping = ", ".join(f'm."{c}"' for c in columns)
    sets = ", ".join(f'(m."{c}")' for c in _FACET_GROUPING)
    totals, total_params = "", []
    if with_sets:
        sets += ", (" + ", ".join(f'm."{c}"' for c in _SET_GROUPING) + ")"
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

    key_mask = mask(_SET_GROUPING)
    if "comparability_key" in grouped and any(r["gid"] == key_mask and r["comparability_key"] is None for r in rows):
        raise UncountedRunsError
    facets = []
    for name, (column, _) in FACETS.items():
        wanted = mask([column])
        counted = [(r[column], r[f"n_{column}"]) for r in rows if r["gid"] == wanted and r[f"n_{column}"]]
        facets.append(_facet(query, name, sorted(counted, key=lambda item: (-item[1], item[0]))[:FACET_LIMIT]))
    if "comparability_key" not in grouped:  # facets only (catalogue_facets)
        return _summary(facets, [], 0, 0, False)
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
    return _summary(facets, sets, sum(row["n"] for row in sets), len(sets), True)


def _count_in_set(sets: dict[str, dict[str, Any]], group: Mapping[str, Any]) -> None:
    """Add a group of runs to its comparable set's row, shaped like a row of `_cell_sets`."""
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


def _summary(
    facets: list[Facet], rows: list[dict[str, Any]], total: int, set_total: int, complete: bool
) -> dict[str, Any]:
    """What is cached per data version: the listed sets by name, and the others' sizes when all were read."""
    sets = [_as_set(row) for row in rows[:SETS_LIMIT]]
    others = {row["comparability_key"]: _as_set(row) for row in rows[SETS_LIMIT:]} if complete else None
    return {"total": total, "facets": facets, "sets": sets, "others": others, "set_total": set_total}


def data_version() -> tuple[Any, ...]:
    """What identifies the catalogue's data: its newest run and newest withdrawal (two primary-key lookups).

    Runs and withdrawals are append-only (never updated or deleted; triggers enforce it on PostgreSQL) and
    their ids only grow, so equal versions mean equal data and a result cached under a version is exact.
    """
    run = Submission.objects.order_by("-id").values_list("id", "digest").first()
    withdrawal = Withdrawal.objects.order_by("-id").values_list("id", "submission_id").first()
    return (run, withdrawal)


def _cache_key(version: tuple[Any, ...], *parts: Any) -> str:
    raw = json.dumps([version, *parts], sort_keys=True, default=str)
    return "catalogue:" + hashlib.sha256(raw.encode()).hexdigest()


def _page_ids(query: CatalogueQuery, summary: Mapping[str, Any], sort: str, page: int) -> tuple[list[int], list[Any]]:
    """One page of run ids, and the sets of its runs that are not listed (from the summary, or one query)."""
    window = _runs(query).order_by(*SORTS[sort][1]).values_list("id", "comparability_key")
    listed = list(window[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]) if summary["total"] else []
    missing = sorted({key for _, key in listed} - {s.key for s in summary["sets"]})
    if summary["others"] is not None:
        extra = [summary["others"][key] for key in missing if key in summary["others"]]
    elif missing:  # more sets than were read: only the search path never gets here (it reads every set)
        extra = [_as_set(row) for row in _cell_sets(_cells(query).filter(comparability_key__in=missing))]
    else:
        extra = []
    return [pk for pk, _ in listed], extra


def catalogue_summary(query: CatalogueQuery, *, version: tuple[Any, ...] | None = None) -> dict[str, Any]:
    """Facets (with counts), the largest comparable sets and the totals for `query`, cached per data version:
    {"total", "facets", "sets", "others", "set_total"}."""
    version = version if version is not None else data_version()
    summary_key = _cache_key(version, "summary", query.filters, query.q, query.set_key, query.include_withdrawn)
    summary = cache.get(summary_key)
    if summary is None:
        if not query.q.strip() and connection.vendor == "postgresql":
            summary = _summary_from_cells_postgres(query)
        elif not query.q.strip():
            summary = _summary_from_cells(query)
        elif connection.vendor == "postgresql":
            summary = _summary_from_runs_postgres(query)
        else:
            summary = _summary_from_runs(query)
        cache.set(summary_key, summary, CACHE_SECONDS)
    return summary  # type: ignore[no-any-return]


def catalogue_facets(query: CatalogueQuery, *, version: tuple[Any, ...] | None = None) -> list[Facet]:
    """The facets (with counts) for `query` without its comparable sets: the matrix's sidebar. The catalogue's
    cached summary answers when there is one; on PostgreSQL a cold call scans the cells grouped by facet only
    (the sets' grouping is most of the summary's cost, and the matrix has its own)."""
    version = version if version is not None else data_version()
    summary = cache.get(_cache_key(version, "summary", query.filters, query.q, query.set_key, query.include_withdrawn))
    if summary is not None:
        return summary["facets"]  # type: ignore[no-any-return]
    if query.q.strip() or connection.vendor != "postgresql":
        return catalogue_summary(query, version=version)["facets"]  # type: ignore[no-any-return]
    key = _cache_key(version, "facets", query.filters, query.set_key, query.include_withdrawn)
    facets = cache.get(key)
    if facets is None:
        inner = _cells(CatalogueQuery(set_key=query.set_key, include_withdrawn=query.include_withdrawn)).values(
            *dict.fromkeys([*_FACET_GROUPING, "runs", "headline_low", "headline_high", "headline_lower_is_better"])
        )
        facets = _summary_grouping_sets(
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
    page_key = _cache_key(version, "page", sort, page, *filters)
    cached = cache.get(page_key)
    if cached is None:
        cached = _page_ids(query, summary, sort, page)
        cache.set(page_key, cached, CACHE_SECONDS)
    ids, extra = cached
    by_key.update({s.key: s for s in extra})
    labels = set_labels(by_key.values(), version=version)
    by_key = {key: replace(s, name=labels[key]) for key, s in by_key.items()}
    sets = [by_key[s.key] for s in sets]
    found = Submission.objects.defer(*LIST_DEFERRED).select_related("withdrawal").in_bulk(ids) if ids else {}
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


# ------------------------------------------------------------------------------------------ set labels

# The fields that make a question different, named first when two sets would otherwise read the same (and first in
# a refusal): phase, workload, scenario, quality target; then the rest in the contract's order.
ROOT_CAUSE_PREFIXES = (
    "/phase",
    "/workload/name",
    "/workload/version",
    "/workload/task",
    "/scenario/kind",
    "/scenario/quality_target",
    "/metrics/quality/metric",
    "/metrics/quality/target_ratio",
    "/metrics/quality/reference_precision",
    "/scenario",
)
RIVALS_READ = 12  # sets of one base label read to find what separates them; beyond, the key's digits do


def root_cause_order(differences: Iterable[Any]) -> list[Any]:
    """Differences (comparability.FieldDifference or their dicts) with the question-changing fields first, then
    the others in their given order; within the first group, in ROOT_CAUSE_PREFIXES order."""

    def rank(d: Any) -> int:
        pointer = d["pointer"] if isinstance(d, Mapping) else d.pointer
        return next(
            (i for i, p in enumerate(ROOT_CAUSE_PREFIXES) if pointer == p or pointer.startswith(p + "/")),
            len(ROOT_CAUSE_PREFIXES),
        )

    return sorted(differences, key=rank)  # stable: the rest keep the contract's order


def set_labels(sets: Iterable[ComparableSet], *, version: tuple[Any, ...] | None = None) -> dict[str, str]:
    """Each set's question in words, unique across the registry (withdrawn runs and filters included, so a label
    never changes with filters): "decoder-small · server · bf16 · batch 8", and where another set reads the same,
    the controlled field(s) that separate them, with this set's value: "… · conditions.steady_state.reached: no".

    Which base labels several sets share is one DISTINCT read of the cells per data version; for those groups
    only, one run's document per set, checked with the comparability contract to name what differs. Cached per
    data version.
    """
    sets = list(sets)
    if not sets:
        return {}
    version = version if version is not None else data_version()
    cache_key = _cache_key(version, "labels", sorted(s.key for s in sets))
    cached = cache.get(cache_key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    labels = {
        s.key: _base_label(
            {"workload": s.workload, "scenario": s.scenario, "precision": s.precision, "batch": s.batch_size}
        )
        for s in sets
    }
    rivals = _shared_base_labels(version)
    groups = {(s.workload, s.scenario, s.precision, s.batch_size) for s in sets}
    for shape in groups & rivals.keys():
        labels.update(_separated(rivals[shape], labels))
    cache.set(cache_key, labels, CACHE_SECONDS)
    return labels


_SHAPE = ("workload_name", "scenario_kind", "precision_weights", "batch_size")


def _shared_base_labels(version: tuple[Any, ...]) -> dict[tuple[Any, ...], list[str]]:
    """{(workload, scenario, precision, batch): [keys]} for every base label that more than one set shares, over
    all cells (withdrawn included): one DISTINCT read of the cells per data version."""
    cache_key = _cache_key(version, "shared-labels")
    groups = cache.get(cache_key)
    if groups is None:
        found: dict[tuple[Any, ...], list[str]] = {}
        for key, *values in CatalogueCell.objects.values_list("comparability_key", *_SHAPE).distinct():
            found.setdefault(tuple(values), []).append(key)
        groups = {values: sorted(keys) for values, keys in found.items() if len(keys) > 1}
        cache.set(cache_key, groups, CACHE_SECONDS)
    return groups  # type: ignore[no-any-return]


def _separated(keys: list[str], labels: dict[str, str]) -> dict[str, str]:
    """Labels for sets that share a base label: the fewest controlled fields (root causes first) that tell each
    apart from the others, named with this set's value."""
    mine = [k for k in keys if k in labels]
    read = list(dict.fromkeys([*mine, *keys]))[:RIVALS_READ]
    docs = []
    for key in read:
        run = Submission.objects.filter(comparability_key=key).only("document").order_by("id").first()
        docs.append(run.document if run is not None else {})
    differences = root_cause_order(comparability.check(docs, "system").refusals)
    out = {}
    for i, key in enumerate(read):
        if key not in labels:
            continue
        chosen: list[Any] = []
        for d in differences:
            same = [j for j in range(len(read)) if j != i and all(c.values[j] == c.values[i] for c in chosen)]
            if not same:
                break
            if any(d.values[j] != d.values[i] for j in same):
                chosen.append(d)
        words = [f"{d.field}: {d.values[i]}" for d in chosen] or [f"key {key[7:15]}"]
        out[key] = labels[key] + " · " + "; ".join(words)
    for key in mine:
        out.setdefault(key, labels[key] + f" · key {key[7:15]}")  # beyond RIVALS_READ: the key's own digits
    return out
