"""One load level as a protocol 1.2 run document (1.3 where it carries the server's telemetry), and the skeleton
check made before any load is sent.

The system and precision are the serving deployment's (flags or a deployment file): the load generator's own
machine is not the system under test and appears only in software.notes.
"""

from __future__ import annotations

import json
import platform
from collections import Counter
from dataclasses import dataclass
from typing import Any

import protocol

from .. import __version__
from ..record import now
from .deployment import Deployment, launch_settings
from .levels import Level, counted_by
from .loadgen import Target
from .probe import EndpointInfo, public_url
from .shapes import RequestShape
from .telemetry import Sources
from .watch import LevelTelemetry

SERVING_PROTOCOL_VERSION = "1.2"
TELEMETRY_PROTOCOL_VERSION = "1.3"  # metrics.server_telemetry
RUNNER_NAME = "benchreg.runners.serving"


@dataclass(frozen=True)
class Sweep:
    id: str
    mode: str  # request-rate, concurrency, automatic
    levels: int | None  # planned count; None for an automatic sweep
    arrival: str  # poisson, gamma (open loop)
    burstiness: float | None


@dataclass(frozen=True)
class Context:
    """Everything of a run but its measurements."""

    target: Target
    deployment: Deployment
    shape: RequestShape
    sweep: Sweep
    submitter: str
    seed: int
    started_at: str
    telemetry: Sources | None = None


def _system(d: Deployment) -> dict[str, Any]:
    accelerator: dict[str, Any] = {
        "vendor": d.accelerator_vendor,
        "model": d.accelerator_model,
        "count": d.accelerator_count,
    }
    if d.accelerator_memory_gib is not None:
        accelerator["memory_gib"] = d.accelerator_memory_gib
    name = d.system_name or f"{d.accelerator_count}x {d.accelerator_model}"
    notes = {"source": "stated by the submitter (flags or deployment file): an endpoint cannot report its hardware"}
    return {"name": name[:200], "nodes": d.nodes, "accelerators": [accelerator], "host": None, "notes": notes}


def _serving(ctx: Context, info: EndpointInfo | None) -> dict[str, Any]:
    d = ctx.deployment
    return {
        "engine": d.engine,
        "version": d.engine_version or (info.version if info else None),
        "image": d.image,
        "api": ctx.target.api,
        "streaming": True,
        "model": ctx.target.model,
        "endpoint": public_url(ctx.target.base_url),
        "parallelism": {
            "tensor": d.tensor_parallel,
            "expert": d.expert_parallel,
            "pipeline": d.pipeline_parallel,
            "data": d.data_parallel,
            "data_parallel_attention": d.data_parallel_attention,
        },
        "speculative": d.speculative,
        "kv_offload": d.kv_offload,
        "tool": {"name": "benchreg", "version": __version__},
    }


def _software(
    ctx: Context, info: EndpointInfo | None, notes: dict[str, str], settings: dict[str, Any]
) -> dict[str, Any]:
    import aiohttp  # for its version only: importing it costs ~0.3 s, which importers of this module need not pay

    d = ctx.deployment
    client = (
        f"benchreg {__version__}, Python {platform.python_version()}, aiohttp {aiohttp.__version__} (streams), "
        f"{platform.node()}"
    )
    version = d.engine_version or (info.version if info else None)
    return {
        "os": None,
        "frameworks": {str(d.engine): version},
        "container": d.image,
        "settings": settings,
        "notes": {"load_generator": client[:2000], **notes},
        "serving": _serving(ctx, info),
    }


def _precision(d: Deployment) -> dict[str, Any]:
    out: dict[str, Any] = {"weights": d.weights, "activations": d.activations, "kv_cache": d.kv_cache}
    if d.quantization_method is not None:
        out["quantization"] = {"method": d.quantization_method}
    return out


def _workload(ctx: Context) -> dict[str, Any]:
    return {
        "name": ctx.target.model[:200],
        "version": "served",
        "task": "text-generation",
        "shape": {"batch_size": 1, "batching": "sut-chosen"},
        "request_shape": ctx.shape.section(),
    }


