"""The procurement catalogue: faceted search over runs, grouped by comparability, and the run page's reading.

Query budget (pinned in tests/registry/web): two primary-key lookups for the data version; then, unless cached
for that version, one count, one GROUP BY per facet over indexed columns, one GROUP BY comparability_key for the
set sizes and one for the listed sets' details, one page of ids; then the page's rows and the sizes of their
sets not listed — a fixed number whatever is stored. Each facet counts with every filter but its own
(disjunctive faceting), so a chosen value still shows its alternatives.

Counting 100k runs per facet costs tens of milliseconds per GROUP BY on PostgreSQL, so the summary and each
page's ids are cached under the data version (see `data_version`): exact, and recomputed only after a new run
or withdrawal. A summary table of facet cells maintained on insert would make the first request as cheap.

The software facet reads `document -> software -> frameworks` (JSON), which means reading every matching
document; it is only computed once the other filters have narrowed the result to SOFTWARE_FACET_MAX runs.
An indexed `software_summary` column on Submission would lift that limit.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Exists, F, IntegerField, Max, Min, OuterRef, Q, QuerySet
from django.db.models.functions import Cast

from protocol import comparability, statistics
from registry.models import AuditEntry, Submission, Withdrawal
from registry.selectors.comparisons import comparable_runs
from registry.selectors.submissions import LIST_DEFERRED

PAGE_SIZE = 50
FACET_LIMIT = 40  # values listed per facet, most frequent first
SETS_LIMIT = 12  # comparable sets listed, largest first
SET_SCAN_LIMIT = 5_000  # set sizes read at most; beyond, the number of sets is counted separately
CACHE_SECONDS = 600
SOFTWARE_FACET_MAX = 5_000
MAX_TERMS = 5
SEARCH_COLUMNS = ("workload_name", "system_name", "accelerator_model", "submitter")
SOFTWARE = "document__software__frameworks"

# URL parameter -> (column, label). Order is the order shown.
FACETS: dict[str, tuple[str, str]] = {
    "phase": ("phase", "Phase"),
    "workload": ("workload_name", "Workload"),
    "scenario": ("scenario_kind", "Scenario"),
    "precision": ("precision_weights", "Precision (weights)"),
    "batch": ("batch_size", "Batch size"),
    "accelerator": ("accelerator_model", "Accelerator"),
    "vendor": ("accelerator_vendor", "Vendor"),
    "software": (SOFTWARE, "Software (frameworks)"),
}
SORTS = {
    "newest": ("Newest first", [F("id").desc()]),
    "headline_desc": ("Headline value, highest first",
                      [F("headline_value").desc(nulls_last=True), F("id").desc()]),
    "headline_asc": ("Headline value, lowest first",
                     [F("headline_value").asc(nulls_last=True), F("id").desc()]),
}


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
    unavailable: str = ""  # why the facet is not listed (software on a large result)


@dataclass(frozen=True)
class ComparableSet:
    """Runs sharing one comparability key: they answer the same question on the system axis."""

    key: str
    name: str  # "Set A"
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
        return (f"{self.workload} {self.workload_version} · {self.phase} · {self.scenario} · "
                f"{self.precision} · batch {self.batch_size}")


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


def _software_value(raw: Any) -> tuple[str, str]:
    """(URL value, label) of a frameworks object; JSON on SQLite comes back as text."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return raw, raw
    if not isinstance(raw, dict) or not raw:
        return "", "not stated"
    value = json.dumps(dict(sorted(raw.items())), separators=(",", ":"))
    return value, ", ".join(f"{k} {v}" for k, v in sorted(raw.items()))


def _filter_for(name: str, value: str) -> Q | None:
    column = FACETS[name][0]
    if name == "batch":
        return Q(batch_size=int(value)) if value.isdigit() else Q(pk__in=[])
    if name == "software":
        try:
            parsed = json.loads(value)
        except ValueError:
            return Q(pk__in=[])
        if not isinstance(parsed, dict):
            return Q(pk__in=[])
        return Q(**{SOFTWARE: parsed})
    return Q(**{column: value})


def _search(q: str) -> Q:
    """Every term must appear in one of the searched columns (case-insensitive)."""
    condition = Q()
    for term in q.split()[:MAX_TERMS]:
        any_column = Q()
        for column in SEARCH_COLUMNS:
            any_column |= Q(**{f"{column}__icontains": term})
        condition &= any_column
    return condition


def _base(query: CatalogueQuery, *, without: str | None = None) -> QuerySet[Submission]:
    runs = Submission.objects.all()
    if not query.include_withdrawn:
        # NOT EXISTS plans as an anti-join with a sound row estimate (LEFT JOIN ... IS NULL estimates 1 row).
        runs = runs.filter(~Exists(Withdrawal.objects.filter(submission=OuterRef("pk"))))
    if query.q.strip():
        runs = runs.filter(_search(query.q))
    if query.set_key:
        runs = runs.filter(comparability_key=query.set_key)
    for name, value in query.filters.items():
        if name != without and value and name in FACETS:
            runs = runs.filter(_filter_for(name, value))
    return runs


