"""CSV and JSON of what the pages show: a catalogue view, the matrix, a comparison. Every run row carries the run's
id, digest and address, so a spreadsheet keeps the context (decision exports live with decisions).

Exports read through the same selectors as the pages; a catalogue view exports its matching runs in the page's
order, at most EXPORT_LIMIT of them (the file says so when cut).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, cast

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import urlencode

from protocol.per_accelerator import is_mlperf, label_for
from protocol.summary import COLUMNS
from registry.presentation.sentences import ratio_sentences
from registry.presentation.spreadsheet import csv_text
from registry.selectors.catalogue import SORTS, CatalogueQuery, matching_runs
from registry.selectors.matrix import Matrix, MatrixCell, MatrixColumn, MatrixRow

EXPORT_LIMIT = 10_000
FORMATS = ("csv", "json")


def export_format(request: HttpRequest) -> str | None:
    """The file the request asks for with `?format=` (csv or json), or None for the page itself."""
    fmt = request.GET.get("format", "")
    return fmt if fmt in FORMATS else None


def export_links(request: HttpRequest) -> dict[str, str]:
    """Links to the CSV and JSON of the page as it is (its filters kept, the page number dropped)."""
    # A parsed query string's values are strings (django-stubs allow for an empty list).
    params = cast(dict[str, str], {k: v for k, v in request.GET.items() if k not in ("page", "cols", "format") and v})
    return {fmt: "?" + urlencode({**params, "format": fmt}) for fmt in FORMATS}


RUN_COLUMNS = (
    "run",
    "url",
    "digest",
    "workload",
    "workload_version",
    "phase",
    "scenario",
    "precision",
    "batch_size",
    "system",
    "accelerator_count",
    "accelerator_model",
    "accelerator_vendor",
    "software",
    "submitter",
    "trust",
    "mlperf_round",
    "division",
    "availability",
    "headline_metric",
    "headline_value",
    "headline_unit",
    "lower_is_better",
    "comparable_set_url",
    "withdrawn",
    # Figures per accelerator (protocol.per_accelerator), each derived and labelled so; empty when absent.
    "throughput_per_accelerator",
    "throughput_per_accelerator_unit",
    "output_tokens_per_s_per_accelerator",
    "input_output_tokens_per_s_per_accelerator",
    "per_accelerator_label",
)
# The summary columns exported, under their export names (protocol.summary.COLUMNS); RUN_COLUMNS orders them.
_EXPORTED = tuple(c for c in COLUMNS if c.export)
_RUN_FIELDS = ("id", "digest", "trust", "comparability_key", "origin_kind", *(c.name for c in _EXPORTED))


def _run_row(r: Mapping[str, Any], absolute: Callable[[str], str], withdrawn: bool) -> dict[str, Any]:
    out = {c.export: r[c.name] for c in _EXPORTED}
    out.update(run=r["id"], digest=r["digest"], trust=r["trust"], withdrawn=withdrawn)
    out["url"] = absolute(reverse("run", args=[r["id"]]))
    out["comparable_set_url"] = absolute("/?set=" + r["comparability_key"])
    out["throughput_per_accelerator_unit"] = r["per_accelerator_unit"] or None  # no figure, no unit
    out["per_accelerator_label"] = label_for(is_mlperf(r["origin_kind"]))
    return {c: out[c] for c in RUN_COLUMNS}


def catalogue_export(query: CatalogueQuery, absolute: Callable[[str], str]) -> tuple[list[dict[str, Any]], bool]:
    """The runs of a catalogue view (filters, search, set, sort), up to EXPORT_LIMIT; (rows, cut)."""
    sort = query.sort if query.sort in SORTS else "newest"
    runs = matching_runs(query).order_by(*SORTS[sort][1]).values(*_RUN_FIELDS, "withdrawal__id")[: EXPORT_LIMIT + 1]
    rows = [_run_row(r, absolute, r["withdrawal__id"] is not None) for r in runs]
    return rows[:EXPORT_LIMIT], len(rows) > EXPORT_LIMIT


MATRIX_COLUMNS = (
    "configuration",
    "accelerator_vendor",
    "phase",
    "workload",
    "scenario",
    "comparable_set",
    "comparable_set_url",
    "runs_in_cell",
    "estimate",
    "ci_low",
    "ci_high",
    "unit",
    "metric",
    "lower_is_better",
    "steady_state",
    "trust",
    "other_sets_in_cell",
)


def matrix_export(
    matrix: Matrix, query: CatalogueQuery, absolute: Callable[[str], str]
) -> tuple[list[dict[str, Any]], bool]:
    """One row per filled cell, with its runs (id, digest, address) under "runs" (CSV: one line per run)."""
    cells = [
        _matrix_cell(row, column, cell, absolute)
        for row in matrix.rows
        for column, cell in zip(matrix.columns, row.cells, strict=True)
        if cell is not None
    ]
    by_key = {c["_key"]: c for c in cells}
    runs = _matrix_runs(query, {k[0] for k in by_key})
    _attach_runs(by_key, runs, absolute)
    for c in cells:
        del c["_key"]
    return cells, len(runs) > EXPORT_LIMIT


def _attach_runs(
    by_key: Mapping[Any, dict[str, Any]], runs: Iterable[Mapping[str, Any]], absolute: Callable[[str], str]
) -> None:
    """Each run under its cell's "runs", up to EXPORT_LIMIT of them in all."""
    listed = 0
    for r in runs:
        found = by_key.get(
            (r["comparability_key"], r["accelerator_vendor"], r["accelerator_model"], r["accelerator_count"])
        )
        if found is not None and listed < EXPORT_LIMIT:
            found["runs"].append(
                {"run": r["id"], "digest": r["digest"], "url": absolute(reverse("run", args=[r["id"]]))}
            )
            listed += 1


