"""The overview matrix: comparable sets by configuration (rows) and by workload × scenario (columns, grouped by
phase), each cell the headline of one configuration in one set, with its interval, trust and steady state.

One GROUP BY over the catalogue's summary table (CatalogueCell, registry.models.catalogue) with the catalogue's
filters, never over runs: its cost follows the number of stored combinations, not of runs. The cell's estimate is
the geometric mean of its runs' headline values with a Student t interval on their logarithms (the statistics'
method for one independent value per run), which protocol.statistics.log_sums_interval computes from the cells'
log sums; fewer than statistics.MIN_VALUES runs give the point value and no interval. Cached per data version
like the catalogue.

Runs are counted as the cells count them: independent evidence only (Submission.objects.independent(): a
measurement once, derived results never). A cell whose runs are all derived or superseded shows their value when
they agree, with no interval, and says how many runs it does not count.

A cell is one configuration, never several pooled: the summary table does not know a run's software settings, so
the (row, set) pairs holding more than one run are read again from the runs (their frameworks and settings, and
headline) and split by configuration (`_by_configuration`), the way a comparison splits its arms. Only those pairs
are read; a set of one run per configuration, as a published round mostly is, costs nothing more.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.core.cache import cache
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import IntegerField, Max, Min, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from protocol import statistics
from protocol.canonical import digest
from protocol.comparability import setting_words
from protocol.decisions import RATE_UNITS
from registry.models import CatalogueCell, Submission
from registry.selectors.catalogue import (
    CACHE_SECONDS,
    SET_FIELDS,
    CatalogueQuery,
    ComparableSet,
    as_set,
    cache_key_for,
    data_version,
    matching_cells,
    matching_runs,
    set_labels,
)

ROW_LIMIT = 60  # configurations shown, most runs first
COLUMN_LIMIT = 40  # workload × scenario columns of the whole matrix (its export), most runs first
# A page's columns: a whole round has dozens of workload × scenario columns, which no screen shows side by side
# (49 in MLPerf Inference v5.1 alone); a page shows this many, in phase, workload, scenario order, and says which.
COLUMNS_PER_PAGE = 5  # what fits beside the filters in a 1,280 px window
ROW_FIELDS = ("accelerator_vendor", "accelerator_model", "accelerator_count")
COLUMN_FIELDS = ("phase", "workload_name", "scenario_kind")
TRUST_ORDER = ("vouched", "imported", "declared", "example")
RowKey = tuple[str, str, int]  # a configuration: ROW_FIELDS, as MatrixRow begins
ColumnKey = tuple[str, str, str]  # a column: COLUMN_FIELDS, as MatrixColumn begins


@dataclass(frozen=True)
class Estimate:
    value: float | None
    ci_low: float | None
    ci_high: float | None
    runs: int  # runs with a positive headline (what the estimate is formed on)


@dataclass(frozen=True)
class MatrixCell:
    """One configuration's runs in one comparable set (the largest set of its column, when several)."""

    set: ComparableSet
    runs: int  # independent runs (a measurement once, derived results never)
    estimate: Estimate
    steady_state: str  # "yes", "no", "" (not stated)
    trust: tuple[str, ...]  # trust levels of its runs, strongest first
    other_sets: int  # more sets or configurations in this row and column (another precision, batch or setting)
    not_counted: int = 0  # runs shown but not independent evidence (derived from another run, or superseded)
    setting: str = ""  # what tells this configuration apart from the others of its row and set ("" when alone)
    # The estimate ÷ the row's accelerators, for a rate headline (protocol.per_accelerator: derived); None otherwise.
    per_accelerator: Estimate | None = None


@dataclass(frozen=True)
class MatrixColumn:
    phase: str
    workload: str
    scenario: str
    runs: int


@dataclass(frozen=True)
class MatrixRow:
    vendor: str
    model: str
    count: int
    runs: int
    cells: list[MatrixCell | None]

    @property
    def label(self) -> str:
        return f"{self.count}× {self.model}" if self.count > 1 else (self.model or "not stated")