def _facet(query: CatalogueQuery, name: str, total: int) -> Facet:
    column, label = FACETS[name]
    selected = query.filters.get(name, "")
    if name == "software" and total > SOFTWARE_FACET_MAX and not selected:
        return Facet(name, label, [], selected,
                     unavailable=f"Narrow the results to {SOFTWARE_FACET_MAX:,} runs or fewer to list versions.")
    rows = (_base(query, without=name).values(column).annotate(n=Count("*")).order_by("-n", column)[:FACET_LIMIT])
    values = []
    for row in rows:
        raw = row[column]
        if name == "software":
            value, shown = _software_value(raw)
        else:
            value, shown = str(raw), str(raw)
        values.append(FacetValue(value, shown, row["n"], value == selected))
    if selected and not any(v.selected for v in values):
        shown = _software_value(selected)[1] if name == "software" else selected
        values.insert(0, FacetValue(selected, shown, 0, True))
    return Facet(name, label, values, selected)


def _sets(runs: QuerySet[Submission], limit: int, keys: list[str] | None = None) -> list[dict[str, Any]]:
    """One GROUP BY comparability_key. Controlled fields are equal within a key, so Min() reads them."""
    if keys is not None:
        runs = runs.filter(comparability_key__in=keys)
    grouped = runs.values("comparability_key").annotate(
        n=Count("*"), phase=Min("phase"), workload=Min("workload_name"), version=Min("workload_version"),
        scenario=Min("scenario_kind"), precision=Min("precision_weights"), batch=Min("batch_size"),
        metric=Min("headline_metric"), unit=Min("headline_unit"), high=Max("headline_value"),
        low=Min("headline_value"),
        lower=Max(Cast("headline_lower_is_better", IntegerField())),  # PostgreSQL has no MAX(boolean)
    ).order_by("-n", "comparability_key")
    return list(grouped[:limit])