def _scenario(ctx: Context, mode: str, load: float, index: int, stop: str | None, objectives: Any) -> dict[str, Any]:
    open_loop = mode == "request-rate"
    s = ctx.sweep
    return {
        "kind": "server",
        "arrival": s.arrival if open_loop else "closed-loop",
        "burstiness": s.burstiness if open_loop and s.arrival == "gamma" else None,
        "target_qps": load if open_loop else None,
        "concurrency": int(load) if not open_loop else None,
        "latency_slo_ms": objectives,
        "sweep": {"id": s.id, "index": index, "levels": s.levels, "mode": s.mode, "stop_reason": stop},
    }


def document(
    ctx: Context,
    level: Level,
    index: int,
    stop: str | None,
    info: EndpointInfo,
    metrics_delta: dict[str, float],
    telemetry: LevelTelemetry | None = None,
) -> dict[str, Any]:
    """The level's validated document (raises protocol.Invalid: a runner bug)."""
    by, token_notes = counted_by([level])
    metrics = level.metrics(by, token_notes)
    client, client_reasons = level.client()
    metrics["client"] = client
    checks = {"client_kept_up": client["kept_up"]}
    done = len(level.completed)
    conditions = {
        "warmup": {"iterations": 0, "seconds": 0.0},
        "window": {"seconds": round(level.seconds, 4), "iterations": done, "repetitions": 1},
        "steady_state": level.steady_state(client_reasons),
        "validity": {"valid": all(checks.values()), "checks": checks},
        "isolation": None,
    }
    notes = {"load": _load_note(ctx, level)}
    failed = Counter(r.detail or r.outcome for r in level.run.records if r.sent == r.sent and r.outcome != "completed")
    if failed:  # what went wrong, in words, for the requests counted as errors, timeouts or incomplete
        notes["failed_requests"] = json.dumps(dict(failed.most_common(10)), ensure_ascii=False)[:2000]
    if metrics_delta:
        notes["endpoint_metrics"] = _counters_note(metrics_delta)
    settings = _settings(ctx, telemetry, metrics, notes)
    return _assemble(ctx, info, level.mode, level.load, index, stop, level.objectives.section(),
                     metrics, conditions, notes, settings)  # fmt: skip


def _settings(
    ctx: Context, telemetry: LevelTelemetry | None, metrics: dict[str, Any], notes: dict[str, str]
) -> dict[str, Any]:
    """software.settings of the level (the stated launch command's, then the engine's own), its telemetry added."""
    settings = stated_settings(ctx.deployment)
    if ctx.deployment.engine_args:
        notes["engine_launch_command"] = ctx.deployment.engine_args[:2000]
    if telemetry is not None:
        _with_telemetry(telemetry, metrics, settings, notes)
    return settings


def _with_telemetry(
    telemetry: LevelTelemetry, metrics: dict[str, Any], settings: dict[str, Any], notes: dict[str, str]
) -> None:
    """The level's server telemetry, its measured energy, and the engine's settings as its info gauges state them
    (read at each level, so an engine relaunched with other settings between levels shows it level by level)."""
    metrics["server_telemetry"] = telemetry.section
    if telemetry.energy is not None:
        metrics["energy"] = telemetry.energy
    if telemetry.no_energy:
        notes["energy"] = telemetry.no_energy[:2000]
    for key, value in telemetry.settings.items():
        settings.setdefault(key, value)  # the launch command the submitter stated is the better witness


def stated_settings(deployment: Deployment) -> dict[str, Any]:
    """The capacity flags of the engine's launch command the deployment states (engine.args, --engine-args), as
    software.settings; ValueError for a flag given twice with two values."""
    if not deployment.engine_args:
        return {}
    return {key: value for key, (value, _) in launch_settings(deployment.engine_args).items()}


