"""What an aiperf summary's `input_config` says about the run (model, API, load, data), per schema version.

aiperf 0.8.0 (schema_version 1.1) writes `endpoint.model_names`, `loadgen.concurrency` / `request_rate` and
`input.public_dataset`; aiperf 0.13.0 (schema_version 1.4) writes `models.items[].name`, a list of `phases` (one
of kind `profiling` carries the load) and a list of `datasets` (a synthetic one states its prompt lengths).
docs/serving.md maps each field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ServingImportError
from .levels import as_conversations, endpoint_of, non_negative

SUMMARY = "profile_export_aiperf.json"
# aiperf 0.13.0 phase types read: the arrival each stands for (gamma: its shape is the phase's smoothness).
PHASE_ARRIVALS = {"concurrency": "closed-loop", "poisson": "poisson", "constant": "constant", "gamma": "gamma"}
# aiperf's gamma arrivals without a stated smoothness use this shape (aiperf.timing.intervals: 1.0, Poisson)
AIPERF_DEFAULT_SMOOTHNESS = 1.0


@dataclass(frozen=True)
class Setup:
    """The run's settings as the summary states them."""

    model: str
    api: str
    streaming: bool
    endpoint: str | None
    mode: str  # "concurrency" or "request-rate"
    concurrency: int | None
    target_qps: float | None
    arrival: str
    dataset: str | None
    group: str  # the settings without the load: levels with the same group are one sweep
    request_shape: dict[str, Any] | None
    warmup: dict[str, Any] | None = None  # conditions.warmup: the warm-up phases' requests and seconds
    ramp: str | None = None  # in words: how the profiling phase ramped its load up inside the measured window
    burstiness: float | None = None  # the gamma shape of the arrivals (aiperf's smoothness), for gamma arrivals


def read_setup(schema: str, config: dict[str, Any], where: str, fields: dict[str, str]) -> Setup:
    """The settings of `config` (the summary's input_config) as its schema version lays them out."""
    return READERS[schema](config, where, fields)


def _setup_1_1(config: dict[str, Any], where: str, fields: dict[str, str]) -> Setup:
    endpoint = _object(config, "endpoint", where)
    mode, concurrency, rate, arrival = _loadgen(_object(config, "loadgen", where), where, fields)
    inputs = config.get("input") or {}
    dataset = inputs.get("public_dataset") or inputs.get("detected_loader") or config.get("scenario")
    return Setup(
        model=_first(endpoint.get("model_names"), "input_config.endpoint.model_names", where),
        api=_api(endpoint, where),
        streaming=endpoint["streaming"],
        endpoint=_endpoint_of(endpoint.get("urls")),
        mode=mode,
        concurrency=concurrency,
        target_qps=rate,
        arrival=arrival,
        dataset=str(dataset)[:500] if dataset else None,
        group=_group(config, [("loadgen", "concurrency"), ("loadgen", "request_rate")], ("cli_command", "output")),
        request_shape=None,
    )


def _setup_1_4(config: dict[str, Any], where: str, fields: dict[str, str]) -> Setup:
    endpoint = _object(config, "endpoint", where)
    models = (config.get("models") or {}).get("items") or []
    names = [m.get("name") for m in models if isinstance(m, dict)]
    mode, concurrency, rate, arrival, burstiness = _phase(config, where, fields)
    datasets = config.get("datasets")
    only = datasets[0] if isinstance(datasets, list) and len(datasets) == 1 and isinstance(datasets[0], dict) else {}
    public = only.get("dataset") if only.get("type") == "public" else None
    return Setup(
        model=_first(names, "input_config.models.items[].name", where),
        api=_api(endpoint, where),
        streaming=endpoint["streaming"],
        endpoint=_endpoint_of(endpoint.get("urls")),
        mode=mode,
        concurrency=concurrency,
        target_qps=rate,
        arrival=arrival,
        dataset=str(public)[:500] if public else None,
        group=_group(config, [("phases", "concurrency"), ("phases", "rate")], ("artifacts",)),
        request_shape=_synthetic_shape(only, fields),
        warmup=_warmup(config, fields),
        ramp=_ramp(config),
        burstiness=burstiness,
    )


READERS: dict[str, Callable[[dict[str, Any], str, dict[str, str]], Setup]] = {"1.1": _setup_1_1, "1.4": _setup_1_4}