@dataclass(frozen=True)
class ColumnPage:
    """One page of the matrix's columns, named by its first and last column ("bert-99 offline")."""

    number: int
    first: str
    last: str
    start: int  # 1-based position of its first column among all columns
    end: int  # ... and of its last


@dataclass(frozen=True)
class Matrix:
    columns: list[MatrixColumn]
    phases: list[tuple[str, int]]  # (phase, how many columns) for the grouped header
    rows: list[MatrixRow]
    row_total: int
    column_total: int
    total: int
    # Paged matrices only (catalogue_matrix's column_page): every page of columns, the one shown, and how many
    # configurations have runs in the shown columns (at most ROW_LIMIT of them are rows).
    column_pages: tuple[ColumnPage, ...] = ()
    column_page: int = 0
    rows_in_page: int = 0

    @property
    def shown_page(self) -> ColumnPage | None:
        return self.column_pages[self.column_page - 1] if self.column_pages else None

    @property
    def columns_elsewhere(self) -> int:
        """Columns not shown (on other pages, or past COLUMN_LIMIT)."""
        return self.column_total - len(self.columns)


def log_estimate(valued: int, log_sum: float, log_sq_sum: float) -> Estimate:
    """A cell's estimate from its runs' n, Σ ln x and Σ (ln x)² (protocol.statistics.log_sums_interval)."""
    return Estimate(*statistics.log_sums_interval(valued, log_sum, log_sq_sum), runs=max(valued, 0))


def _grouped(query: CatalogueQuery) -> list[tuple[Any, ...]]:
    """(vendor, model, count, set key, trust, runs, valued, Σ ln, Σ ln², low, high, lower is better, phase,
    workload, scenario, steady) per configuration, set and trust level, as plain tuples (thousands of rows: no
    dict per row). The column and the steady state are equal within a set and configuration, so read with Min()
    rather than grouped on; the sets' descriptions are read afterwards for the sets shown only (_set_fields)."""
    grouped = (
        matching_cells(query)
        .values(*ROW_FIELDS, "comparability_key", "trust")
        .annotate(
            n=Sum("independent"),
            listed=Sum("runs"),
            valued_n=Sum("valued"),
            ls=Sum("log_sum"),
            lsq=Sum("log_sq_sum"),
            low=Min("headline_low"),
            high=Max("headline_high"),
            lower=Max(Cast("headline_lower_is_better", IntegerField())),
            **{f"c_{column}": Min(column) for column in COLUMN_FIELDS},
            steady=Min("steady_state"),
        )
        .order_by()
        .values_list(
            *ROW_FIELDS,
            "comparability_key",
            "trust",
            "n",
            "listed",
            "valued_n",
            "ls",
            "lsq",
            "low",
            "high",
            "lower",
            *(f"c_{column}" for column in COLUMN_FIELDS),
            "steady",
        )
    )
    # Read through the cursor: the values are plain database types already, and Django's per-row converters
    # cost ~20 ms over the ~6,500 rows of 100k runs (bench/pages.py).
    try:
        sql, params = grouped.query.sql_with_params()
    except EmptyResultSet:  # a filter nothing can match (batch=x): Django compiles no SQL for it
        return []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows: list[tuple[Any, ...]] = cursor.fetchall()
        return rows


def _set_fields(keys: list[str]) -> dict[str, Mapping[str, Any]]:
    """What describes each of these sets (workload, version, precision, batch, metric...): one row per set."""
    rows = (
        CatalogueCell.objects.filter(comparability_key__in=keys)
        .values("comparability_key")
        .annotate(**{name: Min(column) for name, column in SET_FIELDS.items()})
        .order_by()
    )
    return {row["comparability_key"]: row for row in rows}


