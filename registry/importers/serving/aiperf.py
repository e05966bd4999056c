"""NVIDIA AIPerf's `profile_export_aiperf.json` (and its per-request `profile_export.jsonl` when beside it) as load
levels. Known: aiperf 0.8.0 (schema_version 1.1) and 0.13.0 (schema_version 1.4); docs/serving.md says what each
field becomes."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .aiperf_config import SUMMARY, read_setup
from .errors import ServingImportError
from .levels import Level, agrees, distribution, linear_quantile, sha256_of
from .reading import json_value

__all__ = ["MAX_SUMMARY_BYTES", "SUMMARY", "is_aiperf", "read"]

PER_REQUEST = "profile_export.jsonl"
# aiperf 0.13.0 with a warm-up also writes each phase's summary apart (phases/<name>/profile_export_aiperf.json) and
# lists them in this file beside the run's own summary: copies of the level, or the warm-up alone, never levels.
PHASE_MANIFEST = "phase_manifest.json"
MAX_MANIFEST_BYTES = 1024 * 1024
# (aiperf_version, schema_version) read and tested; the schema decides how input_config is read (aiperf_config.py).
KNOWN_VERSIONS = (("0.8.0", "1.1"), ("0.13.0", "1.4"))
MAX_SUMMARY_BYTES = 16 * 1024 * 1024
MAX_PER_REQUEST_BYTES = 512 * 1024 * 1024
# aiperf computes its percentiles with numpy's default (linear interpolation); the per-request check below holds
# every imported file to it.
METHOD = "linear"
# The per-request records must give aiperf's own summary back within float rounding.


def is_aiperf(data: dict[str, Any]) -> bool:
    return "aiperf_version" in data and "input_config" in data


def phase_summaries(folder: Path) -> dict[Path, str]:
    """The per-phase summaries the phase_manifest.json of a run `folder` lists, each with its phase's kind
    (resolved paths; none when the folder has no readable manifest)."""
    manifest = folder / PHASE_MANIFEST
    try:
        if manifest.stat().st_size > MAX_MANIFEST_BYTES:
            return {}
        phases = json.loads(manifest.read_bytes()).get("phases")
    except (OSError, ValueError, AttributeError, RecursionError):  # no manifest aiperf wrote: none listed
        return {}
    listed = {}
    for phase in phases if isinstance(phases, list) else []:
        name = phase.get("metrics_json") if isinstance(phase, dict) else None
        if isinstance(name, str) and name:
            listed[(folder / name).resolve()] = str(phase.get("phase_kind") or phase.get("phase_name") or "a")
    return listed


def read(path: Path, data: dict[str, Any], raw: bytes) -> Level:
    """One level from an aiperf summary (already parsed from `raw`)."""
    where = str(path)
    run = path.resolve().parent.parent.parent  # a phase summary is <run>/phases/<name>/profile_export_aiperf.json
    kind = phase_summaries(run).get(path.resolve())
    if kind is not None:
        raise ServingImportError(
            f"is aiperf's summary of its {kind} phase alone ({run / PHASE_MANIFEST} lists it): the level is the run's "
            f"own summary, {run / SUMMARY}",
            where=where,
        )
    schema = _known_schema(data, where)
    _refuse_unfinished(data, where)
    config = data.get("input_config")
    if not isinstance(config, dict):
        raise ServingImportError("has no input_config object", where=where)
    fields: dict[str, str] = {}
    notes: dict[str, str] = {}
    setup = read_setup(schema, config, where, fields)
    metrics = _metrics(data, where, fields, notes)
    settings = asdict(setup)
    if ramp := settings.pop("ramp"):
        notes["ramp_up"] = ramp
    files = {SUMMARY: sha256_of(raw)}
    per_request = path.with_name(PER_REQUEST)
    if per_request.is_file():
        files[PER_REQUEST] = _check_per_request(per_request, data, metrics)
    return Level(
        tool="aiperf",
        tool_version=str(data["aiperf_version"]),
        path=where,
        files=files,
        **settings,
        metrics=metrics,
        window_s=_number(data, "benchmark_duration", where),
        started_at=_ns_time(data.get("min_request_timestamp"), "min_request_timestamp", fields),
        finished_at=_ns_time(data.get("max_response_timestamp"), "max_response_timestamp", fields),
        fields=fields,
        notes=notes,
    )


def _known_schema(data: dict[str, Any], where: str) -> str:
    """The schema version of a summary whose (aiperf_version, schema_version) pair this importer reads and tests."""
    version, schema = data.get("aiperf_version"), data.get("schema_version")
    if (version, schema) not in KNOWN_VERSIONS:
        known = ", ".join(f"aiperf {v} (schema_version {s})" for v, s in KNOWN_VERSIONS)
        raise ServingImportError(
            f"aiperf {version} with schema_version {schema} is not a version this importer knows ({known}): its "
            "fields may mean something else; nothing was imported",
            where=where,
        )
    return str(schema)


def _refuse_unfinished(data: dict[str, Any], where: str) -> None:
    if data.get("was_cancelled") is True:
        raise ServingImportError("aiperf says this benchmark was cancelled (was_cancelled: true)", where=where)
    if data.get("is_complete") is False:  # written since schema 1.4
        reason = data.get("incomplete_reason")
        raise ServingImportError(
            f"aiperf says this benchmark is not complete (is_complete: false, {reason!r})", where=where
        )


def _number(data: dict[str, Any], key: str, where: str, stat: str = "avg") -> float:
    value = data.get(key, {}).get(stat) if isinstance(data.get(key), dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ServingImportError(f"has no number at {key}.{stat}", where=where)
    return float(value)


def _metrics(data: dict[str, Any], where: str, fields: dict[str, str], notes: dict[str, str]) -> dict[str, Any]:
    """The protocol's metrics section (no headline) from aiperf's summary figures."""
    metrics = {
        **_rates(data, where, fields),
        **_distributions(data, where, fields),
        "requests": _requests(data, where, fields),
        "token_counts": _token_counts(data, where, fields),
    }
    notes.update(_notes(data))
    return {k: v for k, v in metrics.items() if v is not None}


def _rates(data: dict[str, Any], where: str, fields: dict[str, str]) -> dict[str, Any]:
    for key, unit in (("output_token_throughput", "tokens/sec"), ("request_throughput", "requests/sec")):
        if data.get(key, {}).get("unit") != unit:
            raise ServingImportError(f"{key} is not in {unit}", where=where)
    tokens_per_s = _number(data, "output_token_throughput", where)
    for at in ("/metrics/throughput/value", "/metrics/tokens_per_second/value"):
        fields[at] = f"{SUMMARY}: output_token_throughput.avg (tokens/sec)"
    fields["/metrics/request_rate/value"] = f"{SUMMARY}: request_throughput.avg (requests/sec)"
    fields["/conditions/window/seconds"] = f"{SUMMARY}: benchmark_duration.avg (sec)"
    return {
        "throughput": {"value": tokens_per_s, "unit": "tokens/s"},
        "tokens_per_second": {"value": tokens_per_s, "unit": "tokens/s"},
        "request_rate": {"value": _number(data, "request_throughput", where), "unit": "requests/s"},
    }


# aiperf's distributions read: (aiperf key, metrics key, unit aiperf writes, protocol unit).
DISTRIBUTIONS = (
    ("request_latency", "latency_ms", "ms", "ms"),
    ("time_to_first_token", "ttft_ms", "ms", "ms"),
    # TTFO: to the first answer token, reasoning excluded (protocol 1.3); aiperf writes it for every streamed request
    # whose answer carried text, in both versions known (0.13.0 under this name, 0.8.0 too).
    ("time_to_first_output_token", "ttfot_ms", "ms", "ms"),
    # aiperf's inter_token_latency is per request, (e2e − TTFT) ÷ (output tokens − 1): the protocol's TPOT.
    ("inter_token_latency", "tpot_ms", "ms", "ms"),
    ("output_token_throughput_per_user", "tokens_per_second_per_user", "tokens/sec/user", "tokens/s"),
)


def _distributions(data: dict[str, Any], where: str, fields: dict[str, str]) -> dict[str, Any]:
    out = {}
    for key, name, aiperf_unit, unit in DISTRIBUTIONS:
        source = data.get(key)
        if not isinstance(source, dict):
            continue
        if source.get("unit") != aiperf_unit:
            raise ServingImportError(f"{key} is in {source.get('unit')!r}, not {aiperf_unit!r}", where=where)
        out[name] = distribution(source, unit, 1.0, METHOD, f"/metrics/{name}", f"{SUMMARY}: {key}", fields)
    return out


def _requests(data: dict[str, Any], where: str, fields: dict[str, str]) -> dict[str, int]:
    """Every request sent: completed (request_count) and errors; aiperf counts timeouts and cut streams as errors."""
    completed = int(_number(data, "request_count", where))
    errors = int(data["error_request_count"]["avg"]) if isinstance(data.get("error_request_count"), dict) else 0
    everything = (
        data["completed_request_count"].get("avg") if isinstance(data.get("completed_request_count"), dict) else None
    )
    if everything is not None and int(everything) != completed + errors:
        raise ServingImportError(
            f"completed_request_count {everything:g} is not request_count {completed} + error_request_count {errors}",
            where=where,
        )
    fields["/metrics/requests/completed"] = f"{SUMMARY}: request_count.avg"
    fields["/metrics/requests/errors"] = f"{SUMMARY}: error_request_count.avg (absent: 0)"
    fields["/metrics/requests/sent"] = f"{SUMMARY}: request_count.avg + error_request_count.avg"
    return {"sent": completed + errors, "completed": completed, "errors": errors, "timeouts": 0, "incomplete": 0}


def _token_counts(data: dict[str, Any], where: str, fields: dict[str, str]) -> dict[str, Any]:
    fields["/metrics/token_counts/input_total"] = f"{SUMMARY}: total_isl.avg"
    fields["/metrics/token_counts/output_total"] = f"{SUMMARY}: total_osl.avg"
    endpoint = data.get("input_config", {}).get("endpoint", {})
    return {
        "input_total": int(_number(data, "total_isl", where)),
        "output_total": int(_number(data, "total_osl", where)),
        "counted_by": "server-usage" if endpoint.get("use_server_token_count") is True else "client-tokenizer",
        "notes": "aiperf total_isl and total_osl",
    }


def _notes(data: dict[str, Any]) -> dict[str, str]:
    """What the document cannot hold as a number, said in words on every level."""
    notes = {
        "requests": "aiperf does not tell timeouts or incomplete streams from other errors: all are in errors",
        "tokens_per_second_per_user": (
            "aiperf's output_token_throughput_per_user: per request 1 ÷ inter_token_latency = (output tokens − 1) ÷ "
            "(e2e − TTFT), not output tokens ÷ (e2e − TTFT)"
        ),
        "itl_ms": "not imported: aiperf's inter_chunk_latency times chunks (many tokens each), not token gaps",
    }
    answered, first = (
        (data.get(key) or {}).get("count") if isinstance(data.get(key), dict) else None
        for key in ("time_to_first_output_token", "time_to_first_token")
    )
    if isinstance(answered, int) and answered > 0:
        notes["ttfot_ms"] = (
            f"aiperf's time_to_first_output_token: the {answered} of {first} requests with a TTFT whose answer carried "
            "text (aiperf counts neither reasoning nor a tool call as output, so a request that answered with a tool "
            "call only has no TTFO)"
        )
    for key in ("context_overflow_count", "osl_mismatch_count"):
        if isinstance(data.get(key), dict) and data[key].get("avg"):
            notes[key] = f"{data[key]['avg']:g} {data[key].get('unit', '')}".strip()
    if data.get("error_summary"):
        notes["error_summary"] = json.dumps(data["error_summary"], sort_keys=True)[:2000]
    if "min_request_timestamp" not in data and "start_time" in data:
        notes["started_at"] = "not imported: aiperf's start_time and end_time are its host's local time, no zone"
    return notes


def _ns_time(value: Any, key: str, fields: dict[str, str]) -> str | None:
    ns = value.get("avg") if isinstance(value, dict) else None
    if not isinstance(ns, int | float) or isinstance(ns, bool):
        return None
    at = "/provenance/started_at" if key.startswith("min") else "/provenance/finished_at"
    fields[at] = f"{SUMMARY}: {key}.avg (ns since the epoch, UTC)"
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat()


def _outside_profiling(record: dict[str, Any]) -> bool:
    """Whether a per-request record is of another phase than the one the summary measures (aiperf 0.13.0 writes its
    warm-up requests to the same file, with metadata.benchmark_phase "warmup"; 0.8.0 states no phase)."""
    metadata = record.get("metadata")
    phase = metadata.get("benchmark_phase") if isinstance(metadata, dict) else None
    return phase is not None and phase != "profiling"


def _check_per_request(path: Path, summary: dict[str, Any], metrics: dict[str, Any]) -> str:
    """aiperf's per-request records must give its own summary back; the file's digest joins the evidence."""
    where = str(path)
    if path.stat().st_size > MAX_PER_REQUEST_BYTES:
        raise ServingImportError(f"larger than {MAX_PER_REQUEST_BYTES} bytes", where=where)
    raw = path.read_bytes()
    ttft: list[float] = []
    ttfot: list[float] = []
    latency: list[float] = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json_value(line, where, number)
        except json.JSONDecodeError as exc:
            raise ServingImportError(f"line {number} is not JSON ({exc.msg})", where=where) from None
        values = record.get("metrics") if isinstance(record, dict) else None
        if not isinstance(values, dict) or record.get("error") or _outside_profiling(record):
            continue
        if isinstance(values.get("time_to_first_token"), dict):
            ttft.append(float(values["time_to_first_token"]["value"]))
        if isinstance(values.get("time_to_first_output_token"), dict):
            ttfot.append(float(values["time_to_first_output_token"]["value"]))
        if isinstance(values.get("request_latency"), dict):
            latency.append(float(values["request_latency"]["value"]))
    checked = [("time_to_first_token", ttft, "ttft_ms"), ("request_latency", latency, "latency_ms")]
    if "ttfot_ms" in metrics or ttfot:
        if "ttfot_ms" not in metrics:
            raise ServingImportError(
                f"{len(ttfot)} per-request records have a time_to_first_output_token, the summary has none",
                where=where,
            )
        checked.append(("time_to_first_output_token", ttfot, "ttfot_ms"))
    for name, values, key in checked:
        records = "from the per-request records"
        agrees(where, f"the number of {name} records {records}", float(len(values)), float(metrics[key]["count"]))
        agrees(where, f"the mean {name} {records}", sum(values) / len(values), float(summary[name]["avg"]))
        agrees(where, f"the p50 {name} {records}", linear_quantile(values, 0.5), float(summary[name]["p50"]))
    return sha256_of(raw)
