"""A flat, typed summary of a valid document: what the registry indexes and the catalogue shows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import rules
from .per_accelerator import per_accelerator

SOFTWARE_SUMMARY_MAX = 500  # characters; the registry's column is this wide
# PostgreSQL stores a positive integer column as int4: the range on every database, so that a run stored by one
# registry is not refused by another (SQLite's integers are wider).
POSITIVE_INT4 = (0, 2**31 - 1)


@dataclass(frozen=True)
class Column:
    """One summary column, as the registry stores, checks, filters and exports it.

    `kind`: "text", "integer" (positive int4), "float", "boolean" or "datetime". `pointer`: the document field it
    is read from (JSON pointer; "" when computed from several, e.g. the figures per accelerator). `filter`: the
    run list's query parameter (None: not a filter), matched with `lookup`. `export`: its name in the catalogue's
    CSV/JSON export (None: not exported). `indexed`: the registry keeps an index on it (some are made by
    migrations only on PostgreSQL, e.g. the sort indexes of 0007 and 0025, and are not flagged here).
    """

    name: str
    kind: str
    max_length: int | None = None
    pointer: str = ""
    null: bool = False
    filter: str | None = None
    lookup: str = "exact"
    export: str | None = None
    indexed: bool = False
    help: str = ""

    @property
    def limits(self) -> tuple[int, int] | int | None:
        """The (lowest, highest) integer the column holds, or its maximum length; None when it has neither."""
        return POSITIVE_INT4 if self.kind == "integer" else self.max_length


# THE list of summary columns (RunSummary.columns() gives one value per entry, in this order). The registry's
# model declares the same fields (a test holds them equal); its checks on store, API filters, exports, audit
# verify and benches' row fillers read this list, so a column is added here, to RunSummary and in a migration.
COLUMNS: tuple[Column, ...] = (
    Column("protocol_version", "text", 20, "/protocol"),
    Column("phase", "text", 20, "/phase", filter="phase", export="phase", indexed=True),
    Column("workload_name", "text", 200, "/workload/name", filter="workload", export="workload", indexed=True),
    Column("workload_version", "text", 100, "/workload/version", filter="workload_version", export="workload_version"),
    Column("scenario_kind", "text", 40, "/scenario/kind", filter="scenario", export="scenario", indexed=True),
    Column(
        "precision_weights",
        "text",
        20,
        "/precision/weights",
        filter="precision",
        export="precision",
        indexed=True,
        help="weights format, e.g. bf16 or int8",
    ),
    Column("precision_activations", "text", 20, "/precision/activations", filter="activations"),
    Column(
        "batch_size",
        "integer",
        None,
        "/workload/shape/batch_size",
        filter="batch_size",
        export="batch_size",
        indexed=True,
    ),
    Column("system_name", "text", 200, "/system/name", filter="system", export="system", indexed=True),
    Column(
        "accelerator_vendor",
        "text",
        200,
        "/system/accelerators/0/vendor",
        filter="vendor",
        lookup="iexact",
        export="accelerator_vendor",
        indexed=True,
    ),
    Column(
        "accelerator_model",
        "text",
        500,
        "/system/accelerators/0/model",
        filter="accelerator",
        export="accelerator_model",
        indexed=True,
    ),
    Column("accelerator_count", "integer", None, "/system/accelerators/0/count", export="accelerator_count"),
    Column(
        "submitter",
        "text",
        200,
        "/provenance/submitter",
        filter="submitter",
        export="submitter",
        indexed=True,
        help="provenance.submitter as stated in the document",
    ),
    Column("source", "text", 20, "/provenance/source", filter="source"),
    Column("started_at", "datetime", None, "/provenance/started_at", null=True),
    Column("headline_metric", "text", 60, "/metrics/primary", export="headline_metric"),
    Column("headline_value", "float", None, "", null=True, export="headline_value"),
    Column("headline_unit", "text", 20, "", null=True, export="headline_unit"),
    Column("headline_lower_is_better", "boolean", None, "", export="lower_is_better"),
    Column("software_summary", "text", SOFTWARE_SUMMARY_MAX, "/software/frameworks", export="software", indexed=True),
    Column(
        "origin_round",
        "text",
        100,
        "/provenance/origin/round",
        filter="round",
        export="mlperf_round",
        indexed=True,
        help="published round, e.g. v5.1",
    ),
    Column(
        "origin_division",
        "text",
        100,
        "/provenance/origin/division",
        filter="division",
        lookup="iexact",
        export="division",
        indexed=True,
        help="MLPerf division: closed, open or network",
    ),
    Column(
        "origin_category",
        "text",
        100,
        "/provenance/origin/category",
        filter="category",
        lookup="icontains",
        indexed=True,
        help="datacenter or edge (a 'datacenter,edge' system matches both)",
    ),
    Column(
        "origin_availability",
        "text",
        100,
        "/provenance/origin/availability",
        filter="availability",
        lookup="iexact",
        export="availability",
        indexed=True,
        help="available, preview or research",
    ),
    Column("origin_kind", "text", 40, "/provenance/origin/kind"),
    Column(
        "per_accelerator_throughput",
        "float",
        None,
        "",
        null=True,
        filter="min_throughput_per_accelerator",
        lookup="gte",
        export="throughput_per_accelerator",
        help="throughput per accelerator, in its unit",
    ),
    Column("per_accelerator_unit", "text", 20, "/metrics/throughput/unit", export="throughput_per_accelerator_unit"),
    Column(
        "per_accelerator_output_tokens",
        "float",
        None,
        "",
        null=True,
        filter="min_output_tokens_per_accelerator",
        lookup="gte",
        export="output_tokens_per_s_per_accelerator",
        help="output tokens/s per accelerator",
    ),
    Column(
        "per_accelerator_total_tokens",
        "float",
        None,
        "",
        null=True,
        filter="min_total_tokens_per_accelerator",
        lookup="gte",
        export="input_output_tokens_per_s_per_accelerator",
        help="input+output tokens/s per accelerator (as InferenceMAX plots it)",
    ),
    # The serving sweep the run is a level of (scenario.sweep.id, "" for any other run): sweep pages select a
    # sweep's levels on this index instead of reading every run's JSON.
    Column(
        "sweep_id",
        "text",
        100,
        "/scenario/sweep/id",
        filter="sweep",
        indexed=True,
        help="the serving sweep the run is a level of (scenario.sweep.id)",
    ),
)
COLUMN_NAMES = tuple(c.name for c in COLUMNS)
BY_NAME = {c.name: c for c in COLUMNS}


@dataclass(frozen=True)
class Headline:
    """The metric a run is judged by, with which direction is better."""

    metric: str
    value: float | None
    unit: str | None
    lower_is_better: bool


@dataclass(frozen=True)
class RunSummary:
    """The fields users filter and sort on, read from a document that passed the checks."""

    protocol_version: str
    phase: str
    workload_name: str
    workload_version: str
    scenario_kind: str
    precision_weights: str
    precision_activations: str
    batch_size: int
    system_name: str
    accelerator_vendor: str
    accelerator_model: str
    accelerator_count: int
    submitter: str
    source: str
    started_at: datetime | None
    headline: Headline
    software_summary: str = ""
    # Where the run was published (provenance.origin): MLPerf round, division, category (datacenter/edge)
    # and availability (available/preview/research); "" when the document does not say.
    origin_round: str = ""
    origin_division: str = ""
    origin_category: str = ""
    origin_availability: str = ""
    # provenance.origin.kind ("mlperf-inference", "serving-benchmark", ...; "" when not stated): MLPerf results
    # label their figures per accelerator "derived, not an MLPerf metric".
    origin_kind: str = ""
    # Figures per accelerator (protocol.per_accelerator), kept beside the run so lists sort on them: the throughput
    # in its unit, output tokens/s, and input+output tokens/s as InferenceMAX plots it; None when absent.
    per_accelerator_throughput: float | None = None
    per_accelerator_unit: str = ""
    per_accelerator_output_tokens: float | None = None
    per_accelerator_total_tokens: float | None = None
    sweep_id: str = ""

    def columns(self) -> dict[str, Any]:
        # Read field by field, not with dataclasses.asdict: every value is a scalar (or the frozen Headline,
        # spread here), so asdict's deep copy only cost time (a fifth of a submission's checks, issue 42).
        head = self.headline
        spread = {
            "headline_metric": head.metric,
            "headline_value": head.value,
            "headline_unit": head.unit,
            "headline_lower_is_better": head.lower_is_better,
        }
        return {  # in the declared order
            name: spread[name] if name in spread else getattr(self, name) for name in COLUMN_NAMES
        }


def headline(document: dict[str, Any]) -> Headline:
    """The value named by metrics.primary, e.g. 'throughput' or 'latency_ms.p99'."""
    metrics = document["metrics"]
    name, _, field = metrics["primary"].partition(".")
    metric = metrics.get(name) or {}
    if name in rules.DISTRIBUTION_METRICS:
        return Headline(metrics["primary"], metric.get(field or "p50"), metric.get("unit"), True)
    if name == "time_to_quality":
        return Headline(metrics["primary"], metric.get("seconds"), "s", True)
    if name == "collectives":  # since 1.3: the bus bandwidth at the largest size measured, either side
        return Headline(metrics["primary"], largest_busbw(metric), "GB/s", False)
    value = metric.get(field or "value") if isinstance(metric, dict) else None
    return Headline(metrics["primary"], value, metric.get("unit"), name in rules.LOWER_IS_BETTER)


def largest_busbw(block: dict[str, Any]) -> float | None:
    """A collective sweep's headline: the best bus bandwidth at its largest message size (GB/s)."""
    sizes = block.get("sizes") or []
    if not sizes:
        return None
    largest = max(s["size_bytes"] for s in sizes)
    return max(float(s["busbw_gbs"]) for s in sizes if s["size_bytes"] == largest)