def _set_name(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return f"Set {letters}"


def _as_set(row: Mapping[str, Any], name: str) -> ComparableSet:
    lower = bool(row["lower"])
    return ComparableSet(key=row["comparability_key"], name=name, count=row["n"], phase=row["phase"],
                         workload=row["workload"], workload_version=row["version"], scenario=row["scenario"],
                         precision=row["precision"], batch_size=row["batch"], metric=row["metric"],
                         unit=row["unit"], lower_is_better=lower, best=row["low"] if lower else row["high"])


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


def _summary(query: CatalogueQuery, base: QuerySet[Submission]) -> dict[str, Any]:
    """Total, facets and the largest comparable sets: the expensive part, cached per data version."""
    total = base.count()
    facets = [_facet(query, name, total) for name in FACETS]
    counts = list(base.values("comparability_key").annotate(n=Count("*"))
                  .order_by("-n", "comparability_key")[:SET_SCAN_LIMIT])
    set_total = len(counts) if len(counts) < SET_SCAN_LIMIT else base.values("comparability_key").distinct().count()
    top = [row["comparability_key"] for row in counts[:SETS_LIMIT]]
    details = {row["comparability_key"]: row for row in _sets(base, SETS_LIMIT, keys=top)} if top else {}
    sets = [_as_set(details[key], _set_name(i)) for i, key in enumerate(top)]
    return {"total": total, "facets": facets, "sets": sets, "set_total": set_total}


def catalogue_search(query: CatalogueQuery) -> CataloguePage:
    """Facets, comparable sets and one page of runs for `query`, in a fixed number of queries.

    The summary (counts, facets, sets) and the page's run ids are cached under the data version, so they are
    computed once per change of the data (a new run or withdrawal), not once per request; the cached values are
    exact, never stale.
    """
    base = _base(query)
    version = data_version()
    filters = [query.filters, query.q, query.set_key, query.include_withdrawn]
    summary_key = _cache_key(version, "summary", *filters)
    summary = cache.get(summary_key)
    if summary is None:
        summary = _summary(query, base)
        cache.set(summary_key, summary, CACHE_SECONDS)
    total, sets = summary["total"], summary["sets"]
    by_key = {s.key: s for s in sets}

    pages = max(1, math.ceil(total / PAGE_SIZE))
    page = min(max(query.page, 1), pages)
    sort = query.sort if query.sort in SORTS else "newest"
    page_key = _cache_key(version, "page", sort, page, *filters)
    cached = cache.get(page_key)
    if cached is None:
        window = base.order_by(*SORTS[sort][1]).values_list("id", "comparability_key")
        listed = list(window[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]) if total else []
        missing = sorted({key for _, key in listed} - by_key.keys())
        # Sets of this page's runs beyond the listed ones: their sizes, in one more query.
        extra = [_as_set(row, f"Set {row['comparability_key'][7:13]}")
                 for row in (_sets(base, len(missing), keys=missing) if missing else [])]
        cached = ([pk for pk, _ in listed], extra)
        cache.set(page_key, cached, CACHE_SECONDS)
    ids, extra = cached
    by_key.update({s.key: s for s in extra})
    found = Submission.objects.defer(*LIST_DEFERRED).select_related("withdrawal").in_bulk(ids) if ids else {}
    runs = [found[pk] for pk in ids if pk in found]
    rows = [RunRow(r, by_key[r.comparability_key].name, by_key[r.comparability_key].count) for r in runs]
    selected = by_key.get(query.set_key) if query.set_key else None
    return CataloguePage(query=query, total=total, set_total=summary["set_total"], facets=summary["facets"],
                         sets=sets, rows=rows, page=page, pages=pages, selected_set=selected)


# ------------------------------------------------------------------------------------------ the run page

SECTIONS = (("workload", "Workload"), ("scenario", "Scenario"), ("precision", "Precision"),
            ("system", "System"), ("software", "Software"), ("conditions", "Conditions"),
            ("provenance", "Provenance"))
DISTRIBUTION_FIELDS = ("count", "min", "mean", "p50", "p90", "p95", "p99", "p999", "max")


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    rows: list[tuple[str, str]]


@dataclass(frozen=True)
class MetricRow:
    name: str
    value: str
    unit: str
    primary: bool


@dataclass(frozen=True)
class Distribution:
    name: str
    unit: str
    values: list[str]  # in DISTRIBUTION_FIELDS order, "" where absent


@dataclass(frozen=True)
class RunDetail:
    run: Submission
    sections: list[Section]
    metrics: list[MetricRow]
    distributions: list[Distribution]
    steady_state: dict[str, Any]
    caveats: list[Any]
    audit: AuditEntry | None
    comparable: list[Submission]
    comparable_total: int
    raw_json: str


def _label(path: tuple[str, ...]) -> str:
    parts = []
    for part in path:
        if part.isdigit():
            parts.append(f"#{int(part) + 1}")
        else:
            parts.append(part.replace("_", " "))
    return " › ".join(parts)


def _flatten(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [row for key, child in value.items() for row in _flatten(child, (*path, str(key)))]
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        return [row for i, child in enumerate(value) for row in _flatten(child, (*path, str(i)))]
    return [(_label(path), comparability.display(value))]


def _metrics(metrics: Mapping[str, Any]) -> tuple[list[MetricRow], list[Distribution]]:
    primary = str(metrics.get("primary", ""))
    scalars, distributions = [], []
    for name, value in metrics.items():
        if name == "primary":
            continue
        if isinstance(value, dict) and any(k in value for k in ("p50", "p99", "mean")):
            distributions.append(Distribution(name, str(value.get("unit", "")), [
                comparability.display(value[k]) if k in value else "" for k in DISTRIBUTION_FIELDS]))
        elif isinstance(value, dict):
            main = value.get("value", value.get("seconds"))
            rest = ", ".join(f"{k.replace('_', ' ')} {comparability.display(v)}" for k, v in value.items()
                             if k not in ("value", "unit") and not isinstance(v, dict | list))
            shown = comparability.display(main) if main is not None else rest
            scalars.append(MetricRow(name.replace("_", " "), shown + (f" ({rest})" if main is not None and rest
                                                                      else ""),
                                     str(value.get("unit", "s" if "seconds" in value else "")),
                                     primary.partition(".")[0] == name))
        else:
            scalars.append(MetricRow(name.replace("_", " "), comparability.display(value), "", False))
    return scalars, distributions


def run_detail(*, run: Submission, comparable_limit: int = 20) -> RunDetail:
    """Everything the run page shows, read from the stored document: 3 queries besides the run itself."""
    doc = run.document
    sections = [Section(key, title, _flatten(doc.get(key) or {})) for key, title in SECTIONS if doc.get(key)]
    metrics, distributions = _metrics(doc.get("metrics") or {})
    caveats = statistics.caveats(doc)
    audit = AuditEntry.objects.filter(kind="run.submitted", subject=run.digest).order_by("seq").first()
    others = comparable_runs(run=run, axis="system")
    comparable = list(others[:comparable_limit])
    total = len(comparable) if len(comparable) < comparable_limit else others.count()
    return RunDetail(run=run, sections=sections, metrics=metrics, distributions=distributions,
                     steady_state=(doc.get("conditions") or {}).get("steady_state") or {}, caveats=caveats,
                     audit=audit, comparable=comparable, comparable_total=total,
                     raw_json=json.dumps(doc, indent=2, ensure_ascii=False))