def _object(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ServingImportError(f"has no input_config.{key} object", where=where)
    return value


def _first(names: Any, field: str, where: str) -> str:
    if not isinstance(names, list) or not names or not isinstance(names[0], str):
        raise ServingImportError(f"{field} names no model", where=where)
    return names[0]


def _api(endpoint: dict[str, Any], where: str) -> str:
    api = {"chat": "chat", "completions": "completions"}.get(endpoint.get("type"))  # type: ignore[arg-type]
    if api is None or not isinstance(endpoint.get("streaming"), bool):
        raise ServingImportError(
            f"input_config.endpoint type {endpoint.get('type')!r} / streaming {endpoint.get('streaming')!r}: only chat "
            "or completions endpoints, streamed or not, are known",
            where=where,
        )
    return api


def _loadgen(loadgen: dict[str, Any], where: str, fields: dict[str, str]) -> tuple[str, int | None, float | None, str]:
    """aiperf 0.8.0's offered load: a concurrency or a request rate, never both."""
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


def _phase(
    config: dict[str, Any], where: str, fields: dict[str, str]
) -> tuple[str, int | None, float | None, str, float | None]:
    """aiperf 0.13.0's offered load: its one profiling phase (warm-up phases are not measured), as (mode,
    concurrency, target rate, arrival, gamma shape). A gamma phase's shape is its smoothness (aiperf's default 1.0
    where it states none): 1 is Poisson, and is said so."""
    phases = config.get("phases")
    profiling = [(n, p) for n, p in enumerate(phases or []) if isinstance(p, dict) and p.get("kind") == "profiling"]
    if len(profiling) != 1:
        raise ServingImportError(
            f"input_config.phases holds {len(profiling)} phases of kind 'profiling': one is expected", where=where
        )
    n, phase = profiling[0]
    kind, at = phase.get("type"), f"{SUMMARY}: input_config.phases[{n}]"
    if kind not in PHASE_ARRIVALS:
        known = ", ".join(sorted(PHASE_ARRIVALS))
        raise ServingImportError(
            f"input_config.phases[{n}].type {kind!r} is not a load this importer reads ({known})", where=where
        )
    if kind == "concurrency" and isinstance(phase.get("concurrency"), int):
        fields["/scenario/concurrency"] = f"{at}.concurrency"
        return "concurrency", phase["concurrency"], None, "closed-loop", None
    if kind != "concurrency" and isinstance(phase.get("rate"), int | float) and not phase.get("concurrency"):
        fields["/scenario/target_qps"] = f"{at}.rate"
        if kind != "gamma":
            return "request-rate", None, float(phase["rate"]), PHASE_ARRIVALS[kind], None
        stated = phase.get("smoothness")
        shape = AIPERF_DEFAULT_SMOOTHNESS if stated is None else non_negative(stated)
        if not shape:
            raise ServingImportError(
                f"input_config.phases[{n}].smoothness {stated!r} is no gamma shape (a positive number)", where=where
            )
        fields["/scenario/burstiness"] = (
            f"{at}.smoothness" if stated is not None else f"{at} (no smoothness: aiperf's default {shape:g})"
        )
        return "request-rate", None, float(phase["rate"]), "poisson" if shape == 1 else "gamma", shape
    raise ServingImportError(
        f"input_config.phases[{n}] ({kind}) does not state its load alone (concurrency {phase.get('concurrency')!r}, "
        f"rate {phase.get('rate')!r}): the offered load is unknown",
        where=where,
    )


def _warmup(config: dict[str, Any], fields: dict[str, str]) -> dict[str, Any] | None:
    """The warm-up aiperf 0.13.0 ran before its profiling phase (its phases of kind `warmup`, left out of the
    summary and the per-request check): the requests and seconds they state, summed; None when it ran none."""
    warmups = [
        (n, p) for n, p in enumerate(config.get("phases") or []) if isinstance(p, dict) and p.get("kind") == "warmup"
    ]
    if not warmups:
        return None
    requests = [_count(p.get("requests")) for _, p in warmups]
    seconds = [non_negative(p.get("duration")) for _, p in warmups]
    fields["/conditions/warmup"] = (
        f"{SUMMARY}: input_config.phases[{', '.join(str(n) for n, _ in warmups)}] (kind warmup): requests, duration"
    )
    return {
        "iterations": None if None in requests else sum(r for r in requests if r is not None),
        "seconds": None if None in seconds else float(sum(s for s in seconds if s is not None)),
    }


def _count(value: Any) -> int | None:
    """A phase's stated count of requests (None when it states none, or not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


RAMPS = {"concurrency_ramp": "concurrency", "rate_ramp": "request rate", "prefill_ramp": "prefill concurrency"}


def _ramp(config: dict[str, Any]) -> str | None:
    """What the profiling phase ramped up (aiperf's concurrency_ramp, rate_ramp, prefill_ramp: a duration in seconds,
    or {duration, strategy}), in words; None when it ramped nothing. The summary covers the ramp: its figures are
    not all at the stated load."""
    phase = next((p for p in config.get("phases") or [] if isinstance(p, dict) and p.get("kind") == "profiling"), {})
    said = []
    for key, what in RAMPS.items():
        ramp = phase.get(key)
        spec = ramp if isinstance(ramp, dict) else {"duration": ramp}
        if spec.get("duration") is not None:
            how = f", {spec['strategy']}" if spec.get("strategy") else ""
            said.append(f"{what} raised to its level over the first {spec['duration']} s{how} (input_config {key})")
    if not said:
        return None
    return "; ".join(said) + ": the summary's figures include the ramp, so not all of them are at the stated load"


def _synthetic_shape(dataset: dict[str, Any], fields: dict[str, str]) -> dict[str, Any] | None:
    """The request shape of aiperf's synthetic data: fixed or normal input and output lengths (`_length_law`). Other
    data (files, public sets, lognormal, multimodal or empirical lengths) leave the shape to the deployment."""
    prompts = dataset.get("prompts") if dataset.get("type") == "synthetic" else None
    shapes = {}
    for name in ("isl", "osl"):
        law = _length_law((prompts or {}).get(name))
        if law is None:
            return None
        shapes[name] = {"mean": law[0], "stdev": law[1], "distribution": "normal" if law[1] else "constant"}
    at = f"{SUMMARY}: input_config.datasets[0].prompts"
    stated = "mean, stddev (absent: 0, as aiperf reads it)"
    fields["/workload/request_shape/input_tokens"] = f"{at}.isl ({stated})"
    fields["/workload/request_shape/output_tokens"] = f"{at}.osl ({stated})"
    fixed = not shapes["isl"]["stdev"] and not shapes["osl"]["stdev"]
    shape = {
        "kind": "fixed" if fixed else "distribution",
        "input_tokens": shapes["isl"],
        "output_tokens": shapes["osl"],
        "turns": "single",
    }
    # synthetic conversations (--conversation-turn-mean)
    turns = _length_law(dataset.get("turns"))
    if turns is not None and (turns[0] > 1 or turns[1] > 0):
        spread = f" (stddev {turns[1]:g})" if turns[1] else ""
        as_conversations(shape, "aiperf", f"{turns[0]:g} turns{spread}")
        fields["/workload/request_shape/turns"] = f"{SUMMARY}: input_config.datasets[0].turns ({stated})"
    return shape


def _length_law(law: Any) -> tuple[float, float] | None:
    """(mean, stddev) of a fixed or normal law as aiperf 0.13.0's config writes it (aiperf.config.distributions, whose
    export leaves out what was not set): a number or {value} is fixed, {mean} alone normal with stddev 0, {mean,
    stddev} normal. Any other law (median: lognormal; peaks, points), or a value that is not a finite number >= 0:
    None."""
    if isinstance(law, dict) and set(law) in ({"value"}, {"mean"}, {"mean", "stddev"}):
        mean, stdev = non_negative(law.get("value", law.get("mean"))), non_negative(law.get("stddev", 0.0))
    else:
        mean, stdev = non_negative(law), 0.0
    return None if mean is None or stdev is None else (mean, stdev)


def _group(config: dict[str, Any], load: list[tuple[str, str]], drop: tuple[str, ...]) -> str:
    """The run's settings without the load, the output folder and the URL (a harness may serve each level on
    another local port): levels with the same settings are one sweep."""
    trimmed = json.loads(json.dumps(config))
    trimmed.get("endpoint", {}).pop("urls", None)
    for section, key in load:
        parts = trimmed.get(section)
        for part in parts if isinstance(parts, list) else [parts]:
            if isinstance(part, dict):
                part.pop(key, None)
    for key in (*drop, "benchmark_id"):
        trimmed.pop(key, None)
    return json.dumps(trimmed, sort_keys=True)


def _endpoint_of(urls: Any) -> str | None:
    """The endpoint of the tool's one URL; None when it names several (or none)."""
    return endpoint_of(urls[0]) if isinstance(urls, list) and len(urls) == 1 else None
