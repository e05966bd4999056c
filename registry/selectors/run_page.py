"""The run page's reading of one stored run: its document by section, metrics, caveats, audit entry, neighbours."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from protocol import comparability, statistics
from registry.models import AuditEntry, Submission
from registry.presentation.citations import citation_words
from registry.presentation.words import FIELD_HEADINGS, SECTION_TITLES, field_label, measured, unit_of
from registry.selectors.audit_tests import AuditTests, audit_tests
from registry.selectors.comparisons import comparable_runs
from registry.selectors.derivations import DerivedFrom, derived_from

DISTRIBUTION_FIELDS = ("count", "min", "mean", "p50", "p90", "p95", "p99", "p999", "max")


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    rows: list[tuple[str, str]]


@dataclass(frozen=True)
class MetricRow:
    name: str  # as the document names it: "throughput", "energy.average_power_w"
    value: str
    unit: str
    primary: bool
    notes: str = ""  # the metric's other stated fields: "source: nvml"


@dataclass(frozen=True)
class Distribution:
    name: str
    unit: str
    values: list[str]  # in DISTRIBUTION_FIELDS order, "" where absent
    shown: tuple[str, ...] = ()  # the columns some distribution of the run has (RunDetail.distribution_fields)


@dataclass(frozen=True)
class CollectiveRow:
    """One message size of a collective sweep (metrics.collectives.sizes, protocol 1.3), as nccl-tests prints it."""

    size_bytes: str
    count: str
    side: str  # out-of-place, in-place
    time_us: str
    algbw_gbs: str
    busbw_gbs: str
    wrong: str


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
    distribution_fields: tuple[str, ...] = ()  # headings of the columns shown: a column no distribution has is left out
    derived_from: DerivedFrom | None = None  # a run derived from another (MLPerf's inferred results), not measured
    # (document pointer, source file and field) of every figure an importer traced (provenance.origin.fields)
    traced: list[tuple[str, str]] = field(default_factory=list)
    # MLCommons' citations of an imported result ((words, Details link)), one per published table it was refereed by
    citations: list[tuple[str, str]] = field(default_factory=list)
    audit_tests: AuditTests | None = None  # MLPerf's audit (compliance) tests: passed, failed, missing, not judged
    collective_sizes: list[CollectiveRow] = field(default_factory=list)  # a collective sweep's sizes, in order


def _flatten(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [row for key, child in value.items() for row in _flatten(child, (*path, str(key)))]
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        return [row for i, child in enumerate(value) for row in _flatten(child, (*path, str(i)))]
    return [(field_label(path), comparability.display(value))]


def _metrics(metrics: Mapping[str, Any]) -> tuple[list[MetricRow], list[Distribution]]:
    primary = str(metrics.get("primary", ""))
    scalars, distributions = [], []
    for name, value in metrics.items():
        if name == "primary":
            continue
        is_primary = primary.partition(".")[0] == name
        if name == "server_telemetry" and isinstance(value, dict):
            scalars += telemetry_rows(value)
            continue
        if name == "collectives" and isinstance(value, dict):
            scalars += collective_summary_rows(value)  # its sizes are a table of their own (collective_rows)
            continue
        if isinstance(value, dict) and any(k in value for k in ("p50", "p99", "mean")):
            distributions.append(
                Distribution(
                    name,
                    str(value.get("unit", "")),
                    [measured(value[k]) if k in value else "" for k in DISTRIBUTION_FIELDS],
                )
            )
        elif isinstance(value, dict) and ("value" in value or "seconds" in value):
            main = value.get("value", value.get("seconds"))
            unit = str(value.get("unit", "s" if "seconds" in value and "value" not in value else ""))
            rest = ", ".join(
                f"{k}: {measured(v)}"
                for k, v in value.items()
                if k not in ("value", "unit", "seconds" if "value" not in value else "")
                and not isinstance(v, dict | list)
            )
            scalars.append(MetricRow(name, measured(main), unit, is_primary, rest))
        elif isinstance(value, dict):
            # a group of measured fields (energy: joules, average_power_w, source): one row each, with its unit
            notes = ", ".join(f"{k}: {comparability.display(v)}" for k, v in value.items() if isinstance(v, str))
            for key, child in value.items():
                if isinstance(child, int | float) and not isinstance(child, bool):
                    scalars.append(MetricRow(f"{name}.{key}", measured(child), unit_of(key), is_primary, notes))
        else:
            scalars.append(MetricRow(name, measured(value), unit_of(name), is_primary, ""))
    return scalars, distributions


def telemetry_rows(telemetry: Mapping[str, Any]) -> list[MetricRow]:
    """metrics.server_telemetry (1.3) as one row per figure: the engine's, then each GPU's by its id, with the
    sources scraped (URL, scrapes, failures) as every row's notes."""
    sources = [s for s in telemetry.get("sources") or [] if isinstance(s, dict)]
    notes = "; ".join(
        f"{s.get('kind')} {s.get('url')}: {s.get('scrapes')} scrapes, {s.get('failures')} failed" for s in sources
    )
    groups = [("engine", telemetry.get("engine") or {})]
    groups += [(f"GPU {g.get('id')}", g) for g in telemetry.get("accelerators") or [] if isinstance(g, dict)]
    rows = []
    for label, group in groups:
        for key, child in group.items():
            if isinstance(child, int | float) and not isinstance(child, bool):
                unit = "MiB" if "_mib" in key else unit_of(key.removesuffix("_mean").removesuffix("_max"))
                rows.append(MetricRow(f"server_telemetry {label} {key}", measured(child), unit, False, notes))
    return rows


