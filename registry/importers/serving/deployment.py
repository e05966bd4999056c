"""What a serving tool's result files do not say about the deployment, from a deployment file and flags.

The file is the runner's: one format and one parser (runners/serving/deployment.py, docs/serving.md "The deployment
file"), so a file that describes a measured run describes its imported runs too. Flags override the file. What the
import needs and neither gives is refused by name, with the flag and the file key that would give it, before
anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocol import rules
from runners.serving import deployment as shared

from .errors import ServingImportError

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
    """The deployment from `path` (YAML, TOML or JSON, optional) with `flags` (file key -> value, None: not given),
    checked by the one parser of deployment files; ServingImportError naming the file (or "flags") and the key."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            values = shared.read_file(path)
        except ValueError as exc:
            raise ServingImportError(str(exc).removeprefix(f"{path}: "), where=str(path)) from None
    for key, value in flags.items():
        if key not in FLAGS:
            raise ServingImportError(f"unknown deployment key {key!r}", where="flags")
        if value is not None:
            _put(values, key, value)
    source = str(path) if path else "flags"
    try:
        shared.check_mapping(values)
    except ValueError as exc:  # a flag's value (the file's were checked above)
        raise ServingImportError(str(exc), where=source) from None
    return Deployment(values, source=source)


def check_complete(deployment: Deployment) -> None:
    """Refuse, by name, the first thing every level needs that the deployment does not say."""
    for key in REQUIRED:
        deployment.require(key)
    weights = deployment.get("precision.weights")
    if weights in rules.QUANTIZED_FORMATS and deployment.get("precision.quantization.method") is None:
        raise missing("precision.quantization.method")


def _put(values: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    node = values
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
