"""The deployment file: the one format and the one parser of what an endpoint (or a tool's result file) cannot
tell about the deployment, for `benchreg run serving --deployment` and `benchreg import serving --deployment` alike
(docs/serving.md, "The deployment file"). YAML (.yaml, .yml), TOML (.toml) or JSON (any other name), one mapping:

    system:       {name: ..., nodes: 1, accelerators: {vendor: NVIDIA, model: H100 SXM, count: 8, memory_gib: 80},
                   host: {...}}
    engine:       {name: vllm, version: 0.11.0, image: vllm/vllm-openai:v0.11.0,
                   args: "vllm serve ... --max-num-seqs 256 --max-num-batched-tokens 8192"}
    parallelism:  {tensor: 8, expert: 1, pipeline: 1, data: 1, data_parallel_attention: false}
    precision:    {weights: fp8-e4m3, activations: bf16, kv_cache: fp8-e4m3,
                   quantization: {method: fp8 dynamic, granularity: ..., library: ...}}
    speculative: eagle3, 3 tokens        kv_offload: lmcache, 200 GiB DRAM
    workload:     {name: ..., version: ..., request_shape: {...}}      submitter: Example Lab

`read_file` and `check_mapping` read and check any such file (every key known, every value of its kind; null is
"not said"); the import keeps the mapping (registry/importers/serving/deployment.py), a run takes the `Deployment`
below. The keys only an import reads (workload, submitter, system.host, the quantisation's granularity and
library) are refused by a run with what it uses instead. A field the file and the flags both give takes the flag.
`missing()` names, by document pointer and by flag, what the protocol needs and neither gave: the run is refused
with that list before any load is sent.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from protocol import rules

MAX_FILE_BYTES = 256 * 1024
MAX_TEXT = 500
MAX_COMMAND = 8000
# Every key of the file (dotted: nested mappings) and the kind of value it holds. "mapping" keys are kept whole
# (the protocol's schema checks what is inside them).
KEYS: dict[str, str] = {
    "system.name": "text",
    "system.nodes": "count",
    "system.accelerators.vendor": "text",
    "system.accelerators.model": "text",
    "system.accelerators.count": "count",
    "system.accelerators.memory_gib": "number",
    "system.host": "mapping",
    "engine.name": "text",
    "engine.version": "text",
    "engine.image": "text",
    "engine.args": "command",
    "precision.weights": "format",
    "precision.activations": "format",
    "precision.kv_cache": "format",
    "precision.quantization.method": "text",
    "precision.quantization.granularity": "text",
    "precision.quantization.library": "text",
    "parallelism.tensor": "count",
    "parallelism.expert": "count",
    "parallelism.pipeline": "count",
    "parallelism.data": "count",
    "parallelism.data_parallel_attention": "flag",
    "speculative": "text",
    "kv_offload": "text",
    "workload.name": "text",
    "workload.version": "text",
    "workload.request_shape": "mapping",
    "submitter": "text",
}
FORMATS = frozenset(rules.QUANTIZED_FORMATS | rules.UNQUANTIZED_FORMATS | {"unspecified"})
_WANTED = {
    "text": f"a non-empty text of at most {MAX_TEXT} characters",
    "command": f"the engine's launch command line, a non-empty text of at most {MAX_COMMAND} characters",
    "count": "a whole number of at least 1",
    "number": "a positive number",
    "flag": "true or false",
    "mapping": "a mapping",
    "format": "a format of the protocol (" + ", ".join(sorted(FORMATS)) + ")",
}
# The mappings that hold keys: every proper prefix of a key ("system", "system.accelerators", ...).
_SECTIONS = {".".join(key.split(".")[:n]) for key in KEYS for n in range(1, key.count(".") + 1)}


def read_file(path: Path) -> dict[str, Any]:
    """The file's mapping, checked (`check_mapping`); ValueError naming the file and what is wrong."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(f"over {MAX_FILE_BYTES} bytes")
        data = _parse(path.read_bytes(), path.suffix)
        check_mapping(data)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the deployment file ({exc.strerror})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return data  # type: ignore[no-any-return]


def _parse(raw: bytes, suffix: str) -> Any:
    kind = {".toml": "TOML", ".yaml": "YAML", ".yml": "YAML"}.get(suffix, "JSON")
    try:
        text = raw.decode("utf-8")
        if kind == "TOML":
            return tomllib.loads(text)
        return yaml.safe_load(text) if kind == "YAML" else json.loads(text)
    except (ValueError, RecursionError, yaml.YAMLError) as exc:  # tomllib's and UnicodeDecodeError are ValueErrors
        said = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ValueError(f"not valid {kind}: {said}") from None


