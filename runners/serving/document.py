"""One load level as a protocol 1.3 run document, and the skeleton check made before any load is sent.

The system and precision are the serving deployment's (flags or a deployment file): the load generator's own
machine is not the system under test and appears only in software.notes. 1.3 for its per-request export, named in
provenance.artifacts, and the time to first answer token (metrics.ttfot_ms) and reasoning token total.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
from collections import Counter
from dataclasses import dataclass
from typing import Any

import protocol

from .. import __version__
from ..record import now
from .deployment import Deployment, launch_settings
from .export import artifact
from .levels import Level, counted_by
from .loadgen import Target
from .probe import EndpointInfo, public_url
from .sessions import session_words, workload_metrics
from .shapes import RequestShape
from .telemetry import Sources
from .watch import LevelTelemetry

# 1.3: a file workload's request_shape fields, the trace arrival, metrics.prefix_cache and metrics.sessions,
# metrics.ttfot_ms, provenance.artifacts and metrics.server_telemetry.
SERVING_PROTOCOL_VERSION = "1.3"
RUNNER_NAME = "benchreg.runners.serving"


@dataclass(frozen=True)
class Sweep:
    id: str
    mode: str  # request-rate, concurrency, automatic
    levels: int | None  # planned count; None for an automatic sweep
    arrival: str  # poisson, gamma, trace (open loop)
    burstiness: float | None
    speedups: tuple[float, ...] = ()  # a trace replay's speed-up per level


@dataclass(frozen=True)
class Warmup:
    """The requests sent before a level and thrown away: how many, over how long (s), how many completed, by how
    many users at once."""

    sent: int
    seconds: float
    completed: int
    users: int

    def note(self) -> str | None:
        if not self.sent:
            return None
        return (
            f"{self.sent} warm-up requests ({self.completed} completed) sent closed loop by {self.users} users over "
            f"{self.seconds:g} s before the level, with prompts of their own; excluded from every figure, count and "
            "endpoint counter of this document"
        )


@dataclass(frozen=True)
class Measured:
    """A measured level as the runner hands it on: its index in the sweep, its warm-up and its per-request
    export's bytes (None: not kept)."""

    level: Level
    index: int
    warmup: Warmup
    requests: bytes | None
    telemetry: LevelTelemetry | None = None  # what the server's metrics said over the level (None: not scraped)


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
    ctx: Context, measured: Measured, stop: str | None, info: EndpointInfo, metrics_delta: dict[str, float]
) -> dict[str, Any]:
    """The level's validated document (raises protocol.Invalid: a runner bug)."""
    level, index, warmup = measured.level, measured.index, measured.warmup
    by, token_notes = counted_by([level])
    metrics = level.metrics(by, token_notes)
    client, client_reasons = level.client()
    metrics["client"] = client
    metrics.update(workload_metrics(level.run))
    checks = {"client_kept_up": client["kept_up"]}
    done = len(level.completed)
    conditions = {
        "warmup": {"iterations": warmup.sent, "seconds": warmup.seconds},
        "window": {"seconds": round(level.seconds, 4), "iterations": done, "repetitions": 1},
        "steady_state": level.steady_state(client_reasons),
        "validity": {"valid": all(checks.values()), "checks": checks},
        "isolation": None,
    }
    notes = _notes(ctx, level, index, warmup, metrics_delta)
    settings = _settings(ctx, measured.telemetry, metrics, notes)
    artifacts = []
    if measured.requests is not None:
        digest = hashlib.sha256(measured.requests).hexdigest()
        artifacts.append(artifact(measured.requests, export_name(ctx.sweep.id, index, level.mode, level.load, digest)))
    return _assemble(ctx, info, level.mode, level.load, index, stop, level.objectives.section(),
                     metrics, conditions, notes, artifacts, settings)  # fmt: skip


def _notes(ctx: Context, level: Level, index: int, warmup: Warmup, metrics_delta: dict[str, float]) -> dict[str, str]:
    notes = {"load": _load_note(ctx, level, index)}
    failed = Counter(r.detail or r.outcome for r in level.run.records if r.sent == r.sent and r.outcome != "completed")
    if failed:  # what went wrong, in words, for the requests counted as errors, timeouts or incomplete
        notes["failed_requests"] = json.dumps(dict(failed.most_common(10)), ensure_ascii=False)[:2000]
    if metrics_delta:
        notes["endpoint_metrics"] = _counters_note(metrics_delta)
    if warmup.note():
        notes["warmup"] = str(warmup.note())
    return notes


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


def _load_note(ctx: Context, level: Level, index: int) -> str:
    if ctx.sweep.arrival == "trace":
        speedup = ctx.sweep.speedups[index] if index < len(ctx.sweep.speedups) else math.nan
        return (
            f"trace replay at {speedup:g}x the trace's pace: {level.run.planned} requests, each at its arrival time "
            f"divided by {speedup:g} ({level.load:g} req/s offered), issued at {level.issue_rate():.2f} req/s; "
            "latency and TTFT from the scheduled arrival"
        )
    sessions = session_words(level.run)
    if sessions is not None:
        return f"closed loop, {int(level.load)} users, {level.run.planned} requests; {sessions}"
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
    artifacts: list[dict[str, Any]] | None = None, settings: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    doc: dict[str, Any] = {
        "protocol": f"{protocol.PROTOCOL_NAME}/{SERVING_PROTOCOL_VERSION}",
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
    if artifacts:
        doc["provenance"]["artifacts"] = artifacts
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


def _stem(sweep_id: str, index: int, open_loop: bool, load: float) -> str:
    return f"serving-{sweep_id[:16]}-{index:02d}-{f'qps{load:g}' if open_loop else f'c{int(load)}'}"


def file_name(doc: dict[str, Any]) -> str:
    sweep, scenario = doc["scenario"]["sweep"], doc["scenario"]
    open_loop = scenario["target_qps"] is not None
    load = scenario["target_qps"] if open_loop else scenario["concurrency"]
    digest = protocol.check(doc).digest.removeprefix("sha256:")[:12]
    return f"{_stem(sweep['id'], sweep['index'], open_loop, load)}-{digest}.json"


def export_name(sweep_id: str, index: int, mode: str, load: float, sha256_hex: str) -> str:
    """The per-request export's file name, beside the document: the level's, and the export's own digest."""
    return f"{_stem(sweep_id, index, mode == 'request-rate', load)}-requests-{sha256_hex[:12]}.jsonl"
