"""The overview matrix: comparable sets by configuration (rows) and by workload × scenario (columns, grouped by
phase), each cell the headline of one configuration in one set, with its interval, trust and steady state.

One GROUP BY over the catalogue's summary table (CatalogueCell, registry.models.catalogue) with the catalogue's
filters, never over runs: its cost follows the number of stored combinations, not of runs. The cell's estimate is
the geometric mean of its runs' headline values with a Student t interval on their logarithms (the statistics'
method for one independent value per run, protocol/statistics.py), computed from the cells' log sums; fewer than
statistics.MIN_VALUES runs give the point value and no interval. Cached per data version like the catalogue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from django.core.cache import cache
from django.db.models import IntegerField, Max, Min, Sum
from django.db.models.functions import Cast
from scipy import stats as sps

from protocol import statistics
from registry.selectors.catalogue import (
    CACHE_SECONDS,
    SET_FIELDS,
    CatalogueQuery,
    ComparableSet,
    _as_set,
    _cache_key,
    _cells,
    data_version,
    set_labels,
)

ROW_LIMIT = 60  # configurations shown, most runs first
COLUMN_LIMIT = 40  # workload × scenario columns shown, most runs first (then in phase, workload, scenario order)
ROW_FIELDS = ("accelerator_vendor", "accelerator_model", "accelerator_count")
COLUMN_FIELDS = ("phase", "workload_name", "scenario_kind")
TRUST_ORDER = ("vouched", "imported", "declared", "example")


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
    runs: int
    estimate: Estimate
    steady_state: str  # "yes", "no", "" (not stated)
    trust: tuple[str, ...]  # trust levels of its runs, strongest first
    other_sets: int  # more sets in this row and column (another precision or batch size, say)


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
class Matrix:
    columns: list[MatrixColumn]
    phases: list[tuple[str, int]]  # (phase, how many columns) for the grouped header
    rows: list[MatrixRow]
    row_total: int
    column_total: int
    total: int


def log_estimate(valued: int, log_sum: float, log_sq_sum: float) -> Estimate:
    """Geometric mean and Student t interval on the logs from n, Σ ln x and Σ (ln x)²."""
    if valued < 1:
        return Estimate(None, None, None, 0)
    mean = log_sum / valued
    if valued < statistics.MIN_VALUES:
        return Estimate(math.exp(mean), None, None, valued)
    variance = max(0.0, (log_sq_sum - valued * mean * mean) / (valued - 1))
    half = float(sps.t.ppf(0.5 + statistics.CONFIDENCE / 2, valued - 1)) * math.sqrt(variance / valued)
    return Estimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half), valued)


# Fields that are equal within a comparability key (the contract controls them): read with Min() rather than
# grouped on, so the GROUP BY keys are the row, the set and the trust level only.
_PER_SET = {**{f"s_{name}": column for name, column in SET_FIELDS.items()},
            **{f"c_{column}": column for column in COLUMN_FIELDS}, "steady": "steady_state"}


def _grouped(query: CatalogueQuery) -> list[dict[str, Any]]:
    rows = _cells(query).values(*ROW_FIELDS, "comparability_key", "trust").annotate(
        n=Sum("runs"), valued_n=Sum("valued"), ls=Sum("log_sum"), lsq=Sum("log_sq_sum"),
        low=Min("headline_low"), high=Max("headline_high"),
        lower=Max(Cast("headline_lower_is_better", IntegerField())),
        **{alias: Min(column) for alias, column in _PER_SET.items()}).order_by()
    return [{**row, **{column: row[f"c_{column}"] for column in COLUMN_FIELDS}, "steady_state": row["steady"],
             **{column: row[f"s_{name}"] for name, column in SET_FIELDS.items()}} for row in rows]


def catalogue_matrix(query: CatalogueQuery, *, version: tuple[Any, ...] | None = None) -> Matrix:
    """The matrix for the catalogue's filters (free text aside: the matrix reads only the summary table)."""
    version = version if version is not None else data_version()
    key = _cache_key(version, "matrix", query.filters, query.set_key, query.include_withdrawn)
    cached = cache.get(key)
    if cached is None:
        cached = _matrix(query, version)
        cache.set(key, cached, CACHE_SECONDS)
    return cached  # type: ignore[no-any-return]


