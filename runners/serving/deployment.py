"""What the endpoint cannot tell about itself: the deployment, from flags or a YAML, JSON or TOML file.

The file is the one `benchreg import serving --deployment` reads (docs/serving.md, "The deployment file"), so one
description of a deployment serves both its measured and its imported runs:

    system:       {name: ..., nodes: 1, accelerators: {vendor: NVIDIA, model: H100 SXM, count: 8, memory_gib: 80}}
    engine:       {name: vllm, version: 0.11.0, image: vllm/vllm-openai:v0.11.0}
    parallelism:  {tensor: 8, expert: 1, pipeline: 1, data: 1, data_parallel_attention: false}
    precision:    {weights: fp8-e4m3, activations: bf16, kv_cache: fp8-e4m3, quantization: {method: fp8 dynamic}}
    speculative: eagle3, 3 tokens        kv_offload: lmcache, 200 GiB DRAM

The keys only an import reads (workload, submitter, system.host) are refused here with what a run uses instead. A
field the file and the flags both give takes the flag. `missing()` names, by document pointer and by flag, what
the protocol needs and neither gave: the run is refused with that list before any load is sent.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Deployment:
    accelerator_vendor: str | None = None
    accelerator_model: str | None = None
    accelerator_count: int | None = None
    accelerator_memory_gib: float | None = None
    nodes: int | None = None
    system_name: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    image: str | None = None
    tensor_parallel: int | None = None
    expert_parallel: int | None = None
    pipeline_parallel: int | None = None
    data_parallel: int | None = None
    data_parallel_attention: bool | None = None
    weights: str | None = None
    activations: str | None = None
    kv_cache: str | None = None
    quantization_method: str | None = None
    speculative: str | None = None
    kv_offload: str | None = None

    def merged(self, flags: dict[str, Any]) -> Deployment:
        """This deployment with every flag that was given (not None) on top."""
        return replace(self, **{k: v for k, v in flags.items() if v is not None and k in _FIELDS})

    def missing(self, engine_version_known: bool) -> list[str]:
        """What a serving run must state and this does not: "pointer (--flag or file key)" each."""
        out = []
        for name, pointer in _REQUIRED.items():
            if getattr(self, name) is None and not (name == "engine_version" and engine_version_known):
                out.append(f"{pointer} (--{name.replace('_', '-')} or {_FILE_KEYS[name]} in --deployment)")
        return out


_FIELDS = {f.name for f in fields(Deployment)}
_REQUIRED = {
    "accelerator_vendor": "/system/accelerators/0/vendor",
    "accelerator_model": "/system/accelerators/0/model",
    "accelerator_count": "/system/accelerators/0/count",
    "nodes": "/system/nodes",
    "engine": "/software/serving/engine",
    "engine_version": "/software/serving/version",
    "tensor_parallel": "/software/serving/parallelism/tensor",
    "weights": "/precision/weights",
    "activations": "/precision/activations",
    "kv_cache": "/precision/kv_cache",
}
# Where each field sits in a deployment file (dotted: nested mappings), as registry/importers/serving reads it.
_FILE_KEYS = {
    "accelerator_vendor": "system.accelerators.vendor",
    "accelerator_model": "system.accelerators.model",
    "accelerator_count": "system.accelerators.count",
    "accelerator_memory_gib": "system.accelerators.memory_gib",
    "nodes": "system.nodes",
    "system_name": "system.name",
    "engine": "engine.name",
    "engine_version": "engine.version",
    "image": "engine.image",
    "tensor_parallel": "parallelism.tensor",
    "expert_parallel": "parallelism.expert",
    "pipeline_parallel": "parallelism.pipeline",
    "data_parallel": "parallelism.data",
    "data_parallel_attention": "parallelism.data_parallel_attention",
    "weights": "precision.weights",
    "activations": "precision.activations",
    "kv_cache": "precision.kv_cache",
    "quantization_method": "precision.quantization.method",
    "speculative": "speculative",
    "kv_offload": "kv_offload",
}
# Keys of the shared file that only an import reads, and what a run uses instead.
_IMPORT_ONLY = {
    "workload": "a run's request shape and workload come from --input-tokens/--output-tokens or --prompts",
    "submitter": "a run's submitter is --submitter",
    "system.host": "a run records its own host",
    "precision.quantization.granularity": "a run records the quantization method only",
    "precision.quantization.library": "a run records the quantization method only",
}
_TYPES: dict[str, tuple[type, ...]] = {
    "accelerator_count": (int,),
    "nodes": (int,),
    "accelerator_memory_gib": (int, float),
    "data_parallel_attention": (bool,),
    **{k: (int,) for k in ("tensor_parallel", "expert_parallel", "pipeline_parallel", "data_parallel")},
}


def _parse(path: Path) -> Any:
    """The file's content: TOML (.toml), YAML (.yaml, .yml) or JSON; ValueError naming the file when unreadable."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"{path}: over {MAX_FILE_BYTES} bytes")
    text = path.read_text(encoding="utf-8")
    kind = {".toml": "TOML", ".yaml": "YAML", ".yml": "YAML"}.get(path.suffix, "JSON")
    try:
        if kind == "TOML":
            return tomllib.loads(text)
        return yaml.safe_load(text) if kind == "YAML" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: not valid {kind}: {exc}") from None


def load(path: Path) -> Deployment:
    """A deployment file; ValueError naming the file and key of anything unknown or mistyped."""
    data = _parse(path)
    try:
        return from_mapping(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def from_mapping(data: Any) -> Deployment:
    """A deployment in the file's layout (sections and keys as above), from a file or a plan's serving job.

    ValueError naming the key of anything unknown or mistyped."""
    if not isinstance(data, dict):
        raise ValueError("the deployment must be a mapping")
    by_key = {key: name for name, key in _FILE_KEYS.items()}
    values: dict[str, Any] = {}
    for key, value in _flatten(data):
        elsewhere = next((why for prefix, why in _IMPORT_ONLY.items() if f"{key}.".startswith(f"{prefix}.")), None)
        if elsewhere:
            raise ValueError(f"{key} is read by `benchreg import serving` only: {elsewhere}")
        if key not in by_key:
            raise ValueError(f"unknown key {key!r} (known: {', '.join(sorted(by_key))})")
        name = by_key[key]
        wanted = _TYPES.get(name, (str,))
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            raise ValueError(f"{key} must be {' or '.join(t.__name__ for t in wanted)}, not {value!r}")
        values[name] = value
    return Deployment(**values)


def to_mapping(deployment: Deployment) -> dict[str, Any]:
    """The deployment in the file's layout, stated fields only: what `from_mapping` reads back."""
    out: dict[str, Any] = {}
    for name, key in _FILE_KEYS.items():
        value = getattr(deployment, name)
        if value is None:
            continue
        *sections, last = key.split(".")
        node = out
        for section in sections:
            node = node.setdefault(section, {})
        node[last] = value
    return out


def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for key, value in data.items():
        if isinstance(value, dict):
            out += _flatten(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def stated_fields(deployment: Deployment) -> dict[str, Any]:
    """Where each stated required fact (and the quantisation method) lands in a run's document, by JSON pointer:
    what a document measured under this deployment must say."""
    pointers = {**_REQUIRED, "quantization_method": "/precision/quantization/method"}
    return {
        pointer: getattr(deployment, name)
        for name, pointer in pointers.items()
        if getattr(deployment, name) is not None
    }
