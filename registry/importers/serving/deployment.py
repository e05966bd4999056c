"""What a serving tool's result files do not say about the deployment, from a file (YAML or JSON) and flags.

The schema of the file is in docs/serving.md ("The deployment file"). Flags override the file. What the import needs
and neither gives is refused by name, with the flag and the file key that would give it, before anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from protocol import rules

from .errors import ServingImportError

MAX_FILE_BYTES = 256 * 1024
# file key -> (flag, type) for every value a flag can give; dotted keys are nested in the file.
FLAGS: dict[str, tuple[str, type]] = {
    "system.name": ("--system-name", str),
    "system.accelerators.vendor": ("--accelerator-vendor", str),
    "system.accelerators.model": ("--accelerator-model", str),
    "system.accelerators.count": ("--accelerator-count", int),
    "system.nodes": ("--nodes", int),
    "engine.name": ("--engine", str),
    "engine.version": ("--engine-version", str),
    "engine.image": ("--engine-image", str),
    "precision.weights": ("--weights", str),
    "precision.activations": ("--activations", str),
    "precision.kv_cache": ("--kv-cache", str),
    "precision.quantization.method": ("--quantization", str),
    "parallelism.tensor": ("--tensor-parallel", int),
    "parallelism.expert": ("--expert-parallel", int),
    "parallelism.pipeline": ("--pipeline-parallel", int),
    "parallelism.data": ("--data-parallel", int),
    "workload.name": ("--workload", str),
    "workload.version": ("--workload-version", str),
    "submitter": ("--submitter", str),
}
KNOWN_KEYS = {
    "system": {"name", "nodes", "accelerators", "host"},
    "system.accelerators": {"vendor", "model", "count", "memory_gib"},
    "engine": {"name", "version", "image"},
    "precision": {"weights", "activations", "kv_cache", "quantization"},
    "precision.quantization": {"method", "granularity", "library"},
    "parallelism": {"tensor", "expert", "pipeline", "data", "data_parallel_attention"},
    "workload": {"name", "version", "request_shape"},
    "": {"system", "engine", "precision", "parallelism", "workload", "speculative", "kv_offload", "submitter"},
}
# What every imported level needs from the deployment (the tools' files never say it), in the order asked.
REQUIRED = (
    "system.accelerators.vendor",
    "system.accelerators.model",
    "system.accelerators.count",
    "engine.version",
    "precision.weights",
    "precision.activations",
    "precision.kv_cache",
)
WORDS = {
    "system.accelerators.vendor": "the accelerator vendor",
    "system.accelerators.model": "the accelerator model",
    "system.accelerators.count": "the accelerator count",
    "engine.name": "the serving engine",
    "engine.version": "the serving engine's version",
    "precision.weights": "the weight precision",
    "precision.activations": "the activation precision",
    "precision.kv_cache": "the KV-cache precision",
    "precision.quantization.method": "how the weights were quantized",
    "parallelism.tensor": "the tensor parallelism",
}


@dataclass(frozen=True)
class Deployment:
    """The deployment as described (file, then flags); `get` reads a dotted key, None where nothing says it."""

    values: dict[str, Any] = field(default_factory=dict)
    source: str = "flags"

    def get(self, key: str) -> Any:
        node: Any = self.values
        for part in key.split("."):
            if not isinstance(node, dict):
                return None
            node = node.get(part)
        return node

    def require(self, key: str, fallback: Any = None) -> Any:
        """The value of `key` (or `fallback`, what the result files said); refused by name when neither says it."""
        value = self.get(key)
        if value is None:
            value = fallback
        if value is None:
            raise missing(key)
        return value


def missing(key: str) -> ServingImportError:
    flag = FLAGS.get(key, (None,))[0]
    how = f"pass {flag} or {key} in the deployment file" if flag else f"give {key} in the deployment file"
    return ServingImportError(f"the deployment does not say {WORDS.get(key, key)}: {how}", where="deployment")


def load(path: Path | None, flags: dict[str, Any]) -> Deployment:
    """The deployment from `path` (YAML or JSON, optional) with `flags` (file key -> value, None: not given)."""
    values: dict[str, Any] = _read(path) if path else {}
    _check_keys(values, "", str(path))
    for key, value in flags.items():
        if key not in FLAGS:
            raise ServingImportError(f"unknown deployment key {key!r}", where="flags")
        if value is not None:
            _put(values, key, value)
    deployment = Deployment(values, source=str(path) if path else "flags")
    _check_values(deployment)
    return deployment


def check_complete(deployment: Deployment) -> None:
    """Refuse, by name, the first thing every level needs that the deployment does not say."""
    for key in REQUIRED:
        deployment.require(key)
    weights = deployment.get("precision.weights")
    if weights in rules.QUANTIZED_FORMATS and deployment.get("precision.quantization.method") is None:
        raise missing("precision.quantization.method")


def _read(path: Path) -> dict[str, Any]:
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ServingImportError(f"cannot read the deployment file ({exc.strerror})", where=where) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ServingImportError(f"the deployment file is larger than {MAX_FILE_BYTES} bytes", where=where)
    try:
        data = yaml.safe_load(raw.decode("utf-8"))  # JSON is YAML
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ServingImportError(f"not YAML or JSON: {str(exc).splitlines()[0][:200]}", where=where) from None
    if not isinstance(data, dict):
        raise ServingImportError("the deployment file must hold one mapping (see docs/serving.md)", where=where)
    return data


def _check_keys(node: dict[str, Any], at: str, where: str) -> None:
    known = KNOWN_KEYS.get(at)
    for key, value in node.items():
        here = f"{at}.{key}" if at else str(key)
        if known is not None and key not in known:
            raise ServingImportError(f"unknown key {here!r} (known: {', '.join(sorted(known))})", where=where)
        if isinstance(value, dict) and here in KNOWN_KEYS:
            _check_keys(value, here, where)


def _put(values: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    node = values
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def _check_values(deployment: Deployment) -> None:
    for key, (_flag, kind) in FLAGS.items():
        value = deployment.get(key)
        if value is None:
            continue
        if kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        else:
            ok = isinstance(value, str) and 0 < len(value.strip()) <= 500
        if not ok:
            wanted = "a whole number of at least 1" if kind is int else "a non-empty text of at most 500 characters"
            raise ServingImportError(f"{key} must be {wanted}, not {value!r}", where=deployment.source)
    formats = set(rules.QUANTIZED_FORMATS | rules.UNQUANTIZED_FORMATS | {"unspecified"})
    for key in ("precision.weights", "precision.activations", "precision.kv_cache"):
        value = deployment.get(key)
        if value is not None and value not in formats:
            raise ServingImportError(
                f"{key} {value!r} is not a format of the protocol ({', '.join(sorted(formats))})",
                where=deployment.source,
            )
