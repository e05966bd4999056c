"""What one distributed training run is: the per-device run (a RunSpec) and the world it runs in."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from protocol import rules

from ..rendezvous import MAX_NODES
from ..spec import RunSpec

PARALLELISMS = ("ddp", "fsdp")
SCALING_MODES = ("weak", "strong")
MAX_INJECTED_S = 10.0
LAUNCHER = "torch.distributed.launcher elastic_launch (torchrun's), c10d rendezvous"


@dataclass(frozen=True)
class Injected:
    """Known delays for truth tests (recorded in the document's settings, so no such run passes for a real one).

    `communication_s` sleeps inside the gradient communication (the DDP comm hook's first bucket, FSDP's first
    reduce-scatter) once per optimizer step; `compute_s` sleeps between forward and backward of every micro-batch
    on every rank, `slow_rank` sleeps `slow_s` more there.
    """

    communication_s: float = 0.0
    compute_s: float = 0.0
    slow_rank: int | None = None
    slow_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("communication_s", "compute_s", "slow_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= MAX_INJECTED_S):
                raise ValueError(f"an injected {name} must be between 0 and {MAX_INJECTED_S:g} s, not {value!r}")

    def any(self) -> bool:
        return bool(self.communication_s or self.compute_s or (self.slow_rank is not None and self.slow_s))

    def settings(self) -> dict[str, float | int | None]:
        return {
            "runner.injected.communication_ms": round(self.communication_s * 1e3, 6),
            "runner.injected.compute_ms": round(self.compute_s * 1e3, 6),
            "runner.injected.slow_rank": self.slow_rank,
            "runner.injected.slow_rank_extra_ms": round(self.slow_s * 1e3, 6),
        }


@dataclass(frozen=True)
class Scaling:
    """This run's place in a scaling plan (scenario.distributed.scaling)."""

    id: str
    mode: str
    index: int
    devices: tuple[int, ...]
    repeat: int = 0


@dataclass(frozen=True)
class Options:
    """One distributed run: `spec` is what each rank trains (its batch_size is the per-device micro-batch)."""

    spec: RunSpec
    parallelism: str = "ddp"
    nproc_per_node: int = 2
    nnodes: int = 1  # nodes of one world, each starting nproc_per_node ranks (runners/rendezvous.py)
    accumulation: int = 1
    warmup_steps: int = 5
    steps: int = 30
    repetitions: int = 3
    injected: Injected = field(default_factory=Injected)
    scaling: Scaling | None = None

    def __post_init__(self) -> None:
        if self.parallelism not in PARALLELISMS:
            raise ValueError(f"--parallelism takes {', '.join(PARALLELISMS)}, not {self.parallelism!r}")
        if self.spec.phase != "training":
            raise ValueError("a distributed run trains: its spec's phase must be training")
        if self.spec.precision not in ("fp32", "bf16"):
            raise ValueError(f"distributed training runs fp32 or bf16, not {self.spec.precision}")
        if not 1 <= self.nproc_per_node <= 1024:
            raise ValueError(f"--nproc-per-node must be between 1 and 1024, not {self.nproc_per_node}")
        if not 1 <= self.nnodes <= MAX_NODES:
            raise ValueError(f"--nnodes must be between 1 and {MAX_NODES}, not {self.nnodes}")
        if not 1 <= self.accumulation <= 1024:
            raise ValueError(f"--accumulation must be between 1 and 1024, not {self.accumulation}")
        if not (0 <= self.warmup_steps <= 100_000 and 1 <= self.repetitions <= 100):
            raise ValueError("--warmup-steps must be >= 0 and --repetitions between 1 and 100")
        fewest = max(rules.MIN_WINDOW_ITERATIONS, 3 * self.repetitions)
        if not fewest <= self.steps <= 100_000:
            raise ValueError(f"--steps must be at least {fewest} (3 a repetition, 10 a window) and at most 100000")
        slow = self.injected.slow_rank
        if slow is not None and not 0 <= slow < self.world_size:
            raise ValueError(f"the slow rank {slow} is not a rank of {self.world_size}")

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc_per_node

    @property
    def per_device_batch(self) -> int:
        return self.spec.batch_size or self.spec.definition.default_shape.batch_size

    @property
    def global_batch(self) -> int:
        return self.per_device_batch * self.world_size * self.accumulation