def _matrix_cell(
    row: MatrixRow, column: MatrixColumn, cell: MatrixCell, absolute: Callable[[str], str]
) -> dict[str, Any]:
    """A filled cell's export row, its runs still to come, "_key" matching them to it."""
    e = cell.estimate
    return {
        "configuration": row.label,
        "accelerator_vendor": row.vendor,
        "phase": column.phase,
        "workload": column.workload,
        "scenario": column.scenario,
        "comparable_set": cell.set.name,
        "comparable_set_url": absolute(cell.set.permalink),
        "runs_in_cell": cell.runs,
        "estimate": e.value,
        "ci_low": e.ci_low,
        "ci_high": e.ci_high,
        "unit": cell.set.unit or "",
        "metric": cell.set.metric,
        "lower_is_better": cell.set.lower_is_better,
        "steady_state": {"yes": "reached", "no": "not reached"}.get(cell.steady_state, "not stated"),
        "trust": " ".join(cell.trust),
        "other_sets_in_cell": cell.other_sets,
        "_key": (cell.set.key, row.vendor, row.model, row.count),
        "runs": [],
    }


def _matrix_runs(query: CatalogueQuery, keys: set[str]) -> Collection[Mapping[str, Any]]:
    """The matching runs of the cells' sets, by id, up to one past EXPORT_LIMIT (no query without sets)."""
    if not keys:
        return []
    return (
        matching_runs(query)
        .filter(comparability_key__in=keys)
        .order_by("id")
        .values("id", "digest", "comparability_key", "accelerator_vendor", "accelerator_model", "accelerator_count")[
            : EXPORT_LIMIT + 1
        ]
    )


COMPARISON_COLUMNS = (
    "comparison",
    "comparison_url",
    "comparison_digest",
    "axis",
    "run",
    "url",
    "digest",
    "system",
    "configuration",
    "baseline",
    "headline_metric",
    "headline_value",
    "ci_low",
    "ci_high",
    "unit",
    "caveats",
)


def comparison_export(comparison: Any, runs: Sequence[Any], absolute: Callable[[str], str]) -> dict[str, Any]:
    result = comparison.result
    arms = result.get("arms") or []
    baseline = (result.get("conclusion") or {}).get("baseline", 0)
    url = absolute(reverse("comparison", args=[comparison.pk]))
    rows = _comparison_rows(comparison, url, runs, arms, baseline, absolute)
    return {
        "comparison": comparison.pk,
        "url": url,
        "digest": comparison.digest,
        "axis": comparison.axis,
        "baseline": arms[baseline]["label"] if arms else None,
        "sentences": [s.text for s in ratio_sentences(result)],
        "conclusion": (result.get("conclusion") or {}).get("statement"),
        "runs": rows,
        "pairwise": result.get("pairwise") or [],
    }


def _comparison_rows(
    comparison: Any, url: str, runs: Sequence[Any], arms: Sequence[Any], baseline: int, absolute: Callable[[str], str]
) -> list[dict[str, Any]]:
    arm_of = {i: a for a in arms for i in a.get("runs", [])}
    rows = []
    for i, row in enumerate(comparison.result.get("runs") or []):
        arm = arm_of.get(i) or {}
        rows.append(_comparison_run(comparison, url, runs[i], row, arm, bool(arms) and arm is arms[baseline], absolute))
    return rows


def _comparison_run(
    comparison: Any,
    url: str,
    run: Any,
    row: Mapping[str, Any],
    arm: Mapping[str, Any],
    baseline: bool,
    absolute: Callable[[str], str],
) -> dict[str, Any]:
    """A run's export row in a comparison: the comparison, the run, its configuration and its headline."""
    head = row.get("headline") or {}
    return {
        "comparison": comparison.pk,
        "comparison_url": url,
        "comparison_digest": comparison.digest,
        "axis": comparison.axis,
        "run": run.pk,
        "url": absolute(reverse("run", args=[run.pk])),
        "digest": run.digest,
        "system": run.system_name,
        "configuration": arm.get("label", ""),
        "baseline": baseline,
        "headline_metric": head.get("metric"),
        "headline_value": head.get("value"),
        "ci_low": head.get("ci_low"),
        "ci_high": head.get("ci_high"),
        "unit": head.get("unit"),
        "caveats": "; ".join(c.get("message", "") for c in row.get("caveats") or []),
    }


def respond(
    fmt: str, name: str, *, rows: Iterable[Mapping[str, Any]], columns: Sequence[str], document: Any, cut: bool = False
) -> HttpResponse:
    """A download: CSV of `rows` (a "#" comment line first when cut at EXPORT_LIMIT) or JSON of `document`."""
    if fmt == "json":
        response = HttpResponse(
            json.dumps(document, indent=2, ensure_ascii=False, default=str),
            content_type="application/json; charset=utf-8",
        )
    else:
        preamble = f"# only the first {EXPORT_LIMIT} runs: narrow the view to export the rest\n" if cut else ""
        response = HttpResponse(csv_text(rows, columns, preamble=preamble), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response
