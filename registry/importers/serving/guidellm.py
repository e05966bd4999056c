"""guidellm's benchmarks report (JSON or YAML, as `guidellm run --output kind=json|yaml` writes it) as load levels:
each benchmark of the report (one rate type at one load) is one level, the benchmarks of one report one sweep.

Known: guidellm 0.8.1 (report `metadata.version` 2). docs/serving.md says what each field becomes.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard

from .errors import ServingImportError
from .levels import PERCENTILE_KEYS, Level, as_conversations, distribution, endpoint_of, non_negative, sha256_of

KNOWN_VERSIONS = (("0.8.1", 2),)  # (metadata.guidellm_version, metadata.version) read and tested
# guidellm 0.8.1 (schemas/base/statistics.py, Percentiles.from_pdf) takes as percentile q the first sorted value whose
# cumulative weight share reaches q (numpy searchsorted, side "left"): nearest rank. Where q·n is a whole number
# the float sum of the shares can fall just short of q and it takes the next value instead.
METHOD = "nearest-rank"
# The per-user rate 1000 / TPOT falls as TPOT rises, so its percentile q is 1000 / TPOT's percentile 1 − q: nearest
# rank mirrored is the sample at 0-based index floor(n·q) of the sorted rates, MLPerf LoadGen's rule.
PER_USER_METHOD = "loadgen"
# The per-user rate's statistics and the TPOT statistic each is 1000 / (guidellm's key): mean and stdev have none.
PER_USER_FROM = {"min": "max", "p50": "percentiles.p50", "p90": "percentiles.p10", "p95": "percentiles.p05",
                 "p99": "percentiles.p01", "max": "min"}  # fmt: skip
# The rate types of guidellm: the protocol's arrival and where the level states its offered load.
RATE_TYPES = {
    "synchronous": ("concurrency", "closed-loop"),  # one request at a time
    "concurrent": ("concurrency", "closed-loop"),  # `streams` requests at a time
    "throughput": ("concurrency", "closed-loop"),  # as many as `max_concurrency` allows, each sent when one ends
    "constant": ("request-rate", "constant"),
    "poisson": ("request-rate", "poisson"),
}
# The sweep mode of each profile kind (`config.profile.kind`): a guidellm sweep mixes closed and open loop levels.
PROFILE_MODES = {
    "synchronous": "concurrency",
    "concurrent": "concurrency",
    "throughput": "concurrency",
    "constant": "request-rate",
    "poisson": "request-rate",
    "sweep": "automatic",
}
# guidellm's distributions read: (metric key, protocol key, scale to the protocol's unit, unit note).
DISTRIBUTIONS = (
    ("request_latency", "latency_ms", 1000.0, "sec"),
    ("time_to_first_token_ms", "ttft_ms", 1.0, "ms"),
    # guidellm's inter_token_latency_ms is per request (last token − first token) ÷ (output tokens − 1): the
    # protocol's TPOT, not every gap between tokens.
    ("inter_token_latency_ms", "tpot_ms", 1.0, "ms"),
)

# Time to first output token: to the first token of the answer, reasoning excluded (guidellm's TTFOT, from
# `first_output_token_iteration`; equal to its TTFT where the model does not reason): protocol 1.3's ttfot_ms.
TTFOT = "time_to_first_output_token_ms"


def is_guidellm(data: dict[str, Any]) -> bool:
    """A guidellm report: its metadata names guidellm, or its benchmarks are guidellm's generative benchmarks."""
    metadata = data.get("metadata")
    if isinstance(metadata, dict) and "guidellm_version" in metadata:
        return True
    benchmarks = data.get("benchmarks")
    return isinstance(benchmarks, list) and any(
        isinstance(b, dict) and b.get("type_") == "generative_benchmark" for b in benchmarks
    )


