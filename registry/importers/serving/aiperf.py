"""NVIDIA AIPerf's `profile_export_aiperf.json` (and its per-request `profile_export.jsonl` when beside it) as load
levels. Known: aiperf 0.8.0, schema_version 1.1 (docs/serving.md says what each field becomes)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import ServingImportError
from .levels import Level, distribution, sha256_of

SUMMARY = "profile_export_aiperf.json"
PER_REQUEST = "profile_export.jsonl"
KNOWN_VERSIONS = {("0.8.0", "1.1")}  # (aiperf_version, schema_version) read and tested
MAX_SUMMARY_BYTES = 16 * 1024 * 1024
MAX_PER_REQUEST_BYTES = 512 * 1024 * 1024
# aiperf computes its percentiles with numpy's default (linear interpolation); the per-request check below holds
# every imported file to it.
METHOD = "linear"
# The per-request records must give aiperf's own summary back within float rounding.
AGREEMENT = 1e-6


def is_aiperf(data: dict[str, Any]) -> bool:
    return "aiperf_version" in data and "input_config" in data


def read(path: Path, data: dict[str, Any], raw: bytes) -> Level:
    """One level from an aiperf summary (already parsed from `raw`)."""
    where = str(path)
    version, schema = data.get("aiperf_version"), data.get("schema_version")
    if (version, schema) not in KNOWN_VERSIONS:
        known = ", ".join(f"aiperf {v} (schema_version {s})" for v, s in sorted(KNOWN_VERSIONS))
        raise ServingImportError(
            f"aiperf {version} with schema_version {schema} is not a version this importer knows ({known}): its "
            "fields may mean something else; nothing was imported",
            where=where,
        )
    if data.get("was_cancelled") is True:
        raise ServingImportError("aiperf says this benchmark was cancelled (was_cancelled: true)", where=where)
    config = _object(data, "input_config", where)
    endpoint = _object(config, "endpoint", where)
    loadgen = _object(config, "loadgen", where)
    files = {SUMMARY: sha256_of(raw)}
    fields: dict[str, str] = {}
    notes: dict[str, str] = {}
    mode, concurrency, rate, arrival = _load(loadgen, where, fields)
    metrics = _metrics(data, where, fields, notes)
    per_request = path.with_name(PER_REQUEST)
    if per_request.is_file():
        files[PER_REQUEST] = _check_per_request(per_request, data, metrics)
    streaming = endpoint.get("streaming")
    api = {"chat": "chat", "completions": "completions"}.get(endpoint.get("type"))  # type: ignore[arg-type]
    if api is None or not isinstance(streaming, bool):
        raise ServingImportError(
            f"input_config.endpoint type {endpoint.get('type')!r} / streaming {streaming!r}: only chat or completions "
            "endpoints, streamed or not, are known",
            where=where,
        )
    models = endpoint.get("model_names") or []
    urls = endpoint.get("urls") or []
    dataset = _dataset(config)
    return Level(
        tool="aiperf",
        tool_version=str(version),
        path=where,
        files=files,
        mode=mode,
        concurrency=concurrency,
        target_qps=rate,
        arrival=arrival,
        model=str(models[0]) if models else _refuse("input_config.endpoint.model_names is empty", where),
        api=api,
        streaming=streaming,
        endpoint=_endpoint(urls[0]) if len(urls) == 1 else None,
        metrics=metrics,
        window_s=_number(data, "benchmark_duration", where),
        started_at=_ns_time(data.get("min_request_timestamp")),
        finished_at=_ns_time(data.get("max_response_timestamp")),
        dataset=dataset,
        group=_group(config),
        fields=fields,
        notes=notes,
    )


def _object(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ServingImportError(f"has no {key} object", where=where)
    return value


def _refuse(message: str, where: str) -> Any:
    raise ServingImportError(message, where=where)


def _number(data: dict[str, Any], key: str, where: str, stat: str = "avg") -> float:
    value = data.get(key, {}).get(stat) if isinstance(data.get(key), dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ServingImportError(f"has no number at {key}.{stat}", where=where)
    return float(value)


def _load(loadgen: dict[str, Any], where: str, fields: dict[str, str]) -> tuple[str, int | None, float | None, str]:
    concurrency, rate = loadgen.get("concurrency"), loadgen.get("request_rate")
    if isinstance(concurrency, int) and rate is None:
        fields["/scenario/concurrency"] = f"{SUMMARY}: input_config.loadgen.concurrency"
        return "concurrency", concurrency, None, "closed-loop"
    if isinstance(rate, int | float) and concurrency is None:
        pattern = loadgen.get("request_rate_mode") or loadgen.get("arrival_pattern") or "poisson"
        if pattern not in ("poisson", "constant"):
            raise ServingImportError(f"input_config.loadgen arrival {pattern!r} is not known", where=where)
        fields["/scenario/target_qps"] = f"{SUMMARY}: input_config.loadgen.request_rate"
        return "request-rate", None, float(rate), str(pattern)
    raise ServingImportError(
        "input_config.loadgen states neither a concurrency nor a request rate alone: the offered load is unknown",
        where=where,
    )


def _metrics(data: dict[str, Any], where: str, fields: dict[str, str], notes: dict[str, str]) -> dict[str, Any]:
    def dist(key: str, at: str, unit: str = "ms") -> dict[str, Any] | None:
        source = data.get(key)
        if not isinstance(source, dict):
            return None
        if source.get("unit") != {"ms": "ms", "tokens/s": "tokens/sec/user"}[unit]:
            raise ServingImportError(f"{key} is in {source.get('unit')!r}, not the unit aiperf 0.8.0 uses", where=where)
        return distribution(source, unit, 1.0, METHOD, at, f"{SUMMARY}: {key}", fields)

    completed = int(_number(data, "request_count", where))
    errors = int(data["error_request_count"]["avg"]) if isinstance(data.get("error_request_count"), dict) else 0
    for key, unit in (("output_token_throughput", "tokens/sec"), ("request_throughput", "requests/sec")):
        if data.get(key, {}).get("unit") != unit:
            raise ServingImportError(f"{key} is not in {unit}", where=where)
    tokens_per_s = _number(data, "output_token_throughput", where)
    metrics: dict[str, Any] = {
        "throughput": {"value": tokens_per_s, "unit": "tokens/s"},
        "tokens_per_second": {"value": tokens_per_s, "unit": "tokens/s"},
        "request_rate": {"value": _number(data, "request_throughput", where), "unit": "requests/s"},
        "latency_ms": dist("request_latency", "/metrics/latency_ms"),
        "ttft_ms": dist("time_to_first_token", "/metrics/ttft_ms"),
        # aiperf's inter_token_latency is per request, (e2e − TTFT) ÷ (output tokens − 1): the protocol's TPOT.
        "tpot_ms": dist("inter_token_latency", "/metrics/tpot_ms"),
        "tokens_per_second_per_user": dist(
            "output_token_throughput_per_user", "/metrics/tokens_per_second_per_user", "tokens/s"
        ),
        "requests": {
            "sent": completed + errors,
            "completed": completed,
            "errors": errors,
            "timeouts": 0,
            "incomplete": 0,
        },
        "token_counts": {
            "input_total": int(_number(data, "total_isl", where)),
            "output_total": int(_number(data, "total_osl", where)),
            "counted_by": "server-usage" if _server_counted(data) else "client-tokenizer",
            "notes": "aiperf total_isl and total_osl",
        },
    }
    fields.update(
        {
            "/metrics/throughput/value": f"{SUMMARY}: output_token_throughput.avg (tokens/sec)",
            "/metrics/tokens_per_second/value": f"{SUMMARY}: output_token_throughput.avg (tokens/sec)",
            "/metrics/request_rate/value": f"{SUMMARY}: request_throughput.avg (requests/sec)",
            "/metrics/requests/completed": f"{SUMMARY}: request_count.avg",
            "/metrics/requests/errors": f"{SUMMARY}: error_request_count.avg (absent: 0)",
            "/metrics/requests/sent": f"{SUMMARY}: request_count.avg + error_request_count.avg",
            "/metrics/token_counts/input_total": f"{SUMMARY}: total_isl.avg",
            "/metrics/token_counts/output_total": f"{SUMMARY}: total_osl.avg",
            "/conditions/window/seconds": f"{SUMMARY}: benchmark_duration.avg (sec)",
            "/provenance/started_at": f"{SUMMARY}: min_request_timestamp.avg (ns since the epoch, UTC)",
            "/provenance/finished_at": f"{SUMMARY}: max_response_timestamp.avg (ns since the epoch, UTC)",
        }
    )
    completed_all = (
        data.get("completed_request_count", {}).get("avg")
        if isinstance(data.get("completed_request_count"), dict)
        else None
    )
    if completed_all is not None and int(completed_all) != completed + errors:
        raise ServingImportError(
            f"completed_request_count {completed_all:g} is not request_count {completed} + "
            f"error_request_count {errors}",
            where=where,
        )
    notes["requests"] = "aiperf does not tell timeouts or incomplete streams from other errors: all are in errors"
    notes["tokens_per_second_per_user"] = (
        "aiperf's output_token_throughput_per_user: per request 1 ÷ inter_token_latency = (output tokens − 1) ÷ "
        "(e2e − TTFT), not output tokens ÷ (e2e − TTFT)"
    )
    notes["itl_ms"] = "not imported: aiperf's inter_chunk_latency times chunks (many tokens each), not token gaps"
    for key in ("context_overflow_count", "osl_mismatch_count"):
        if isinstance(data.get(key), dict) and data[key].get("avg"):
            notes[key] = f"{data[key]['avg']:g} {data[key].get('unit', '')}".strip()
    if data.get("error_summary"):
        notes["error_summary"] = json.dumps(data["error_summary"], sort_keys=True)[:2000]
    return {k: v for k, v in metrics.items() if v is not None}


def _server_counted(data: dict[str, Any]) -> bool:
    endpoint = data.get("input_config", {}).get("endpoint", {})
    return endpoint.get("use_server_token_count") is True


def _dataset(config: dict[str, Any]) -> str | None:
    inputs = config.get("input") or {}
    name = inputs.get("public_dataset") or inputs.get("detected_loader") or config.get("scenario")
    return str(name)[:500] if name else None


def _group(config: dict[str, Any]) -> str:
    """The run's settings without the load, the output folder and the URL (a harness may serve each level on
    another local port): levels with the same settings are one sweep."""
    trimmed = json.loads(json.dumps(config))
    trimmed.get("endpoint", {}).pop("urls", None)
    for key in ("concurrency", "request_rate"):
        trimmed.get("loadgen", {}).pop(key, None)
    trimmed.pop("cli_command", None)
    trimmed.pop("benchmark_id", None)
    trimmed.pop("output", None)
    return json.dumps(trimmed, sort_keys=True)


def _endpoint(url: Any) -> str | None:
    """scheme://host:port of the tool's URL (no path, no credentials), or None."""
    if not isinstance(url, str) or "://" not in url:
        return None
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    return f"{scheme.lower()}://{host}" if host else None


