"""What an agent job of a collective sweep runs, and what its run document must state (issue 43, item 4).

A job group's member jobs share one spec but for the rank: `nnodes` agents, each starting `nproc_per_node`
processes, one collective over the message sizes given. The registry checks the group's one run against
`expected_fields` (runners.api.expected_fields), as it does any agent's run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from protocol import collectives as formulas

PHASE = "collectives"  # a job spec's phase: the runner's name, as "serving" is
DTYPES = ("float", "half", "bfloat16", "double")
MAX_BYTES = 16 << 30


@dataclass(frozen=True)
class CollectiveJobSpec:
    collective: str
    nnodes: int = 1
    nproc_per_node: int = 1
    min_bytes: int = 8
    max_bytes: int = 1 << 20
    step_factor: int = 2
    warmup: int = 5
    iters: int = 20
    dtype: str = "float"
    device: str = "auto"
    submitter: str = "agent"

    def __post_init__(self) -> None:
        formulas.collective(self.collective)  # ValueError naming the known ones
        if self.dtype not in DTYPES or self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"dtype is one of {', '.join(DTYPES)} and device auto, cpu or cuda")
        if not 1 <= self.nnodes <= 1024 or not 1 <= self.nproc_per_node <= 64:
            raise ValueError("nnodes must be 1 to 1024 and nproc_per_node 1 to 64")
        if not 1 <= self.min_bytes <= self.max_bytes <= MAX_BYTES or self.step_factor < 2:
            raise ValueError(f"sizes must satisfy 1 <= min_bytes <= max_bytes <= {MAX_BYTES}, step_factor >= 2")
        if self.iters < 1 or self.warmup < 0:
            raise ValueError("iters must be >= 1 and warmup >= 0")

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc_per_node


def from_fields(values: Mapping[str, Any]) -> CollectiveJobSpec:
    """The spec a job's fields describe (without its phase); ValueError naming an unknown field."""
    known = {f.name for f in fields(CollectiveJobSpec)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"a collectives job has no field {', '.join(unknown)} (it has {', '.join(sorted(known))})")
    # JSON's 1.5 and true pass the range checks below yet no launcher takes them: each field is its own type.
    wrong = sorted(name for name, value in values.items() if type(value) is not FIELD_TYPES[name])
    if wrong:
        raise ValueError(", ".join(f"{name} must be {FIELD_TYPES[name].__name__}" for name in wrong))
    return CollectiveJobSpec(**values)


FIELD_TYPES = {"collective": str, "dtype": str, "device": str, "submitter": str} | {
    name: int for name in ("nnodes", "nproc_per_node", "min_bytes", "max_bytes", "step_factor", "warmup", "iters")
}


def expected_fields(spec: CollectiveJobSpec) -> dict[str, Any]:
    """What the group's run document must state, by JSON pointer."""
    return {
        "/phase": "collective",
        "/workload/name": formulas.collective(spec.collective).name,
        "/metrics/collectives/ranks": spec.world_size,
        "/metrics/collectives/dtype": spec.dtype,
        "/system/topology/nodes": spec.nnodes,
        "/conditions/window/iterations": spec.iters,
    }
