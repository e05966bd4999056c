"""Inside each process the launcher starts: join the process group, train, time, and hand rank 0 every rank's figures.

Steps are timed on each rank's own clock, with no barrier between steps (a barrier would add its own wait to the
step and hide the skew between ranks); the ranks stay in step because every optimizer step ends in a collective.
Warm-up steps train but are not timed. A step is `accumulation` micro-batches (forward, backward) with the gradient
synchronised on the last one only (DDP `no_sync`, FSDP `set_requires_gradient_sync`), then the optimizer step.
"""

from __future__ import annotations

import math
import os
import platform
import socket
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, cast

import torch
import torch.distributed as dist

from ..backends.torch_backend import TorchBackend, TorchTrainer
from .options import Options
from .timing import CommTimer, TimedAllGather, TimedReduceScatter, ddp_hook

# The protocol refuses a window under rules.MIN_WINDOW_SECONDS (1 s); steps are added to reach this with a margin.
WINDOW_TARGET_S = 1.5
MAX_STEPS = 100_000
ROUNDS = 4


@dataclass
class RankFigures:
    """One rank's measured steps and what it ran on."""

    rank: int
    node: str
    device: str
    step_ms: list[float] = field(default_factory=list)
    communication_ms: list[float] = field(default_factory=list)
    window_s: float = 0.0
    warmup_s: float = 0.0
    peak_memory_bytes: int | None = None
    memory_kind: str | None = None
    memory_note: str | None = None
    losses: list[float] = field(default_factory=list)


def worker(options: Options, node_rank: int = 0) -> dict[str, Any]:
    """Run one rank of node `node_rank`; local rank 0 of node 0 returns every rank's figures and the environment, the
    others an empty dict. Every rank gathers every rank's figures: node 0 (which writes the run) need not hold global
    rank 0, as c10d orders the nodes by host name and launcher pid, not by node rank."""
    use_cuda = options.spec.device == "cuda"
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if use_cuda:  # device_id binds the communicator to this rank's GPU now, not at the first collective
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    else:
        dist.init_process_group("gloo")
    try:
        mine = _train(options, local_rank, node_rank)
        everyone: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, mine)
        if node_rank != 0 or local_rank != 0:
            return {}
        return {"ranks": everyone, "backend": _backend(use_cuda), "fsdp": options.parallelism == "fsdp"}
    finally:
        dist.destroy_process_group()


def _train(options: Options, local_rank: int, node_rank: int) -> RankFigures:
    spec, rank = options.spec.resolved(), dist.get_rank()
    assert spec.threads is not None
    backend = TorchBackend(spec.device)
    backend.configure(spec.threads, spec.precision)
    device = torch.device("cuda", local_rank) if spec.device == "cuda" else torch.device("cpu")
    timer = CommTimer(device, options.injected.communication_s)
    trainer = TorchTrainer(backend, spec.definition, spec.shape(), spec.precision, spec.seed, spec.learning_rate)
    model = _wrap(options, trainer, timer, device)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    # two nodes of one world may share a host (two agents on one machine): the node rank tells them apart
    node = socket.gethostname() if options.nnodes == 1 else f"{socket.gethostname()} (node {node_rank})"
    figures = RankFigures(rank, node, f"{device} {where}".strip())
    sleep_s = options.injected.compute_s + (options.injected.slow_s if options.injected.slow_rank == rank else 0.0)
    step = _Step(options, trainer, model, timer, device, sleep_s)
    warm = time.perf_counter()
    warm_steps = [step(i)[0] for i in range(options.warmup_steps)]
    figures.warmup_s = time.perf_counter() - warm
    count = _agreed(_steps_wanted(options.steps, warm_steps, 0.0))
    backend.reset_peak_memory()
    started, done = time.perf_counter(), options.warmup_steps
    for _ in range(ROUNDS):  # a window the warm-up misjudged gets more steps, agreed again (one all-reduce a round)
        for i in range(done, done + count):
            seconds, communication = step(i)
            figures.step_ms.append(seconds * 1e3)
            figures.communication_ms.append(communication * 1e3)
        done += count
        figures.window_s = time.perf_counter() - started
        count = _agreed(_steps_wanted(0, [figures.window_s / len(figures.step_ms)], figures.window_s))
        if count == 0:
            break
    figures.losses = step.losses
    figures.peak_memory_bytes, figures.memory_kind, figures.memory_note = _memory(device, backend)
    return figures