def catalogue_matrix(
    query: CatalogueQuery, *, version: tuple[Any, ...] | None = None, column_page: int | None = None
) -> Matrix:
    """The matrix for the catalogue's filters (free text aside: the matrix reads only the summary table).

    Without `column_page`: the COLUMN_LIMIT columns with the most runs (what the export writes). With it: that page
    of COLUMNS_PER_PAGE columns (the last page when past it), every column reachable by its page, and as rows the
    configurations with runs in those columns."""
    version = version if version is not None else data_version()
    key = cache_key_for(version, "matrix", query.filters, query.set_key, query.include_withdrawn, column_page)
    cached = cache.get(key)
    if cached is None:
        cached = _matrix(query, version, column_page)
        cache.set(key, cached, CACHE_SECONDS)
    return cached  # type: ignore[no-any-return]


def _matrix(query: CatalogueQuery, version: tuple[Any, ...], column_page: int | None) -> Matrix:
    entries = _by_configuration(query, _entries(_grouped(query)))
    row_runs, column_runs, set_runs = _run_counts(entries)
    pages: tuple[ColumnPage, ...] = ()
    if column_page is None:
        columns = sorted(sorted(column_runs, key=lambda c: (-column_runs[c], c))[:COLUMN_LIMIT])
        candidates = list(row_runs)
    else:
        pages = _column_pages(sorted(column_runs))
        column_page = min(max(column_page, 1), max(len(pages), 1))
        columns = sorted(column_runs)[(column_page - 1) * COLUMNS_PER_PAGE : column_page * COLUMNS_PER_PAGE]
        shown = set(columns)
        candidates = list({e["row"] for e in entries.values() if e["column"] in shown})
    rows = sorted(candidates, key=lambda r: (-row_runs[r], r))[:ROW_LIMIT]
    picked = _picked(entries, set(rows), set(columns), set_runs)
    sets = _shown_sets(picked, set_runs, version)
    return Matrix(
        columns=[MatrixColumn(*c, runs=column_runs[c]) for c in columns],
        phases=_phases(columns),
        rows=[MatrixRow(*row, runs=row_runs[row], cells=_row_cells(row, columns, picked, sets)) for row in rows],
        row_total=len(row_runs),
        column_total=len(column_runs),
        total=sum(row_runs.values()),
        column_pages=pages,
        column_page=column_page or 0,
        rows_in_page=len(candidates),
    )


def _column_pages(columns: list[ColumnKey]) -> tuple[ColumnPage, ...]:
    """The pages of these (sorted) columns, each named by its first and last column."""
    pages: list[ColumnPage] = []
    for start in range(0, len(columns), COLUMNS_PER_PAGE):
        chunk = columns[start : start + COLUMNS_PER_PAGE]
        first, last = (f"{c[1]} {c[2]}" for c in (chunk[0], chunk[-1]))
        pages.append(ColumnPage(len(pages) + 1, first, last, start + 1, start + len(chunk)))
    return tuple(pages)


