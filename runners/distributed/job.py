"""What an agent job of distributed training runs, and what its run document must state (issue 43, item 4).

A job group's member jobs share one spec but for the rank: `nnodes` agents, each starting `nproc_per_node` ranks of
`benchreg run distributed-training` on the group's rendezvous, one world of nnodes × nproc_per_node ranks. The
registry checks the group's one run against `expected_fields` (runners.api.expected_fields), as it does any agent's.
The spec is validated as the command's own options are (options.Options, runners.spec.RunSpec), so a plan the
registry accepts is one every agent's launcher takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..arguments import THREADS
from ..spec import RunSpec
from .options import Options

PHASE = "distributed-training"  # a job spec's phase: the runner's name, as "collectives" is


@dataclass(frozen=True)
class DistributedJobSpec:
    """One node's part of a distributed training run; `batch_size` is the per-device micro-batch (None: the
    workload's), `threads` each rank's intra-op threads (None: the node's CPUs ÷ its ranks, at run time)."""

    workload: str
    nnodes: int = 1
    nproc_per_node: int = 1
    parallelism: str = "ddp"
    precision: str = "fp32"
    device: str = "cpu"
    batch_size: int | None = None
    accumulation: int = 1
    steps: int = 30
    warmup_steps: int = 5
    repetitions: int = 3
    threads: int | None = None
    sequence_length: int | None = None
    seed: int = 1234
    learning_rate: float = 3e-4
    submitter: str = "agent"

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device is cpu (gloo) or cuda (NCCL), not {self.device!r}")
        if self.threads is not None and (why := THREADS.problem(self.threads)):  # the range --threads is read with
            raise ValueError(f"threads: {why}")
        self.options(threads=1)  # ValueError naming what the command would refuse

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc_per_node

    def options(self, threads: int | None = None) -> Options:
        """The command's options for this spec (`threads` for ranks whose spec leaves them to the node)."""
        spec = RunSpec(
            phase="training",
            workload=self.workload,
            precision=self.precision,
            batch_size=self.batch_size,
            device=self.device,
            threads=self.threads or threads,
            sequence_length=self.sequence_length,
            seed=self.seed,
            learning_rate=self.learning_rate,
            submitter=self.submitter,
        )
        return Options(
            spec=spec,
            parallelism=self.parallelism,
            nproc_per_node=self.nproc_per_node,
            nnodes=self.nnodes,
            accumulation=self.accumulation,
            warmup_steps=self.warmup_steps,
            steps=self.steps,
            repetitions=self.repetitions,
        )


INTEGERS = ("nnodes", "nproc_per_node", "accumulation", "steps", "warmup_steps", "repetitions", "seed")
OPTIONAL_INTEGERS = ("batch_size", "threads", "sequence_length")
STRINGS = ("workload", "parallelism", "precision", "device", "submitter")


def _wrong_type(name: str, value: Any) -> str | None:
    """Why `value` is not of field `name`'s JSON type (JSON's 1.5 and true would pass range checks no launcher
    takes), or None."""
    if name in STRINGS:
        return None if isinstance(value, str) else "a string"
    if name == "learning_rate":
        return None if isinstance(value, int | float) and not isinstance(value, bool) else "a number"
    if value is None and name in OPTIONAL_INTEGERS:
        return None
    return None if type(value) is int else "an integer" + (" or null" if name in OPTIONAL_INTEGERS else "")


def from_fields(values: Mapping[str, Any]) -> DistributedJobSpec:
    """The spec a job's fields describe (without its phase); ValueError naming an unknown or mistyped field."""
    known = {f.name for f in fields(DistributedJobSpec)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"a distributed-training job has no field {', '.join(unknown)} (it has {', '.join(sorted(known))})"
        )
    wrong = [f"{name} must be {why}" for name in sorted(values) if (why := _wrong_type(name, values[name]))]
    if wrong:
        raise ValueError(", ".join(wrong))
    if "workload" not in values:
        raise ValueError("a distributed-training job names its workload")
    return DistributedJobSpec(**values)


def expected_fields(spec: DistributedJobSpec) -> dict[str, Any]:
    """What the group's run document must state, by JSON pointer."""
    options = spec.options(threads=1)
    out: dict[str, Any] = {
        "/phase": "training",
        "/workload/name": spec.workload,
        "/precision/activations": spec.precision,
        "/scenario/distributed/parallelism": spec.parallelism,
        "/scenario/distributed/world_size": spec.world_size,
        "/scenario/distributed/nodes": spec.nnodes,
        "/scenario/distributed/processes_per_node": spec.nproc_per_node,
        "/scenario/distributed/per_device_batch": options.per_device_batch,
        "/scenario/distributed/global_batch": options.global_batch,
        "/scenario/distributed/gradient_accumulation": spec.accumulation,
        "/scenario/distributed/backend/name": "nccl" if spec.device == "cuda" else "gloo",
        "/system/nodes": spec.nnodes,
    }
    if spec.sequence_length is not None:
        out["/workload/shape/sequence_length"] = spec.sequence_length
    return out
