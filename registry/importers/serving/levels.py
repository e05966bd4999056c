"""One load level as a tool reported it, and the protocol document (1.2, or 1.3 for a level with a 1.3 field) it
becomes with the deployment."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

from protocol import PROTOCOL_NAME, rules
from protocol.percentiles import quantile
from runners.serving.deployment import launch_settings

from .deployment import Deployment, missing
from .errors import ServingImportError

PERCENTILE_KEYS = ("p50", "p90", "p95", "p99")
# The minor whose fields an imported level uses, not the newest this code knows: the version is part of the
# document and so of its digest, and importing the same files after a protocol minor is added must find the runs
# already stored ("known"), not store them again. Raise it only when the importer writes a field of a newer minor.
IMPORT_PROTOCOL_VERSION = "1.2"
# The minor of a level that carries a field added since: `metrics.ttfot_ms` (time to first answer token) exists only
# in 1.3, so a level whose files give it declares 1.3 and every other level keeps 1.2 (and its digest).
FIELDS_SINCE = {"ttfot_ms": "1.3"}


@dataclass
class Level:
    """What one tool file says about one load level. `metrics` is the protocol's metrics section (no headline yet);
    `fields` maps each pointer of the document that holds a number from a file to that file, field and unit."""

    tool: str  # software.serving.tool.name
    tool_version: str
    path: str  # the summary file, as given
    files: dict[str, str]  # file name in `fields` -> "sha256:..."
    mode: str  # "concurrency" or "request-rate"
    concurrency: int | None
    target_qps: float | None
    arrival: str
    model: str
    api: str
    streaming: bool
    endpoint: str | None
    metrics: dict[str, Any]
    window_s: float
    started_at: str | None
    finished_at: str | None
    dataset: str | None
    group: str  # levels of one tool run share it (the run's settings without the load)
    request_shape: dict[str, Any] | None = None
    # Which part of a file holding several levels this one is (guidellm: "benchmarks[1]: concurrent 4"): the
    # levels of one file share its digest, and the registry tells measurements apart by the files and this.
    scenario: str | None = None
    # one of several results a line of one file (vLLM's --append-result): a file can hold more than one sweep
    lines_of_one_file: bool = False
    burstiness: float | None = None  # the gamma shape of the arrivals, where the tool states it
    # The warm-up before the measured window, as the files state it (conditions.warmup: iterations, seconds); None
    # where they state none
    warmup: dict[str, Any] | None = None
    stated: dict[str, Any] = field(default_factory=dict)  # deployment facts the files state (harness records)
    # Engine settings that change capacity, as the files state them (software.settings: the engine's launch command)
    settings: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def load(self) -> float:
        """The level's place in its sweep: the offered load, or in a sweep that mixes closed and open loop levels
        (guidellm's `sweep`: synchronous, throughput, then rates) the request rate it achieved."""
        if self.mode == "automatic":
            return float(self.metrics["request_rate"]["value"])
        offered = self.concurrency if self.mode == "concurrency" else self.target_qps
        return float(offered or 0)


def non_negative(value: Any) -> float | None:
    """A finite number >= 0 as a float (a count, a duration, a mean length), None when the value is not one."""
    finite = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    return float(value) if finite else None


def as_conversations(shape: dict[str, Any], tool: str, turns: str) -> None:
    """Mark a synthetic request shape as the tool's multi-turn conversations (`turns` in words, e.g. "3 turns"):
    each turn sends the conversation so far plus the stated input tokens, so the prompts grow turn by turn and the
    run is never the single-turn shape of the same lengths."""
    shape["turns"] = "multi"
    shape["notes"] = (
        f"{tool} synthetic conversations of {turns}: each turn's prompt is the conversation so far and the input "
        "tokens above as new text"
    )


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# Where aiperf's summary objects keep each statistic: protocol name -> the tool's key.
AIPERF_NAMES = {"min": "min", "mean": "avg", "stdev": "std", **{p: p for p in PERCENTILE_KEYS}, "max": "max"}


def distribution(
    source: dict[str, Any],
    unit: str,
    scale: float,
    method: str,
    at: str,
    label: str,
    fields: dict[str, str],
    names: dict[str, str] = AIPERF_NAMES,
) -> dict[str, Any] | None:
    """A protocol distribution from a tool's summary object ({avg, std, min, max, p50, ..., count} in aiperf's
    `names`), in `unit` after multiplying by `scale`; percentiles the count cannot support are left out (protocol
    rules)."""
    count = source.get("count")
    if not isinstance(count, int) or count < 1:
        return None
    out: dict[str, Any] = {"count": count, "method": method, "unit": unit}
    for name, key in names.items():
        value = source.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            if name in rules.MIN_SAMPLES_FOR_PERCENTILE and not rules.percentile_allowed(name, count):
                continue
            out[name] = float(value) if scale == 1 else round(float(value) * scale, 9)
            conversion = "" if scale == 1 else f", × {scale:g}"
            fields[f"{at}/{name}"] = f"{label}.{key}{conversion}"
    fields[f"{at}/count"] = f"{label}.count"
    return out


def endpoint_of(url: Any) -> str | None:
    """scheme://host:port of a tool's URL (no path, no credentials), or None."""
    if not isinstance(url, str) or "://" not in url:
        return None
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    return f"{scheme.lower()}://{host}" if host else None


def sweep_ids(levels: list[Level]) -> dict[int, tuple[str, int, int]]:
    """For each level (by position): its sweep id, its index in load order and the sweep's level count. A sweep is
    the levels of one tool run (`group`); its id is derived from the content of its files, so importing the same
    files again gives the same id (and the same documents)."""
    groups: dict[str, list[int]] = {}
    for n, level in enumerate(levels):
        groups.setdefault(f"{level.tool}|{level.group}", []).append(n)
    out: dict[int, tuple[str, int, int]] = {}
    for members in groups.values():
        members.sort(key=lambda n: levels[n].load)
        loads = [levels[n].load for n in members]
        if len(set(loads)) != len(loads):
            dup = next(x for x in loads if loads.count(x) > 1)
            raise ServingImportError(
                f"two levels of one {levels[members[0]].tool} run offer the same load ({dup:g}): import them apart",
                where=levels[members[loads.index(dup)]].path,
            )
        content = "\n".join(sorted(d for n in members for d in levels[n].files.values()))
        if levels[members[0]].lines_of_one_file:
            # lines of one file share its digest: which lines are this sweep's tells it from the file's other sweeps
            content += "\n" + "\n".join(sorted(str(levels[n].scenario) for n in members))
        sweep = f"{levels[members[0]].tool}-{hashlib.sha256(content.encode()).hexdigest()[:16]}"
        for index, n in enumerate(members):
            out[n] = (sweep, index, len(members))
    return out


def document(level: Level, deployment: Deployment, sweep: tuple[str, int, int], submitter: str) -> dict[str, Any]:
    """The run document of one level: protocol 1.2, or the minor that added a field the level carries."""
    sweep_id, index, count = sweep
    metrics = dict(level.metrics)
    metrics["primary"] = "throughput"
    return {
        "protocol": f"{PROTOCOL_NAME}/{protocol_version(metrics)}",
        "phase": "inference",
        "workload": _workload(level, deployment),
        "scenario": {
            "kind": "server",
            "arrival": level.arrival,
            "target_qps": level.target_qps,
            "concurrency": level.concurrency,
            # only where the tool states it, so documents of tools that do not (and their digests) are unchanged
            **({"burstiness": level.burstiness} if level.burstiness is not None else {}),
            "sweep": {"id": sweep_id, "index": index, "levels": count, "mode": level.mode, "stop_reason": None},
        },
        "precision": _precision(level, deployment),
        "system": _system(level, deployment),
        "software": {
            "os": None,
            "serving": _serving(level, deployment),
            # only where the files state one, so documents of tools that do not (and their digests) are unchanged
            **({"settings": settings} if (settings := _settings(level, deployment)) else {}),
        },
        "conditions": {
            "warmup": level.warmup,
            "window": {"seconds": level.window_s, "iterations": metrics["requests"]["completed"], "repetitions": 1},
            "steady_state": {"method": "not-assessed", "reached": None},
        },
        "metrics": metrics,
        "provenance": {
            "runner": {"name": level.tool, "version": level.tool_version},
            "submitter": submitter,
            "source": "import",
            "started_at": level.started_at,
            "finished_at": level.finished_at,
            "origin": {
                "kind": "serving-benchmark",
                "benchmark": level.dataset,
                "files": dict(sorted(level.files.items())),
                "fields": dict(sorted(level.fields.items())),
                "unparsed": dict(sorted(level.notes.items())) or None,
                **({"scenario": level.scenario} if level.scenario else {}),
            },
        },
    }


def protocol_version(metrics: dict[str, Any]) -> str:
    """IMPORT_PROTOCOL_VERSION, or the newest minor of FIELDS_SINCE that a metric of the level needs."""
    needed = [FIELDS_SINCE[name] for name in metrics if name in FIELDS_SINCE]
    return max([IMPORT_PROTOCOL_VERSION, *needed], key=lambda version: int(version.partition(".")[2]))


def _settings(level: Level, deployment: Deployment) -> dict[str, Any]:
    """The capacity flags of the deployment's engine.args, under those the tool's own files state for the level (a
    launch command kept beside the level is the better witness of how that level was served)."""
    command = deployment.get("engine.args")
    stated: dict[str, Any] = {}
    if command:
        try:
            stated = {key: value for key, (value, _) in launch_settings(command).items()}
        except ValueError as exc:
            raise ServingImportError(f"engine.args: {exc}", where=deployment.source) from None
    return dict(sorted({**stated, **level.settings}.items()))


def _workload(level: Level, deployment: Deployment) -> dict[str, Any]:
    shape = deployment.get("workload.request_shape") or level.request_shape
    _same_shape(level, shape)
    if shape is None:
        raise ServingImportError(
            f"{level.tool}'s files do not state the request shape (lengths or their distributions): give "
            "workload.request_shape in the deployment file (kind fixed, distribution, dataset or agentic-multi-turn)",
            where=level.path,
        )
    name = deployment.get("workload.name") or level.dataset
    if name is None:
        raise missing("workload.name")
    return {
        "name": str(name)[:200],
        "version": str(deployment.get("workload.version") or "unversioned")[:100],
        "task": "text-generation",
        "dataset": {"name": level.dataset, "version": None, "seed": None, "samples": None} if level.dataset else None,
        "shape": {"batch_size": 1, "batching": "sut-chosen"},
        "request_shape": shape,
    }


def _same_shape(level: Level, shape: Any) -> None:
    """Refuse a deployment file whose request shape contradicts the one the result files state: other turns, or
    other mean input or output tokens (the files are the evidence; a deployment may restate their shape with
    fewer fields, never say another)."""
    files = level.request_shape
    if files is None or not isinstance(shape, dict) or shape is files:
        return
    said = []
    if shape.get("turns") is not None and shape.get("turns") != files.get("turns"):
        said.append(f"turns {shape.get('turns')!r} where the files say {files.get('turns')!r}")
    for side in ("input_tokens", "output_tokens"):
        mean, stated = (shape.get(side) or {}).get("mean"), (files.get(side) or {}).get("mean")
        if mean is not None and stated is not None and mean != stated:
            said.append(f"{side} mean {mean!r} where the files say {stated!r}")
    if said:
        raise ServingImportError(
            f"the deployment's workload.request_shape contradicts the result files: {'; '.join(said)}", where=level.path
        )


def _precision(level: Level, deployment: Deployment) -> dict[str, Any]:
    weights = deployment.require("precision.weights", level.stated.get("weights"))
    stated = level.stated.get("weights")
    if stated and deployment.get("precision.weights") and not _same_family(stated, weights):
        raise ServingImportError(
            f"the deployment says weights {weights!r} but the result files say {stated!r}", where=level.path
        )
    method = deployment.get("precision.quantization.method")
    if weights in rules.QUANTIZED_FORMATS and method is None:
        raise missing("precision.quantization.method")
    return {
        "weights": weights,
        "activations": deployment.require("precision.activations"),
        "kv_cache": deployment.require("precision.kv_cache"),
        "quantization": deployment.get("precision.quantization"),
    }


def _same_family(stated: str, declared: str) -> bool:
    for family in (rules.FP4_FORMATS, rules.FP6_FORMATS, rules.FP8_FORMATS):
        if stated in family:
            return declared in family
    return stated == declared


def _system(level: Level, deployment: Deployment) -> dict[str, Any]:
    vendor = deployment.require("system.accelerators.vendor")
    model = deployment.require("system.accelerators.model")
    count = deployment.require("system.accelerators.count")
    implied = level.stated.get("accelerator_count")
    if isinstance(implied, float) and abs(implied - count) > 0.01 * count:
        raise ServingImportError(
            f"the deployment says {count} accelerators but {level.stated['accelerator_count_from']} gives "
            f"{implied:.4g}",
            where=level.path,
        )
    accelerator = {"vendor": vendor, "model": model, "count": count}
    if deployment.get("system.accelerators.memory_gib") is not None:
        accelerator["memory_gib"] = deployment.get("system.accelerators.memory_gib")
    return {
        "name": deployment.get("system.name") or f"{count}x {vendor} {model}",
        "nodes": deployment.get("system.nodes") or 1,
        "accelerators": [accelerator],
        "host": deployment.get("system.host"),
    }


def _serving(level: Level, deployment: Deployment) -> dict[str, Any]:
    stated = level.stated
    parallelism = {
        name: _agreeing(level, deployment, f"parallelism.{name}", stated.get(name))
        for name in ("tensor", "expert", "pipeline", "data", "data_parallel_attention")
    }
    if parallelism["tensor"] is None:
        raise missing("parallelism.tensor")
    return {
        "engine": _agreeing(level, deployment, "engine.name", stated.get("engine")) or _raise(missing("engine.name")),
        "version": deployment.require("engine.version"),
        "image": _agreeing(level, deployment, "engine.image", stated.get("image")),
        "api": level.api,
        "streaming": level.streaming,
        "model": level.model,
        "endpoint": level.endpoint,
        "parallelism": parallelism,
        "speculative": _agreeing(level, deployment, "speculative", stated.get("speculative")),
        "kv_offload": _agreeing(level, deployment, "kv_offload", stated.get("kv_offload")),
        "tool": {"name": level.tool, "version": level.tool_version},
    }


def _agreeing(level: Level, deployment: Deployment, key: str, stated: Any) -> Any:
    """The deployment's value of `key`, or what the files state; refused when both say and they differ."""
    declared = deployment.get(key)
    if declared is not None and stated is not None and declared != stated:
        raise ServingImportError(
            f"the deployment says {key} = {declared!r} but the result files say {stated!r}", where=level.path
        )
    return declared if declared is not None else stated


def _raise(error: ServingImportError) -> Any:
    raise error


def linear_quantile(values: list[float], q: float) -> float:
    """The q quantile with numpy's linear interpolation: how aiperf and vLLM compute the percentiles they print,
    so a per-request file can be checked against its own summary."""
    return float(quantile(values, q, "linear"))


# A per-request file must give its own summary back within float rounding.
AGREEMENT = 1e-6


def agrees(where: str, what: str, computed: float, reported: float) -> None:
    """Refuse the file (naming it and the figure) when a figure computed from its per-request records is not the
    one its summary reports."""
    if abs(computed - reported) > AGREEMENT * max(abs(reported), 1.0):
        raise ServingImportError(f"{what} is {computed:.9g} but the summary says {reported:.9g}", where=where)