def check_mapping(data: Any) -> dict[str, Any]:
    """The stated values of a deployment in the file's layout, by dotted key (null: not stated, left out).
    ValueError naming the key of anything unknown or of the wrong kind."""
    if not isinstance(data, dict):
        raise ValueError("the deployment must be one mapping (see docs/serving.md)")
    out: dict[str, Any] = {}
    for key, value in _flatten(data):
        kind = KEYS[key]
        if value is not None and not _fits(kind, value):
            raise ValueError(f"{key} must be {_WANTED[kind]}, not {str(value)[:80]!r}")
        if value is not None:
            out[key] = value
    return out


def _fits(kind: str, value: Any) -> bool:
    if kind == "text":
        return isinstance(value, str) and 0 < len(value.strip()) <= MAX_TEXT
    if kind == "command":
        return isinstance(value, str) and 0 < len(value.strip()) <= MAX_COMMAND
    if kind == "format":
        return value in FORMATS
    if kind == "count":
        return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1_000_000
    if kind == "number":
        good = isinstance(value, int | float) and not isinstance(value, bool)
        return good and math.isfinite(value) and 0 < value <= 1e9
    if kind == "flag":
        return isinstance(value, bool)
    return isinstance(value, dict)


def _flatten(data: dict[Any, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of every leaf, and of every "mapping" key whole; ValueError at the first unknown key."""
    known = sorted(k.removeprefix(prefix).split(".")[0] for k in KEYS if k.startswith(prefix))
    out = []
    for key, value in data.items():
        here = f"{prefix}{key}"
        if here in KEYS and (KEYS[here] == "mapping" or not isinstance(value, dict)):
            out.append((here, value))
        elif here in _SECTIONS and isinstance(value, dict):
            out += _flatten(value, f"{here}.")
        elif here in _SECTIONS and value is not None:
            raise ValueError(f"{here} must be a mapping, not {str(value)[:80]!r}")
        elif here not in _SECTIONS:
            raise ValueError(f"unknown key {here!r} (known here: {', '.join(dict.fromkeys(known))})")
    return out


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
    engine_args: str | None = None
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
# Where each field of a run's Deployment sits in the file (a key of KEYS).
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
    "engine_args": "engine.args",
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


def load(path: Path) -> Deployment:
    """A run's deployment file; ValueError naming the file and key of anything unknown, mistyped or import-only."""
    data = read_file(path)
    try:
        return from_mapping(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def from_mapping(data: Any) -> Deployment:
    """A run's deployment in the file's layout (sections and keys as above), from a file or a plan's serving job.

    ValueError naming the key of anything unknown, mistyped, or read by an import only."""
    by_key = {key: name for name, key in _FILE_KEYS.items()}
    values: dict[str, Any] = {}
    for key, value in check_mapping(data).items():
        elsewhere = next((why for prefix, why in _IMPORT_ONLY.items() if f"{key}.".startswith(f"{prefix}.")), None)
        if elsewhere:
            raise ValueError(f"{key} is read by `benchreg import serving` only: {elsewhere}")
        values[by_key[key]] = value
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


def stated_fields(deployment: Deployment) -> dict[str, Any]:
    """Where each stated required fact (and the quantisation method) lands in a run's document, by JSON pointer:
    what a document measured under this deployment must say."""
    pointers = {**_REQUIRED, "quantization_method": "/precision/quantization/method"}
    return {
        pointer: getattr(deployment, name)
        for name, pointer in pointers.items()
        if getattr(deployment, name) is not None
    }


# The engine launch flags that change a deployment's capacity (the decision's candidate is the configuration with
# them: DECISIONS.md, "Which runs answer it"), and the software.settings name each becomes: read from a run's
# `engine.args` and from the launch command a tool keeps beside its results (registry/importers/serving/inferencex).
CAPACITY_FLAGS = {
    "--max-num-seqs": "max_num_seqs",
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "--max-running-requests": "max_running_requests",
    "--chunked-prefill-size": "chunked_prefill_size",
    "--max-total-tokens": "max_total_tokens",
}


def launch_settings(command: str) -> dict[str, tuple[int | str, str]]:
    """{settings name: (value, the flag)} of the capacity flags in an engine's launch command: `--max-num-seqs 16`
    (or `--max-num-seqs=16`) gives max_num_seqs 16. ValueError for a flag given twice with two values."""
    words = command.replace("=", " ").split()
    out: dict[str, tuple[int | str, str]] = {}
    for flag, key in CAPACITY_FLAGS.items():
        found = {words[i + 1] for i, w in enumerate(words[:-1]) if w == flag}
        if len(found) > 1:
            raise ValueError(f"{flag} is given twice with different values")
        if found:
            value = found.pop()
            out[key] = (int(value) if value.isdigit() else value[:MAX_TEXT], flag)
    return out
