"""Time in gradient communication, measured per rank and per step, without a barrier.

Each collective the training step issues (DDP's bucket all-reduce, through a comm hook; FSDP2's all-gathers and
reduce-scatters, through its custom-comm hooks) is bracketed from the moment it is issued to the moment it has
completed on this rank. On CPUs (gloo) the brackets are host clock readings: before the call, and in a callback
chained on the work's future (which the training step itself waits on, so the reading is in before the step ends),
or right after a blocking call. On CUDA (NCCL) they are CUDA events recorded on the stream the collective runs on,
read after the step's synchronisation. The step's communication time is the length of the union of its brackets:
concurrent collectives are counted once, and time a rank spends waiting for a late peer inside a collective counts
as communication (it is time the step spent in it). docs/distributed-training.md states the method and its error.
"""

# No `from __future__ import annotations` here: DDP checks the comm hook's annotations at run time
# (dist.GradBucket and torch.futures.Future objects, not their names as strings).
import threading
import time
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import GradBucket  # type: ignore[attr-defined]  # exported at run time, not in the stubs

Interval = tuple[float, float]
SETTLE_S = 1.0  # the longest a step's end waits for a completion callback that has not run yet


def union_length(intervals: list[Interval]) -> float:
    """Total length covered by `intervals` (overlaps counted once)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


class CommTimer:
    """Brackets collectives on one rank; `step_end` returns the step's communication time in seconds."""

    def __init__(self, device: torch.device, communication_delay_s: float = 0.0) -> None:
        self.device, self.delay_s = device, communication_delay_s
        self.cuda = device.type == "cuda"
        self._lock = threading.Lock()
        self._open: dict[int, Any] = {}
        self._closed: list[tuple[Any, Any]] = []
        self._next = 0
        self._delay_due = False
        self._origin: Any = None

    def step_begin(self) -> None:
        self._open, self._closed, self._delay_due = {}, [], bool(self.delay_s)
        self._origin = self._event() if self.cuda else None

    def _event(self) -> Any:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]  # torch leaves it untyped
            event.record()
            return event
        return time.perf_counter()

    def begin(self) -> int:
        """Open a bracket now (before the call is issued); the injected delay, if due, lies inside it."""
        with self._lock:
            token, self._next = self._next, self._next + 1
            self._open[token] = self._event()
            delay, self._delay_due = self._delay_due, False
        if delay:
            time.sleep(self.delay_s)  # truth tests: a known time inside the gradient communication
        return token

    def end(self, token: int) -> None:
        """Close a bracket now (after a blocking call, or in a completion callback)."""
        stop = self._event()
        with self._lock:
            self._closed.append((self._open.pop(token), stop))

    def chain(self, token: int, work: Any) -> torch.futures.Future[Any]:
        """The work's future, with the bracket closed in a callback before the value is passed on."""

        def close(fut: torch.futures.Future[Any]) -> Any:
            self.end(token)
            return fut.value()

        return work.get_future().then(close)  # type: ignore[no-any-return]

    def step_end(self) -> float:
        """Seconds of this step spent with a collective in flight (call after the step's device synchronisation)."""
        deadline = time.perf_counter() + SETTLE_S
        while self._open and time.perf_counter() < deadline:
            time.sleep(0.0005)
        with self._lock:
            closed = list(self._closed)
        if self.cuda:
            origin = self._origin
            intervals = [(origin.elapsed_time(a) / 1e3, origin.elapsed_time(b) / 1e3) for a, b in closed]
        else:
            intervals = [(float(a), float(b)) for a, b in closed]
        return union_length(intervals)


def ddp_hook(timer: CommTimer, bucket: GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP's default all-reduce (sum, then divide by the world size), bracketed by `timer`."""
    tensor = bucket.buffer()
    token = timer.begin()
    tensor.div_(dist.get_world_size())
    work = dist.all_reduce(tensor, async_op=True)
    return timer.chain(token, work).then(lambda fut: fut.value()[0])


class TimedAllGather:
    """FSDP2's all-gather (what its DefaultAllGather calls), bracketed; passed to `set_custom_all_gather`."""

    def __init__(self, timer: CommTimer) -> None:
        self.timer = timer

    def allocate(self, size: Any, *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor: Any, input_tensor: Any, group: Any, async_op: bool = False) -> Any:
        token = self.timer.begin()
        work = dist.all_gather_into_tensor(output_tensor, input_tensor, group=group, async_op=async_op)
        return _close(self.timer, token, work, async_op)


class TimedReduceScatter:
    """FSDP2's reduce-scatter, bracketed; passed to `set_custom_reduce_scatter`."""

    def __init__(self, timer: CommTimer) -> None:
        self.timer = timer

    def allocate(self, size: Any, *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor: Any, input_tensor: Any, group: Any, op: Any, async_op: bool = False) -> Any:
        token = self.timer.begin()
        work = dist.reduce_scatter_tensor(output_tensor, input_tensor, op=op, group=group, async_op=async_op)
        return _close(self.timer, token, work, async_op)


def _close(timer: CommTimer, token: int, work: Any, async_op: bool) -> Any:
    if async_op and work is not None:
        timer.chain(token, work)  # FSDP waits on the work itself; step_end waits for this callback (SETTLE_S)
    else:
        timer.end(token)  # blocking on gloo; on NCCL the event is recorded on the collective's stream
    return work
