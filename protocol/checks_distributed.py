"""Semantic rules of distributed training runs (protocol 1.3; docs/protocol.md, "Protocol 1.3: distributed training").

The world's layout, its batch and its per-rank figures must agree with one another: a global batch is the per-device
batch times the world size times the accumulation steps, a world is its nodes times their processes, the ranks listed
are the world's, and the slowest rank named is the one the figures show. Each rule reads the document defensively,
like those of protocol.checks, which runs them with its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .errors import Error
from .lookup import value_at

LAYOUT = "/scenario/distributed"
FIGURES = "/metrics/distributed"
PER_DEVICE_TOLERANCE = 0.005  # runners round to 4 decimals; 0.5% as the other headlines (checks.HEADLINE_TOLERANCE)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _layout(doc: dict[str, Any]) -> dict[str, Any] | None:
    layout = value_at(doc, "scenario", "distributed")
    return layout if isinstance(layout, dict) else None


def distributed_batch_adds_up(doc: dict[str, Any]) -> Iterator[Error]:
    """global batch = per-device batch × world size × accumulation, and world size = nodes × processes per node."""
    layout = _layout(doc)
    if layout is None:
        return
    numbers = [_int(layout.get(n)) for n in ("global_batch", "per_device_batch", "world_size", "gradient_accumulation")]
    if all(n is not None for n in numbers):
        glob, per_device, world, accumulation = (int(n or 0) for n in numbers)
        if glob != per_device * world * accumulation:
            message = (
                f"global_batch {glob} is not per_device_batch × world_size × gradient_accumulation "
                f"({per_device} × {world} × {accumulation} = {per_device * world * accumulation})"
            )
            yield Error(f"{LAYOUT}/global_batch", "inconsistent-distributed-batch", message)
    size, nodes, per_node = (_int(layout.get(n)) for n in ("world_size", "nodes", "processes_per_node"))
    if size is not None and nodes is not None and per_node is not None and size != nodes * per_node:
        message = f"world_size {size} is not nodes × processes_per_node ({nodes} × {per_node})"
        yield Error(f"{LAYOUT}/world_size", "inconsistent-world-size", message)


def distributed_nodes_are_the_systems(doc: dict[str, Any]) -> Iterator[Error]:
    """The world's nodes are the system's: a run on several nodes says so in system.nodes too (what sizing, cost and
    the scaling axis read), and a one-node system holds no world of several nodes."""
    layout = _layout(doc)
    nodes, system = (_int(layout.get("nodes")) if layout else None), _int(value_at(doc, "system", "nodes"))
    if nodes is not None and system is not None and nodes != system:
        message = f"scenario.distributed.nodes is {nodes} but system.nodes is {system}"
        yield Error(f"{LAYOUT}/nodes", "distributed-nodes-mismatch", message)


def distributed_shape_matches(doc: dict[str, Any]) -> Iterator[Error]:
    """The workload's shape states the same batch: batch_size the global batch, micro_batch_size the per-device one,
    gradient_accumulation_steps the accumulation (what a reader of workload.shape alone would otherwise misread)."""
    layout, shape = _layout(doc), value_at(doc, "workload", "shape")
    if layout is None or not isinstance(shape, dict):
        return
    pairs = (
        ("batch_size", "global_batch"),
        ("micro_batch_size", "per_device_batch"),
        ("gradient_accumulation_steps", "gradient_accumulation"),
    )
    for shape_name, layout_name in pairs:
        stated, expected = _int(shape.get(shape_name)), _int(layout.get(layout_name))
        if stated is not None and expected is not None and stated != expected:
            message = f"workload.shape.{shape_name} is {stated} but scenario.distributed.{layout_name} is {expected}"
            yield Error(f"/workload/shape/{shape_name}", "inconsistent-distributed-shape", message)


def distributed_runs_train(doc: dict[str, Any]) -> Iterator[Error]:
    """A distributed layout belongs to a training run, and distributed figures need the layout they describe."""
    if _layout(doc) is not None and doc.get("phase") != "training":
        message = f"scenario.distributed describes training ranks, but the phase is {doc.get('phase')!r}"
        yield Error(LAYOUT, "distributed-needs-training", message)
    if isinstance(value_at(doc, "metrics", "distributed"), dict) and _layout(doc) is None:
        message = "metrics.distributed needs scenario.distributed: the world its ranks belong to"
        yield Error(FIGURES, "distributed-layout-missing", message)


def ranks_are_the_world(doc: dict[str, Any]) -> Iterator[Error]:
    """Every rank of the world is listed once (0 … world_size − 1), and the slowest rank is one of them."""
    layout, figures = _layout(doc), value_at(doc, "metrics", "distributed")
    if layout is None or not isinstance(figures, dict):
        return
    world, ranks = _int(layout.get("world_size")), figures.get("ranks")
    if world is None or not isinstance(ranks, list):
        return
    numbers = sorted(n for r in ranks if isinstance(r, dict) and (n := _int(r.get("rank"))) is not None)
    if numbers != list(range(world)):
        shown = ", ".join(str(n) for n in numbers[:10]) + (" …" if len(numbers) > 10 else "")
        message = f"a world of {world} rank(s) lists ranks 0 to {world - 1} once each, not [{shown}]"
        yield Error(f"{FIGURES}/ranks", "ranks-not-the-world", message)
    slowest = _int(figures.get("slowest_rank"))
    if slowest is not None and slowest >= world:
        message = f"rank {slowest} is not a rank of a world of {world} (0 to {world - 1})"
        yield Error(f"{FIGURES}/slowest_rank", "ranks-not-the-world", message)


def slowest_rank_is_the_slowest(doc: dict[str, Any]) -> Iterator[Error]:
    """The slowest rank named is the one with the most busy time (step time less time waiting in communication)."""
    figures = value_at(doc, "metrics", "distributed")
    ranks = figures.get("ranks") if isinstance(figures, dict) else None
    slowest = _int(figures.get("slowest_rank")) if isinstance(figures, dict) else None
    if slowest is None or not isinstance(ranks, list):
        return
    busy = {r["rank"]: r["busy_ms"] for r in ranks if isinstance(r, dict) and {"rank", "busy_ms"} <= r.keys()}
    if slowest not in busy or not all(isinstance(v, int | float) for v in busy.values()):
        return
    top = max(busy.values())
    if busy[slowest] < top:
        which = max(busy, key=lambda k: busy[k])
        message = f"rank {slowest} is busy {busy[slowest]:g} ms a step, rank {which} {top:g} ms: the slowest is {which}"
        yield Error(f"{FIGURES}/slowest_rank", "slowest-rank-disagrees", message)


def per_device_rate_follows(doc: dict[str, Any]) -> Iterator[Error]:
    """samples/s per device is the global throughput over the world size (within 0.5%)."""
    world, figures = (
        _int(value_at(doc, "scenario", "distributed", "world_size")),
        value_at(doc, "metrics", "distributed"),
    )
    per_device = value_at(figures, "samples_per_second_per_device")
    total, unit = value_at(doc, "metrics", "throughput", "value"), value_at(doc, "metrics", "throughput", "unit")
    numbers = (per_device, total)
    if world is None or unit != "samples/s" or not all(isinstance(v, int | float) for v in numbers):
        return
    expected = total / world
    if abs(per_device - expected) > PER_DEVICE_TOLERANCE * max(abs(expected), 1e-12):
        message = f"{per_device:g} samples/s per device, but throughput {total:g} over {world} devices is {expected:g}"
        yield Error(f"{FIGURES}/samples_per_second_per_device", "inconsistent-derived-value", message)


def scaling_size_is_this_run(doc: dict[str, Any]) -> Iterator[Error]:
    """A size of a scaling plan is the plan's size at its index, and the world size of this run."""
    scaling, world = (
        value_at(doc, "scenario", "distributed", "scaling"),
        _int(value_at(doc, "scenario", "distributed", "world_size")),
    )
    if not isinstance(scaling, dict):
        return
    index, devices = _int(scaling.get("index")), scaling.get("devices")
    if index is None or not isinstance(devices, list):
        return
    if index >= len(devices):
        message = f"index {index} is not a size of a plan of {len(devices)} size(s) (0 to {len(devices) - 1})"
        yield Error(f"{LAYOUT}/scaling/index", "scaling-index-out-of-range", message)
    elif world is not None and devices[index] != world:
        message = f"size {index} of the plan is {devices[index]} device(s), but this run's world_size is {world}"
        yield Error(f"{LAYOUT}/scaling/devices/{index}", "scaling-size-mismatch", message)


RULES = (
    distributed_batch_adds_up,
    distributed_nodes_are_the_systems,
    distributed_shape_matches,
    distributed_runs_train,
    ranks_are_the_world,
    slowest_rank_is_the_slowest,
    per_device_rate_follows,
    scaling_size_is_this_run,
)