def _matrix(query: CatalogueQuery, version: tuple[Any, ...]) -> Matrix:
    # (row, set) -> counts; trust levels merged (a cell row per trust level comes back from the GROUP BY)
    entries: dict[tuple[Any, ...], dict[str, Any]] = {}
    for g in _grouped(query):
        row = tuple(g[f] for f in ROW_FIELDS)
        entry = entries.get((row, g["comparability_key"]))
        if entry is None:
            set_row = {"comparability_key": g["comparability_key"], "n": 0, "low": g["low"], "high": g["high"],
                       "lower": g["lower"], **{name: g[column] for name, column in SET_FIELDS.items()}}
            entry = entries[(row, g["comparability_key"])] = {
                "row": row, "column": tuple(g[f] for f in COLUMN_FIELDS), "set": set_row, "n": 0, "valued": 0,
                "ls": 0.0, "lsq": 0.0, "trust": set(), "steady": g["steady_state"]}
        entry["n"] += g["n"]
        entry["valued"] += g["valued_n"] or 0
        entry["ls"] += g["ls"] or 0.0
        entry["lsq"] += g["lsq"] or 0.0
        entry["trust"].add(g["trust"])
        for bound, pick in (("low", min), ("high", max)):
            if g[bound] is not None:
                old = entry["set"][bound]
                entry["set"][bound] = g[bound] if old is None else pick(old, g[bound])
    row_runs: dict[tuple[Any, ...], int] = {}
    column_runs: dict[tuple[Any, ...], int] = {}
    set_runs: dict[str, int] = {}
    for (row, set_key), e in entries.items():
        row_runs[row] = row_runs.get(row, 0) + e["n"]
        column_runs[e["column"]] = column_runs.get(e["column"], 0) + e["n"]
        set_runs[set_key] = set_runs.get(set_key, 0) + e["n"]
    rows = sorted(row_runs, key=lambda r: (-row_runs[r], r))[:ROW_LIMIT]
    columns = sorted(sorted(column_runs, key=lambda c: (-column_runs[c], c))[:COLUMN_LIMIT])
    # the chosen set per (row, column): the one with most runs in that configuration, then the larger set
    chosen: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for (row, _), e in entries.items():
        chosen.setdefault((row, e["column"]), []).append(e)
    picked = {place: sorted(es, key=lambda e: (-e["n"], -set_runs[e["set"]["comparability_key"]],
                                                e["set"]["comparability_key"]))
              for place, es in chosen.items() if place[0] in rows and place[1] in columns}
    sets = {}
    for es in picked.values():
        key = es[0]["set"]["comparability_key"]
        sets[key] = _as_set({**es[0]["set"], "n": set_runs[key]})
    labels = set_labels(sets.values(), version=version)
    out_rows = []
    for row in rows:
        cells: list[MatrixCell | None] = []
        for column in columns:
            es = picked.get((row, column))
            if not es:
                cells.append(None)
                continue
            e = es[0]
            s = sets[e["set"]["comparability_key"]]
            cells.append(MatrixCell(
                set=replace(s, name=labels[s.key]), runs=e["n"],
                estimate=log_estimate(e["valued"], e["ls"], e["lsq"]), steady_state=e["steady"],
                trust=tuple([t for t in TRUST_ORDER if t in e["trust"]]
                            + sorted(t for t in e["trust"] if t and t not in TRUST_ORDER)),
                other_sets=len(es) - 1))
        out_rows.append(MatrixRow(*row, runs=row_runs[row], cells=cells))
    phases: list[tuple[str, int]] = []
    for column in columns:
        if phases and phases[-1][0] == column[0]:
            phases[-1] = (column[0], phases[-1][1] + 1)
        else:
            phases.append((column[0], 1))
    return Matrix(columns=[MatrixColumn(*c, runs=column_runs[c]) for c in columns], phases=phases, rows=out_rows,
                  row_total=len(row_runs), column_total=len(column_runs), total=sum(row_runs.values()))