def _steps_wanted(fewest: int, step_seconds: list[float], elapsed: float) -> int:
    """Steps still to run so the window reaches WINDOW_TARGET_S (the protocol refuses one under 1 s), at least
    `fewest`: from the fastest step seen (the first warm-up steps are the slowest)."""
    if not step_seconds:
        return fewest
    left = max(0.0, WINDOW_TARGET_S - elapsed)
    return max(fewest, math.ceil(left / max(min(step_seconds), 1e-6)))


def _agreed(steps: int) -> int:
    """The largest count any rank wants: every rank must run the same steps, or a collective would hang."""
    agreed = torch.tensor([min(steps, MAX_STEPS)], dtype=torch.int64)
    if dist.get_backend() == "nccl":
        agreed = agreed.cuda()
    dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
    return int(agreed.item())


def _wrap(options: Options, trainer: TorchTrainer, timer: CommTimer, device: torch.device) -> Any:
    """The trainer's model under DDP or FSDP2, its collectives bracketed by `timer` (the optimizer follows)."""
    model = trainer.model
    if options.parallelism == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [device.index] if device.type == "cuda" else None
        ddp = DistributedDataParallel(model, device_ids=ids)
        ddp.register_comm_hook(timer, ddp_hook)
        wrapped: torch.nn.Module = ddp
    else:
        from torch.distributed.fsdp import FSDPModule, fully_shard

        for block in _shard_units(model):
            fully_shard(block)
        wrapped = cast(torch.nn.Module, fully_shard(model))  # an FSDPModule that is also the model's own class
        for module in wrapped.modules():
            if isinstance(module, FSDPModule):
                module.set_custom_all_gather(TimedAllGather(timer))  # type: ignore[arg-type]
                module.set_custom_reduce_scatter(TimedReduceScatter(timer))  # type: ignore[arg-type]
        trainer.optimizer = torch.optim.AdamW(wrapped.parameters(), lr=options.spec.learning_rate)
    trainer.model = wrapped
    return wrapped


def _shard_units(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The units FSDP shards on their own: each block of a transformer's block list, else each layer with weights."""
    blocks = getattr(model, "blocks", None)
    if isinstance(blocks, torch.nn.ModuleList):
        return list(blocks)
    return [m for m in model.children() if any(True for _ in m.parameters())]


class _Step:
    """One optimizer step of `accumulation` micro-batches, timed; returns (step seconds, communication seconds)."""

    def __init__(
        self, options: Options, trainer: TorchTrainer, model: Any, timer: CommTimer, device: Any, sleep_s: float
    ) -> None:
        self.options, self.trainer, self.model, self.timer, self.device = options, trainer, model, timer, device
        self.sleep_s = sleep_s
        self.losses: list[float] = []
        self._pending: list[torch.Tensor] = []
        self.world, self.rank = dist.get_world_size(), dist.get_rank()

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _micro(self, index: int, last: bool) -> None:
        if self.options.parallelism == "ddp":
            context = nullcontext() if last else self.model.no_sync()
        else:
            self.model.set_requires_gradient_sync(last)
            context = nullcontext()
        with context:
            # each rank reads its own batches: micro-batch `index` of the run, in rank-strided order
            loss = self.trainer.forward(self.trainer.data(index * self.world + self.rank))
            if self.sleep_s:
                time.sleep(self.sleep_s)  # truth tests: known compute time, longer on the slow rank
            self.trainer.backward(loss / self.options.accumulation)
        self._pending.append(loss.detach())  # read after the step's clock stops: .item() synchronises

    def __call__(self, step: int) -> tuple[float, float]:
        accumulation = self.options.accumulation
        self._sync()
        self.timer.step_begin()
        start = time.perf_counter()
        for k in range(accumulation):
            self._micro(step * accumulation + k, last=k == accumulation - 1)
        self.trainer.optimizer_step()
        self._sync()
        seconds = time.perf_counter() - start
        communication = self.timer.step_end()
        self.losses += [self.trainer.loss_value(loss) for loss in self._pending]
        self._pending = []
        return seconds, communication


def _memory(device: torch.device, backend: TorchBackend) -> tuple[int | None, str | None, str | None]:
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device)), "device", None
    value, kind, note = backend.peak_memory()
    return value, kind, note


def _backend(use_cuda: bool) -> dict[str, Any]:
    """The process group's backend and its version: NCCL's own; gloo has none of its own (vendored in torch)."""
    if use_cuda:
        version = torch.cuda.nccl.version()  # type: ignore[no-untyped-call]
        text = ".".join(str(p) for p in version) if isinstance(version, tuple) else str(version)
        return {"name": "nccl", "version": text, "torch": torch.__version__, "cuda": torch.version.cuda}
    return {"name": "gloo", "version": f"bundled with torch {torch.__version__}", "torch": torch.__version__}