def _entries(grouped: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """(row, set) -> its counts and sums, the trust levels merged (the GROUP BY returns a row per trust level).
    `_by_configuration` then keys a split entry (row, set, configuration)."""
    entries: dict[tuple[Any, ...], dict[str, Any]] = {}
    for (
        vendor,
        model,
        count,
        key,
        trust,
        n,
        listed,
        valued,
        ls,
        lsq,
        low,
        high,
        lower,
        phase,
        workload,
        scenario,
        steady,
    ) in grouped:
        row = (vendor, model, count)
        entry = entries.get((row, key))
        if entry is None:
            entry = entries[(row, key)] = {
                "row": row,
                "column": (phase, workload, scenario),
                "key": key,
                "low": low,
                "high": high,
                "lower": lower,
                "n": 0,
                "listed": 0,
                "valued": 0,
                "ls": 0.0,
                "lsq": 0.0,
                "trust": set(),
                "steady": steady,
            }
        else:
            entry["low"] = low if entry["low"] is None else entry["low"] if low is None else min(entry["low"], low)
            entry["high"] = (
                high if entry["high"] is None else entry["high"] if high is None else max(entry["high"], high)
            )
        entry["n"] += n
        entry["listed"] += listed
        entry["valued"] += valued or 0
        entry["ls"] += ls or 0.0
        entry["lsq"] += lsq or 0.0
        entry["trust"].add(trust)
    return entries


def _by_configuration(
    query: CatalogueQuery, entries: dict[tuple[Any, ...], dict[str, Any]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The entries holding more than one run, split by configuration (frameworks and software settings): one entry
    per configuration, its sums recomputed from its runs' headlines; the others as they are."""
    pooled = {place for place, e in entries.items() if e["n"] > 1}
    if not pooled:
        return entries
    groups: dict[tuple[Any, ...], dict[str, list[tuple[float | None, str]]]] = {}
    configs: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for vendor, model, count, key, software, settings, value, trust in _pooled_runs(query, {k for _, k in pooled}):
        place = ((vendor, model, count), key)
        if place not in pooled:
            continue
        config = {"software": software, "settings": _parsed(settings)}
        name = digest(config)
        groups.setdefault(place, {}).setdefault(name, []).append((value, trust))
        configs.setdefault(place, {})[name] = config
    out = {place: e for place, e in entries.items() if len(groups.get(place) or ()) < 2}
    for place, members in groups.items():
        if len(members) > 1:
            told = _told_apart(configs[place])
            for name, runs in members.items():
                out[(*place, name)] = _configuration_entry(entries[place], runs, told[name])
    return out


def _pooled_runs(query: CatalogueQuery, keys: set[str]) -> list[tuple[Any, ...]]:
    """(vendor, model, count, set key, frameworks, settings as JSON text, headline, trust) of the runs in these
    sets, with the matrix's filters."""
    rows = (
        matching_runs(replace(query, q=""))
        # as the cells count: a measurement once, derived results never
        .filter(pk__in=Submission.objects.independent().values("pk"), comparability_key__in=keys)
        .annotate(settings=KT("document__software__settings"))
        .values_list(*ROW_FIELDS, "comparability_key", "software_summary", "settings", "headline_value", "trust")
    )
    return list(rows)


def _parsed(settings: Any) -> dict[str, Any]:
    """The settings as the database returns them (JSON text, or already a dict) as a dict; {} when not stated."""
    if isinstance(settings, str):
        try:
            settings = json.loads(settings)
        except ValueError:
            return {}
    return settings if isinstance(settings, dict) else {}


def _told_apart(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Each configuration's words: its frameworks when they differ, then the settings that differ (up to 3), each in
    words ('samples per query 1,024', never 'loadgen.generated_samples_per_query=1024')."""
    software = {c["software"] for c in configs.values()}
    keys = sorted({k for c in configs.values() for k in c["settings"]})
    differing = [k for k in keys if len({json.dumps(c["settings"].get(k)) for c in configs.values()}) > 1]
    out = {}
    for name, c in configs.items():
        parts = [c["software"] or "software not stated"] if len(software) > 1 else []
        parts += [setting_words(k, c["settings"].get(k)) for k in differing[:3]]
        out[name] = ", ".join(parts)
    return out


def _configuration_entry(
    entry: Mapping[str, Any], members: list[tuple[float | None, str]], setting: str
) -> dict[str, Any]:
    """One configuration's share of a (row, set) entry: its runs' count, log sums, range and trust."""
    positive = [v for v, _ in members if v is not None and v > 0 and math.isfinite(v)]
    logs = [math.log(v) for v in positive]
    values = [v for v, _ in members if v is not None]
    return {
        **entry,
        "n": len(members),
        "listed": len(members),  # the split reads independent runs only: none shown uncounted
        "valued": len(positive),
        "ls": sum(logs),
        "lsq": sum(x * x for x in logs),
        "low": min(values) if values else None,
        "high": max(values) if values else None,
        "trust": {t for _, t in members},
        "setting": setting,
    }


def _run_counts(
    entries: dict[tuple[Any, ...], dict[str, Any]],
) -> tuple[dict[RowKey, int], dict[ColumnKey, int], dict[str, int]]:
    """Runs per row, per column and per set."""
    row_runs: dict[RowKey, int] = {}
    column_runs: dict[ColumnKey, int] = {}
    set_runs: dict[str, int] = {}
    for e in entries.values():
        row, set_key = e["row"], e["key"]
        row_runs[row] = row_runs.get(row, 0) + e["n"]
        column_runs[e["column"]] = column_runs.get(e["column"], 0) + e["n"]
        set_runs[set_key] = set_runs.get(set_key, 0) + e["n"]
    return row_runs, column_runs, set_runs


def _picked(
    entries: dict[tuple[Any, ...], dict[str, Any]],
    shown_rows: set[RowKey],
    shown_columns: set[ColumnKey],
    set_runs: dict[str, int],
) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """(row, column) shown -> its sets, the chosen one first: most runs in that configuration, then the larger set."""
    chosen: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for e in entries.values():
        chosen.setdefault((e["row"], e["column"]), []).append(e)
    return {
        place: sorted(es, key=lambda e: (-e["n"], -set_runs[e["key"]], e["key"]))
        for place, es in chosen.items()
        if place[0] in shown_rows and place[1] in shown_columns
    }


def _shown_sets(
    picked: dict[tuple[Any, ...], list[dict[str, Any]]], set_runs: dict[str, int], version: tuple[Any, ...]
) -> dict[str, ComparableSet]:
    """The chosen sets, described and named."""
    described = _set_fields(sorted({es[0]["key"] for es in picked.values()}))
    sets = {}
    for es in picked.values():
        e = es[0]
        sets[e["key"]] = as_set(
            {
                **described[e["key"]],
                "comparability_key": e["key"],
                "n": set_runs[e["key"]],
                "low": e["low"],
                "high": e["high"],
                "lower": e["lower"],
            }
        )
    labels = set_labels(sets.values(), version=version)
    return {key: replace(s, name=labels[s.key]) for key, s in sets.items()}


def _row_cells(
    row: RowKey,
    columns: list[ColumnKey],
    picked: dict[tuple[Any, ...], list[dict[str, Any]]],
    sets: dict[str, ComparableSet],
) -> list[MatrixCell | None]:
    cells: list[MatrixCell | None] = []
    for column in columns:
        es = picked.get((row, column))
        if not es:
            cells.append(None)
            continue
        e = es[0]
        cells.append(
            MatrixCell(
                set=sets[e["key"]],
                runs=e["n"],
                estimate=_cell_estimate(e),
                steady_state=e["steady"],
                trust=tuple(
                    [t for t in TRUST_ORDER if t in e["trust"]]
                    + sorted(t for t in e["trust"] if t and t not in TRUST_ORDER)
                ),
                other_sets=len(es) - 1,
                not_counted=e["listed"] - e["n"],
                setting=e.get("setting", ""),
                per_accelerator=_per_accelerator(_cell_estimate(e), sets[e["key"]], row[2]),
            )
        )
    return cells


def _per_accelerator(estimate: Estimate, described: ComparableSet, count: int) -> Estimate | None:
    """The cell's estimate and interval ÷ the configuration's accelerators (the geometric mean scales exactly), for a
    rate headline; None for a latency or time, or a configuration without an accelerator count."""
    if count <= 0 or described.lower_is_better or described.unit not in RATE_UNITS or estimate.value is None:
        return None
    low, high = estimate.ci_low, estimate.ci_high
    return Estimate(
        estimate.value / count,
        low / count if low is not None else None,
        high / count if high is not None else None,
        estimate.runs,
    )


def _cell_estimate(e: dict[str, Any]) -> Estimate:
    """The estimate over the cell's independent runs; with none, the value its other runs agree on (a derived
    result, say), without an interval."""
    if e["n"] or e["low"] is None or e["low"] != e["high"]:
        return log_estimate(e["valued"], e["ls"], e["lsq"])
    return Estimate(value=e["low"], ci_low=None, ci_high=None, runs=0)


def _phases(columns: list[ColumnKey]) -> list[tuple[str, int]]:
    """(phase, how many columns) for the grouped header; the columns are sorted, so a phase's are adjacent."""
    phases: list[tuple[str, int]] = []
    for column in columns:
        if phases and phases[-1][0] == column[0]:
            phases[-1] = (column[0], phases[-1][1] + 1)
        else:
            phases.append((column[0], 1))
    return phases
