"""The run page's reading of one stored run: its document by section, metrics, caveats, audit entry, neighbours."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protocol import comparability, statistics
from registry.models import AuditEntry, Submission
from registry.selectors.comparisons import comparable_runs

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