def _ns_time(value: Any) -> str | None:
    ns = value.get("avg") if isinstance(value, dict) else None
    if not isinstance(ns, int | float) or isinstance(ns, bool):
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat()


def _check_per_request(path: Path, summary: dict[str, Any], metrics: dict[str, Any]) -> str:
    """aiperf's per-request records must give its own summary back; the file's digest joins the evidence."""
    where = str(path)
    if path.stat().st_size > MAX_PER_REQUEST_BYTES:
        raise ServingImportError(f"larger than {MAX_PER_REQUEST_BYTES} bytes", where=where)
    raw = path.read_bytes()
    ttft, latency = [], []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ServingImportError(f"line {number} is not JSON ({exc.msg})", where=where) from None
        values = record.get("metrics") if isinstance(record, dict) else None
        if not isinstance(values, dict) or record.get("error"):
            continue
        if isinstance(values.get("time_to_first_token"), dict):
            ttft.append(float(values["time_to_first_token"]["value"]))
        if isinstance(values.get("request_latency"), dict):
            latency.append(float(values["request_latency"]["value"]))
    for name, values, key in (("time_to_first_token", ttft, "ttft_ms"), ("request_latency", latency, "latency_ms")):
        _agrees(where, f"the number of {name} records", float(len(values)), float(metrics[key]["count"]))
        _agrees(where, f"the mean {name}", sum(values) / len(values), float(summary[name]["avg"]))
        _agrees(where, f"the p50 {name}", _linear(values, 0.5), float(summary[name]["p50"]))
    return sha256_of(raw)


def _linear(values: list[float], q: float) -> float:
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def _agrees(where: str, what: str, computed: float, reported: float) -> None:
    if abs(computed - reported) > AGREEMENT * max(abs(reported), 1.0):
        raise ServingImportError(
            f"{what} from the per-request records is {computed:.9g} but the summary says {reported:.9g}", where=where
        )