def sweep_id(doc: Any) -> str | None:
    """The run's sweep identity (scenario.sweep.id), None for a run that is not a level of a sweep.

    Here rather than in protocol.serving (which re-exports it) because the summary column is read with it."""
    scenario = doc.get("scenario") if isinstance(doc, Mapping) else None
    sweep = scenario.get("sweep") if isinstance(scenario, Mapping) else None
    found = sweep.get("id") if isinstance(sweep, Mapping) else None
    return found if isinstance(found, str) and found else None


def software_summary(frameworks: Any) -> str:
    """The frameworks map as one short canonical string: "torch 2.13.0", "pytorch 2.7.0, vllm 0.9.0".

    Names in code-point order, each with its version ("name" alone when the version is null); "" when none is
    stated. Longer than SOFTWARE_SUMMARY_MAX characters, it is cut there and ends with "…", still a pure function
    of the document, so it can be recomputed and checked from the canonical text.
    """
    if not isinstance(frameworks, dict) or not frameworks:
        return ""
    text = ", ".join(name if version is None else f"{name} {version}" for name, version in sorted(frameworks.items()))
    return text if len(text) <= SOFTWARE_SUMMARY_MAX else text[: SOFTWARE_SUMMARY_MAX - 1] + "…"


def summarize(document: dict[str, Any]) -> RunSummary:
    """Summarise a document that passed `check` (it assumes the schema holds)."""
    accelerators = document["system"]["accelerators"]
    first = accelerators[0] if accelerators else None
    cpu = (document["system"].get("host") or {}).get("cpu_model")
    started = document["provenance"].get("started_at")
    return RunSummary(
        protocol_version=document["protocol"].split("/", 1)[1],
        phase=document["phase"],
        workload_name=document["workload"]["name"],
        workload_version=document["workload"]["version"],
        scenario_kind=document["scenario"]["kind"],
        precision_weights=document["precision"]["weights"],
        precision_activations=document["precision"]["activations"],
        batch_size=document["workload"]["shape"]["batch_size"],
        system_name=document["system"]["name"],
        # A CPU-only system is summarised by its host CPU, so "accelerator" filters still find it.
        accelerator_vendor=first["vendor"] if first else "CPU",
        accelerator_model=first["model"] if first else (cpu or "unknown CPU"),
        accelerator_count=sum(a["count"] for a in accelerators),
        submitter=document["provenance"]["submitter"],
        source=document["provenance"]["source"],
        started_at=datetime.fromisoformat(started.replace("Z", "+00:00")) if started else None,
        headline=headline(document),
        software_summary=software_summary((document.get("software") or {}).get("frameworks")),
        **_origin(document["provenance"].get("origin")),
        **_per_accelerator(document),
        sweep_id=sweep_id(document) or "",
    )


def _origin(origin: Any) -> dict[str, Any]:
    """The publication facets of provenance.origin, each cut to its column width (100), and its kind."""
    origin = origin if isinstance(origin, dict) else {}
    return {
        **{
            f"origin_{key}": str(origin.get(key) or "")[:100]
            for key in ("round", "division", "category", "availability")
        },
        "origin_kind": str(origin.get("kind") or "")[:40],
    }


def _per_accelerator(document: dict[str, Any]) -> dict[str, Any]:
    figures = per_accelerator(document)
    return {
        "per_accelerator_throughput": figures.throughput,
        "per_accelerator_unit": figures.unit,
        "per_accelerator_output_tokens": figures.output_tokens,
        "per_accelerator_total_tokens": figures.total_tokens,
    }