def read(path: Path, data: dict[str, Any], raw: bytes) -> list[Level]:
    """Every benchmark of a guidellm report (already parsed from `raw`) as a level."""
    where = str(path)
    version = _known_version(data, where)
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        raise ServingImportError("holds no benchmarks (the list at benchmarks is empty or absent)", where=where)
    name, digest = path.name, sha256_of(raw)
    shape, shape_fields = _request_shape(data, name)
    levels = []
    for n, bench in enumerate(benchmarks):
        if not isinstance(bench, dict) or bench.get("type_") != "generative_benchmark":
            raise ServingImportError(f"benchmarks[{n}] is not a generative_benchmark", where=where)
        level = _level(bench, f"benchmarks[{n}]", where, name, version)
        level.files[name] = digest
        offered = f"concurrency {level.concurrency}" if level.target_qps is None else f"{level.target_qps:g} req/s"
        level.scenario = f"benchmarks[{n}]: {bench['config']['strategy']['type_']} at {offered}"
        level.request_shape = shape
        level.fields.update(shape_fields)
        _note_prompt_lengths(level, bench, shape)
        levels.append(level)
    return levels


def _known_version(data: dict[str, Any], where: str) -> str:
    metadata = data.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    version, report = metadata.get("guidellm_version"), metadata.get("version")
    if (version, report) not in KNOWN_VERSIONS:
        known = ", ".join(f"guidellm {v} (metadata.version {r})" for v, r in KNOWN_VERSIONS)
        raise ServingImportError(
            f"guidellm {version} with report metadata.version {report} is not a version this importer knows ({known}): "
            "its fields may mean something else; nothing was imported",
            where=where,
        )
    return str(version)


def _level(bench: dict[str, Any], at: str, where: str, name: str, version: str) -> Level:
    config = _object(bench, "config", at, where)
    fields: dict[str, str] = {}
    mode, concurrency, rate, arrival = _load(config, f"{at}.config", where, name, fields)
    backend = _object(config, "backend", f"{at}.config", where)
    metrics = _metrics(bench, at, where, name, fields)
    _check_cap(bench, at, where)
    fields["/conditions/window/seconds"] = f"{name}: {at}.duration (sec)"
    fields["/provenance/started_at"] = f"{name}: {at}.start_time (sec since the epoch, UTC)"
    fields["/provenance/finished_at"] = f"{name}: {at}.end_time (sec since the epoch, UTC)"
    warmup = _warmup(bench, config, at, name, fields)
    started, finished = bench.get("start_time"), bench.get("end_time")
    warm = warmup["seconds"] if warmup else None
    if warm and _is_number(started):
        # guidellm's start_time is its window's start: the run began with the warm-up's first request
        started -= warm
        fields["/provenance/started_at"] = f"{name}: {at}.start_time − warmup_duration (the first request; UTC)"
    notes = _notes(bench, name, at, "tokens_per_second_per_user" in metrics)
    cooldown = non_negative(bench.get("cooldown_duration")) if _set_phase(config.get("cooldown")) else None
    if cooldown and _is_number(finished):
        # and its end_time the window's end: the requests of the cool-down ran on after it
        finished += cooldown
        fields["/provenance/finished_at"] = f"{name}: {at}.end_time + cooldown_duration (the last request; UTC)"
        notes["cooldown"] = (
            f"the last {cooldown:.4g} s of the run (a cool-down, {at}.config.cooldown "
            f"{_phase_words(config['cooldown'])}) are left out of the figures, as the warm-up is"
        )
    if ramp := _ramp(config, warmup, at):
        notes["ramp_up"] = ramp
    return Level(
        tool="guidellm",
        tool_version=version,
        path=f"{where} {at}",
        files={},
        mode=mode,
        concurrency=concurrency,
        target_qps=rate,
        arrival=arrival,
        model=_text(backend, "model", f"{at}.config.backend", where),
        api=_api(backend, f"{at}.config.backend", where),
        streaming=backend.get("stream") is True,
        endpoint=endpoint_of(backend.get("target")),
        metrics=metrics,
        window_s=_finite(bench.get("duration"), f"{at}.duration", where),
        started_at=_time(started, f"{at}.start_time (with the warm-up)", where),
        finished_at=_time(finished, f"{at}.end_time (with the cool-down)", where),
        dataset=None,
        group=str(config.get("run_id")),  # the benchmarks of one `guidellm run` share it
        warmup=warmup,
        fields=fields,
        notes=notes,
    )