def _counters_note(delta: dict[str, float]) -> str:
    """The endpoint's own Prometheus samples over the level (counters as increases), as a note: they are what the
    server saw, measured like the metrics, never a setting of the configuration (a setting would make every level
    and every repetition a configuration of its own)."""
    samples = ", ".join(f"{name} {value:g}" for name, value in sorted(delta.items()))
    return f"the endpoint's GET /metrics over the level (counters as increases): {samples}"[:2000]


def _load_note(ctx: Context, level: Level) -> str:
    if level.mode == "request-rate":
        law = "Poisson" if ctx.sweep.arrival == "poisson" else f"gamma arrivals (shape {ctx.sweep.burstiness:g})"
        return (
            f"open loop, {law} at {level.load:g} req/s, seed {ctx.seed}; {level.run.planned} requests scheduled, "
            f"issued at {level.issue_rate():.2f} req/s; latency and TTFT from the scheduled arrival"
        )
    return (
        f"closed loop, {int(level.load)} users, {level.run.planned} requests (each user sends until the level's "
        "duration has passed and its minimum count was started); latency from each request's send"
    )


def _assemble(
    ctx: Context, info: EndpointInfo | None, mode: str, load: float, index: int, stop: str | None,
    objectives: Any, metrics: dict[str, Any], conditions: dict[str, Any], notes: dict[str, str],
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    version = TELEMETRY_PROTOCOL_VERSION if "server_telemetry" in metrics else SERVING_PROTOCOL_VERSION
    doc = {
        "protocol": f"{protocol.PROTOCOL_NAME}/{version}",
        "phase": "inference",
        "workload": _workload(ctx),
        "scenario": _scenario(ctx, mode, load, index, stop, objectives),
        "precision": _precision(ctx.deployment),
        "system": _system(ctx.deployment),
        "software": _software(ctx, info, notes, settings or {}),
        "conditions": conditions,
        "metrics": metrics,
        "provenance": {
            "runner": {"name": RUNNER_NAME, "version": __version__},
            "submitter": ctx.submitter,
            "source": "runner",
            "started_at": ctx.started_at,
            "finished_at": now(),
        },
    }
    return protocol.check(doc).document


def skeleton_errors(ctx: Context, info: EndpointInfo | None, mode: str, load: float, objectives: Any) -> list[str]:
    """What stops a document of this run from passing the protocol, found BEFORE any load: "pointer: why" each.

    Checks what the deployment must state (by name, with the flag that gives it), then validates a document
    with placeholder measurements, keeping the errors outside /metrics and /conditions (what the load fills).
    """
    missing = ctx.deployment.missing(engine_version_known=bool(info and info.version))
    if missing:
        return [f"{m}: required, and an endpoint cannot tell it" for m in missing]
    try:
        stated_settings(ctx.deployment)
    except ValueError as exc:
        return [f"/software/settings (--engine-args or engine.args in --deployment): {exc}"]
    placeholder = {"primary": "throughput", "throughput": {"value": 0.0, "unit": "tokens/s"}}
    conditions = {
        "window": {"seconds": 1.0, "iterations": 1},
        "steady_state": {"method": "not-assessed", "reached": None},
    }
    try:
        _assemble(ctx, info, mode, load, 0, None, objectives, placeholder, conditions, {})
    except protocol.Invalid as exc:
        return [
            f"{e.pointer or '/'}: {e.message}"
            for e in exc.errors
            if not e.pointer.startswith(("/metrics", "/conditions", "/provenance/finished_at"))
        ]
    return []


def file_name(doc: dict[str, Any]) -> str:
    sweep, scenario = doc["scenario"]["sweep"], doc["scenario"]
    load = f"qps{scenario['target_qps']:g}" if scenario["target_qps"] is not None else f"c{scenario['concurrency']}"
    digest = protocol.check(doc).digest.removeprefix("sha256:")[:12]
    return f"serving-{sweep['id'][:16]}-{sweep['index']:02d}-{load}-{digest}.json"