COLLECTIVE_SUMMARY = (
    ("avg_busbw_gbs", "GB/s", "mean bus bandwidth over the sizes, as nccl-tests' 'Avg bus bandwidth'"),
    ("small_message_latency_us", "µs", "the time at the smallest size"),
    ("ranks", "ranks", "n in the bus factor"),
)


def collective_summary_rows(block: Mapping[str, Any]) -> list[MetricRow]:
    """metrics.collectives' summary figures, each with what it is; the headline (bus bandwidth at the largest size)
    is the run's headline above, and every size is in the table below."""
    said = ", ".join(
        f"{k}: {comparability.display(block[k])}"
        for k in ("collective", "dtype", "redop", "time_statistic")
        if k in block
    )
    rows = []
    for key, unit, what in COLLECTIVE_SUMMARY:
        value = block.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            rows.append(MetricRow(f"collectives.{key}", measured(value), unit, False, f"{what}; {said}"))
    return rows


def collective_rows(block: Mapping[str, Any]) -> list[CollectiveRow]:
    """Every size of a collective sweep, in the order measured (nccl-tests' table: out-of-place, then in-place): an
    imported figure as the log printed it, a measured one to four significant digits."""
    rows = []
    for size in block.get("sizes") or []:
        if not isinstance(size, dict):
            continue
        printed = size.get("printed") or {}  # an imported log's own text: shown as printed, every digit
        shown = {
            k: str(printed[k]) if printed.get(k) else measured(size[k]) if size.get(k) is not None else ""
            for k in ("time_us", "algbw_gbs", "busbw_gbs")
        }
        rows.append(
            CollectiveRow(
                comparability.display(size.get("size_bytes")),
                comparability.display(size.get("count")),
                str(size.get("side") or ""),
                shown["time_us"],
                shown["algbw_gbs"],
                shown["busbw_gbs"],
                comparability.display(size.get("wrong")),
            )
        )
    return rows


def _traced(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The document without provenance.origin.fields, and those fields as (pointer, source) rows.

    An importer traces every figure to its source field there (dozens of rows); the page lists them in their own
    table instead of as provenance facts, where each pointer would be folded into a label.
    """
    origin = (doc.get("provenance") or {}).get("origin")
    if not isinstance(origin, dict) or not isinstance(origin.get("fields"), dict):
        return dict(doc), []
    fields = origin["fields"]
    rest = {**doc, "provenance": {**doc["provenance"], "origin": {k: v for k, v in origin.items() if k != "fields"}}}
    return rest, [(str(pointer), comparability.display(source)) for pointer, source in fields.items()]


def run_detail(*, run: Submission, comparable_limit: int = 20) -> RunDetail:
    """Everything the run page shows, read from the stored document: 4 queries besides the run itself."""
    doc, traced = _traced(run.document)
    sections = [Section(key, title, _flatten(doc.get(key) or {})) for key, title in SECTION_TITLES if doc.get(key)]
    metrics, distributions = _metrics(doc.get("metrics") or {})
    keep = [i for i in range(len(DISTRIBUTION_FIELDS)) if any(d.values[i] for d in distributions)]
    distributions = [replace(d, shown=tuple(d.values[i] for i in keep)) for d in distributions]
    caveats = statistics.caveats(doc)
    audit = AuditEntry.objects.filter(kind="run.submitted", subject=run.digest).order_by("seq").first()
    others = comparable_runs(run=run, axis="system")
    comparable = list(others[:comparable_limit])
    total = len(comparable) if len(comparable) < comparable_limit else others.count()
    return RunDetail(
        run=run,
        sections=sections,
        metrics=metrics,
        distributions=distributions,
        steady_state=(doc.get("conditions") or {}).get("steady_state") or {},
        caveats=caveats,
        audit=audit,
        comparable=comparable,
        comparable_total=total,
        raw_json=json.dumps(run.document, indent=2, ensure_ascii=False),
        distribution_fields=tuple(FIELD_HEADINGS.get(DISTRIBUTION_FIELDS[i], DISTRIBUTION_FIELDS[i]) for i in keep),
        derived_from=derived_from(doc),
        traced=traced,
        citations=[(citation_words(c.as_evidence()), c.details) for c in run.citations.order_by("retrieved_at", "pk")],
        audit_tests=audit_tests(doc),
        collective_sizes=collective_rows((doc.get("metrics") or {}).get("collectives") or {}),
    )