def _warmup(
    bench: dict[str, Any], config: dict[str, Any], at: str, name: str, fields: dict[str, str]
) -> dict[str, Any] | None:
    """conditions.warmup where the benchmark's config set a warm-up (config.warmup's percent or value): the seconds
    guidellm measured before its window (warmup_duration: measure start − first request, left out of the figures);
    how many requests that was, guidellm does not say. None where no warm-up was set."""
    set_up = config.get("warmup")
    if not _set_phase(set_up):
        return None
    fields["/conditions/warmup"] = (
        f"{name}: {at}.warmup_duration (sec), as {at}.config.warmup set it ({_phase_words(set_up)})"
    )
    return {"iterations": None, "seconds": non_negative(bench.get("warmup_duration"))}


def _set_phase(phase: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a warm-up or cool-down (guidellm's TransientPhaseConfig) was asked for: a percent or a value."""
    return isinstance(phase, dict) and (phase.get("percent") is not None or phase.get("value") is not None)


def _phase_words(phase: dict[str, Any]) -> str:
    """A TransientPhaseConfig as it was set: guidellm reads a value as seconds or as requests by its mode and by
    which limit (duration or request count) the benchmark had, so the seconds it measured are what the run did."""
    percent = phase.get("percent")
    size = f"{percent!r} of the run" if percent is not None else f"value {phase.get('value')!r}"
    return f"{size}, mode {phase.get('mode')}"


def _ramp(config: dict[str, Any], warmup: dict[str, Any] | None, at: str) -> str | None:
    """In words, where guidellm started its streams or rate over the first seconds of the run
    (strategy.rampup_duration) and the ramp reached past the warm-up into the figures; None otherwise."""
    ramp = non_negative((config.get("strategy") or {}).get("rampup_duration"))
    warm = (warmup or {}).get("seconds") or 0.0
    if not ramp or ramp <= warm:
        return None
    load = "streams" if config["strategy"].get("type_") in ("concurrent", "synchronous", "throughput") else "rate"
    inside = f"{ramp - warm:.4g} s of it after the warm-up" if warm else "no warm-up before it"
    return (
        f"{load} raised to the level over the first {ramp:g} s of the run ({at}.config.strategy.rampup_duration), "
        f"{inside}: the figures include the ramp, so not all of them are at the stated load"
    )


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _object(data: dict[str, Any], key: str, at: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ServingImportError(f"has no {at}.{key} object", where=where)
    return value


def _finite(value: Any, at: str, where: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ServingImportError(f"has no number at {at}", where=where)
    return float(value)


def _text(data: dict[str, Any], key: str, at: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ServingImportError(f"{at}.{key} names no model", where=where)
    return value


def _api(backend: dict[str, Any], at: str, where: str) -> str:
    route = backend.get("request_format")
    api = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}.get(route)  # type: ignore[arg-type]
    if api is None or backend.get("kind") != "openai_http":
        raise ServingImportError(
            f"{at} kind {backend.get('kind')!r} / request_format {route!r}: only the openai_http backend on "
            "/v1/chat/completions or /v1/completions is known",
            where=where,
        )
    return api


def _load(
    config: dict[str, Any], at: str, where: str, name: str, fields: dict[str, str]
) -> tuple[str, int | None, float | None, str]:
    """The offered load of one benchmark: its strategy's streams (closed loop) or rate (open loop)."""
    strategy = _object(config, "strategy", at, where)
    profile = (config.get("profile") or {}).get("kind")
    kind = strategy.get("type_")
    if kind not in RATE_TYPES or profile not in PROFILE_MODES:
        raise ServingImportError(
            f"{at}.strategy.type_ {kind!r} in a profile of kind {profile!r} is not a load this importer reads "
            f"(rate types {', '.join(RATE_TYPES)}; profiles {', '.join(PROFILE_MODES)})",
            where=where,
        )
    field = {"synchronous": "max_concurrency", "concurrent": "streams", "throughput": "max_concurrency"}.get(kind)
    value = strategy.get(field or "rate")
    if field and isinstance(value, int) and value > 0:
        fields["/scenario/concurrency"] = f"{name}: {at}.strategy.{field}"
        return PROFILE_MODES[profile], value, None, "closed-loop"
    if not field and isinstance(value, int | float) and value > 0:
        fields["/scenario/target_qps"] = f"{name}: {at}.strategy.rate"
        return PROFILE_MODES[profile], None, float(value), RATE_TYPES[kind][1]
    raise ServingImportError(
        f"{at}.strategy ({kind}) states no load ({field or 'rate'} {value!r}): the offered load is unknown",
        where=where,
    )


def _check_cap(bench: dict[str, Any], at: str, where: str) -> None:
    """A rate strategy may cap the requests in flight (guidellm's sweep caps them at 512): the level's load is its
    rate only where the requests in flight never reached the cap."""
    strategy = bench["config"]["strategy"]
    cap = strategy.get("max_concurrency")
    if strategy.get("type_") not in ("constant", "poisson") or not cap:
        return
    most = ((bench["metrics"].get("request_concurrency") or {}).get("successful") or {}).get("max")
    if not isinstance(most, int | float) or most >= cap:
        raise ServingImportError(
            f"{at}.config.strategy caps the requests in flight at max_concurrency {cap} and "
            f"{at}.metrics.request_concurrency.successful.max is {most!r}: the load was not the rate alone",
            where=where,
        )


def _metrics(bench: dict[str, Any], at: str, where: str, name: str, fields: dict[str, str]) -> dict[str, Any]:
    """The protocol's metrics section (no headline) from one benchmark's `metrics`, successful requests only."""
    source = _object(bench, "metrics", at, where)
    at = f"{at}.metrics"
    metrics: dict[str, Any] = {**_rates(source, at, where, name, fields)}
    requests = _per_request_gaps(source, at, where)
    for key, protocol_key, scale, unit in DISTRIBUTIONS:
        stats = _successful(source, key, at, where)
        label = f"{name}: {at}.{key}.successful"
        if key == "inter_token_latency_ms" and requests is not None:
            stats = {**stats, "count": requests}  # guidellm counts the gaps: one request weighs output tokens − 1
        metrics[protocol_key] = _distribution(stats, scale, f"/metrics/{protocol_key}", label, fields)
        if scale != 1:
            fields[f"/metrics/{protocol_key}/count"] += f" ({unit})"
    if isinstance((source.get(TTFOT) or {}).get("successful"), dict):  # guidellm 0.8 writes it; earlier ones do not
        stats = _successful(source, TTFOT, at, where)
        label = f"{name}: {at}.{TTFOT}.successful"
        metrics["ttfot_ms"] = _distribution(stats, 1.0, "/metrics/ttfot_ms", label, fields)
    if requests is not None:
        metrics["tokens_per_second_per_user"] = _per_user(source, requests, at, where, name, fields)
    metrics["requests"] = _requests(source, at, where, name, fields)
    metrics["token_counts"] = _token_counts(source, at, where, name, fields)
    return {k: v for k, v in metrics.items() if v is not None}


def _per_request_gaps(source: dict[str, Any], at: str, where: str) -> int | None:
    """The successful requests behind guidellm's inter_token_latency_ms, where each weighs the same.

    guidellm weighs each request's (last token − first token) ÷ (output tokens − 1) by its output tokens − 1, so its
    count is the gaps and its percentiles are per request only where every request wrote the same number of tokens
    (output_token_count min = max): then the requests are the gaps ÷ (tokens − 1). Else None."""
    tokens = _successful(source, "output_token_count", at, where)
    gaps = _successful(source, "inter_token_latency_ms", at, where).get("count")
    least, most = tokens.get("min"), tokens.get("max")
    if not isinstance(gaps, int) or not isinstance(most, int | float) or least != most or most < 2:
        return None
    if most != int(most) or gaps % (int(most) - 1):
        raise ServingImportError(
            f"{at}.inter_token_latency_ms.successful.count {gaps} is not a whole number of requests of "
            f"{most:g} output tokens ({at}.output_token_count.successful)",
            where=where,
        )
    return gaps // (int(most) - 1)


def _per_user(
    source: dict[str, Any], requests: int, at: str, where: str, name: str, fields: dict[str, str]
) -> dict[str, Any] | None:
    """The protocol's tokens_per_second_per_user (per request (output tokens − 1) ÷ (last token − first token)):
    1000 ÷ guidellm's per-request TPOT statistic mirrored, exact for the order statistics; no mean (the mean of
    1/x is not 1 over the mean of x). None where guidellm wrote a statistic it needs as no positive number."""
    label = f"{name}: {at}.inter_token_latency_ms.successful"
    fields["/metrics/tpot_ms/count"] = f"{label}.count ÷ ({name}: {at}.output_token_count.successful.max − 1)"
    rates = _mirrored(_successful(source, "inter_token_latency_ms", at, where))
    if rates is None:
        return None
    rates["count"] = requests
    pointer = "/metrics/tokens_per_second_per_user"
    names = {stat: stat for stat in PER_USER_FROM}
    out = distribution(rates, "tokens/s", 1.0, PER_USER_METHOD, pointer, label, fields, names)
    for stat, key in PER_USER_FROM.items():
        if f"{pointer}/{stat}" in fields:  # left out where the count cannot support the percentile
            fields[f"{pointer}/{stat}"] = f"1000 ÷ {label}.{key} (ms)"
    fields[f"{pointer}/count"] = fields["/metrics/tpot_ms/count"]
    return out


def _mirrored(tpot: dict[str, Any]) -> dict[str, Any] | None:
    """1000 ÷ each TPOT statistic of PER_USER_FROM, or None where one is not a positive number."""
    rates: dict[str, Any] = {}
    for stat, key in PER_USER_FROM.items():
        holder = (tpot.get("percentiles") or {}) if key.startswith("percentiles.") else tpot
        value = holder.get(key.removeprefix("percentiles."))
        if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
            return None
        rates[stat] = 1000.0 / float(value)
    return rates


def _successful(source: dict[str, Any], key: str, at: str, where: str) -> dict[str, Any]:
    stats = (source.get(key) or {}).get("successful")
    if not isinstance(stats, dict):
        raise ServingImportError(f"has no {at}.{key}.successful object", where=where)
    return stats


# Where guidellm keeps each statistic of a distribution: protocol name -> its key (percentiles nested).
NAMES = {
    "min": "min",
    "mean": "mean",
    "stdev": "std_dev",
    **{p: f"percentiles.{p}" for p in PERCENTILE_KEYS},
    "max": "max",
}


def _distribution(
    stats: dict[str, Any], scale: float, pointer: str, label: str, fields: dict[str, str]
) -> dict[str, Any] | None:
    """guidellm's {mean, std_dev, min, max, count, percentiles: {p50, ...}} as a protocol distribution."""
    flat = {key: stats.get(key) for key in ("min", "mean", "std_dev", "max", "count")}
    flat.update({f"percentiles.{p}": v for p, v in (stats.get("percentiles") or {}).items()})
    return distribution(flat, "ms", scale, METHOD, pointer, label, fields, NAMES)


def _rates(source: dict[str, Any], at: str, where: str, name: str, fields: dict[str, str]) -> dict[str, Any]:
    """guidellm's rate `mean` is the successful requests (tokens) over the benchmark's duration."""
    tokens = _finite(_successful(source, "output_tokens_per_second", at, where).get("mean"), at, where)
    requests = _finite(_successful(source, "requests_per_second", at, where).get("mean"), at, where)
    for pointer in ("/metrics/throughput/value", "/metrics/tokens_per_second/value"):
        fields[pointer] = f"{name}: {at}.output_tokens_per_second.successful.mean (tokens/sec)"
    fields["/metrics/request_rate/value"] = f"{name}: {at}.requests_per_second.successful.mean (requests/sec)"
    return {
        "throughput": {"value": tokens, "unit": "tokens/s"},
        "tokens_per_second": {"value": tokens, "unit": "tokens/s"},
        "request_rate": {"value": requests, "unit": "requests/s"},
    }


def _requests(source: dict[str, Any], at: str, where: str, name: str, fields: dict[str, str]) -> dict[str, int]:
    """Every request guidellm sent: successful, errored (timeouts among them) and incomplete (cut off at the end)."""
    totals = _object(source, "request_totals", at, where)
    counts: dict[str, int] = {}
    for key in ("successful", "errored", "incomplete", "total"):
        value = totals.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ServingImportError(f"{at}.request_totals.{key} is {value!r}, not a count", where=where)
        counts[key] = value
    if counts["total"] != counts["successful"] + counts["errored"] + counts["incomplete"]:
        raise ServingImportError(
            f"{at}.request_totals.total {counts['total']} is not successful + errored + incomplete", where=where
        )
    for key, theirs in (("sent", "total"), ("completed", "successful"), ("errors", "errored"),
                        ("incomplete", "incomplete")):  # fmt: skip
        fields[f"/metrics/requests/{key}"] = f"{name}: {at}.request_totals.{theirs}"
    return {
        "sent": counts["total"],
        "completed": counts["successful"],
        "errors": counts["errored"],
        "timeouts": 0,
        "incomplete": counts["incomplete"],
    }


def _token_counts(source: dict[str, Any], at: str, where: str, name: str, fields: dict[str, str]) -> dict[str, Any]:
    totals = {}
    for key, theirs in (("input_total", "prompt_token_count"), ("output_total", "output_token_count")):
        total = _finite(_successful(source, theirs, at, where).get("total_sum"), f"{at}.{theirs}", where)
        totals[key] = int(total)
        fields[f"/metrics/token_counts/{key}"] = f"{name}: {at}.{theirs}.successful.total_sum"
    return {
        **totals,
        # guidellm takes the server's usage report when it prefers response metrics and one came, else its
        # tokenizer's count; the report does not say which counted a request.
        "counted_by": "tool-report",
        "notes": "guidellm prompt_token_count and output_token_count of the successful requests",
    }


def _request_shape(data: dict[str, Any], name: str) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The request shape of guidellm's one synthetic_text data source: its prompt and output token laws. Other data
    leaves the shape to the deployment."""
    spec = (data.get("config") or {}).get("spec") or {}
    sources = spec.get("data")
    source = sources[0] if isinstance(sources, list) and len(sources) == 1 else None
    if not isinstance(source, dict) or source.get("kind") != "synthetic_text":
        return None, {}
    turns = source.get("turns")
    if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 1):
        return None, {}
    laws = {}
    for key in ("prompt_tokens", "output_tokens"):
        mean, stdev = source.get(key), source.get(f"{key}_stdev")
        if not isinstance(mean, int | float) or isinstance(mean, bool):
            return None, {}
        law = {"mean": float(mean), "stdev": float(stdev or 0), "distribution": "normal" if stdev else "constant"}
        law.update({b: float(source[f"{key}_{b}"]) for b in ("min", "max") if source.get(f"{key}_{b}") is not None})
        laws[key] = law
    fixed = all(law["distribution"] == "constant" for law in laws.values())
    shape = {"kind": "fixed" if fixed else "distribution", "input_tokens": laws["prompt_tokens"],
             "output_tokens": laws["output_tokens"], "turns": "single"}  # fmt: skip
    fields = {
        "/workload/request_shape/input_tokens": f"{name}: config.spec.data[0].prompt_tokens (_stdev, _min, _max)",
        "/workload/request_shape/output_tokens": f"{name}: config.spec.data[0].output_tokens (_stdev, _min, _max)",
    }
    if turns is not None and turns > 1:
        as_conversations(shape, "guidellm", f"{turns} turns")
        fields["/workload/request_shape/turns"] = f"{name}: config.spec.data[0].turns"
    return shape, fields


def _note_prompt_lengths(level: Level, bench: dict[str, Any], shape: dict[str, Any] | None) -> None:
    """Say so where the prompts measured are not the length the data source was set up to draw: guidellm decodes
    a synthetic prompt's ids with skip_special_tokens, so words its tokenizer does not know vanish from it (the
    project's tokenizer knows guidellm's words since it was rewritten; another tokenizer may not)."""
    metrics = bench.get("metrics") or {}
    stats = (metrics.get("prompt_token_count") or {}).get("successful") or {}
    whose = "the successful requests'"
    if shape is not None and shape.get("turns") == "multi":
        # later turns carry the conversation so far: only the first turns' prompts are the data source's own length
        turns = metrics.get("turns")
        turns = turns if isinstance(turns, list) else []
        first = next((t for t in turns if isinstance(t, dict) and t.get("turn_index") == 0), {})
        stats, whose = (first.get("prompt_token_count") or {}).get("successful") or {}, "the first turns'"
    measured = stats.get("mean")
    if shape is None or not isinstance(measured, int | float):
        return
    stated = shape["input_tokens"]["mean"]
    if abs(measured - stated) > 0.05 * stated:
        level.notes["request_shape"] = (
            f"the data source was set up for a mean of {stated:g} prompt tokens, but {whose} mean "
            f"prompt_token_count is {measured:.4g}"
        )


PER_USER_NOTE = (
    "per request (output tokens − 1) ÷ (last token − first token), as aiperf's: 1000 ÷ guidellm's per-request "
    "inter_token_latency_ms, its statistics mirrored (p50 = 1000 ÷ p50, p90 = 1000 ÷ p10, p95 ÷ p05, p99 ÷ p01, "
    "min ÷ max); no mean or stdev: they do not follow from TPOT's"
)
PER_USER_MISSING = (
    "not imported: the successful requests wrote different numbers of output tokens, and guidellm weighs each "
    "request's inter_token_latency_ms by its output tokens − 1, so its percentiles are not the requests' (and "
    "guidellm's per-request output_tokens_per_second divides by the whole latency, TTFT included)"
)

TPOT_WEIGHED = (
    "guidellm's inter_token_latency_ms as it wrote it: each request weighs its output tokens − 1, so the count is "
    "the gaps between tokens and the percentiles lean to the longer requests"
)


def _notes(bench: dict[str, Any], name: str, at: str, per_user: bool) -> dict[str, str]:
    metrics = bench.get("metrics") or {}
    notes = {
        "itl_ms": "not imported: guidellm reports each request's mean gap (inter_token_latency_ms, here tpot_ms), "
        "not every gap between tokens",
        "tokens_per_second_per_user": PER_USER_NOTE if per_user else PER_USER_MISSING,
        **({} if per_user else {"tpot_ms": TPOT_WEIGHED}),
        "requests": "guidellm counts timeouts among errored requests; incomplete ones were cut off when the "
        "benchmark ended",
    }
    concurrency = (metrics.get("request_concurrency") or {}).get("successful") or {}
    if isinstance(concurrency.get("mean"), int | float) and isinstance(concurrency.get("max"), int | float):
        cap = (bench.get("config") or {}).get("strategy", {}).get("max_concurrency")
        notes["request_concurrency"] = (
            f"requests in flight: mean {concurrency['mean']:.4g}, max {concurrency['max']:g}, cap {cap} "
            f"({name}: {at}.metrics.request_concurrency.successful, {at}.config.strategy.max_concurrency)"
        )
    if bench.get("warnings"):
        notes["warnings"] = json.dumps(bench["warnings"], sort_keys=True, default=str)[:2000]
    return notes


def _time(seconds: Any, what: str, where: str) -> str | None:
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not math.isfinite(seconds):
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        raise ServingImportError(f"{what} {seconds!r} is no time (seconds since the epoch)", where=where) from None
