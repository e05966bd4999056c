"""A flat, typed summary of a valid document: what the registry indexes and the catalogue shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from . import rules
from .per_accelerator import per_accelerator

SOFTWARE_SUMMARY_MAX = 500  # characters; the registry's column is this wide


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

    def columns(self) -> dict[str, Any]:
        data = asdict(self)
        headline = data.pop("headline")
        data.update(
            headline_metric=headline["metric"],
            headline_value=headline["value"],
            headline_unit=headline["unit"],
            headline_lower_is_better=headline["lower_is_better"],
        )
        return data


def headline(document: dict[str, Any]) -> Headline:
    """The value named by metrics.primary, e.g. 'throughput' or 'latency_ms.p99'."""
    metrics = document["metrics"]
    name, _, field = metrics["primary"].partition(".")
    metric = metrics.get(name) or {}
    if name in rules.DISTRIBUTION_METRICS:
        return Headline(metrics["primary"], metric.get(field or "p50"), metric.get("unit"), True)
    if name == "time_to_quality":
        return Headline(metrics["primary"], metric.get("seconds"), "s", True)
    value = metric.get(field or "value") if isinstance(metric, dict) else None
    return Headline(metrics["primary"], value, metric.get("unit"), name in rules.LOWER_IS_BETTER)


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
