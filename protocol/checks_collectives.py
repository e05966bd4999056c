"""Semantic rules of collective sweeps and topology (protocol 1.3; docs/protocol.md, section 4).

A collective's algorithm and bus bandwidth are not free numbers: they follow from its size and time by nccl-tests'
definitions (protocol/collectives.py), and the bus bandwidth is the algorithm bandwidth times the collective's factor
for its number of ranks. A document whose figures do not follow is refused at the figure, within the rounding of the
text it was read from (`printed`) or, for figures kept exact, within the double arithmetic. Each rule reads the
document defensively, like those of protocol.checks, which runs them with its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from . import collectives
from .errors import Error
from .lookup import value_at

BASE = "/metrics/collectives"


def _mean(times: list[float]) -> float:
    return sum(times) / len(times)


STATISTICS: dict[str, Callable[[list[float]], float]] = {
    "max-over-ranks": max,
    "min-over-ranks": min,
    "mean-over-ranks": _mean,
}


def _sweep(doc: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    block = value_at(doc, "metrics", "collectives")
    if not isinstance(block, dict) or not isinstance(block.get("sizes"), list):
        return None
    return block, [s for s in block["sizes"] if isinstance(s, dict)]


def collective_names_its_workload(doc: dict[str, Any]) -> Iterator[Error]:
    """A collective run's workload is the collective it measured (nccl-tests' name)."""
    name, measured = value_at(doc, "workload", "name"), value_at(doc, "metrics", "collectives", "collective")
    if doc.get("phase") == "collective" and isinstance(measured, str) and name != measured:
        yield Error("/workload/name", "collective-workload-mismatch", f"a {measured} sweep's workload is {measured}")


def collective_bandwidth_follows(doc: dict[str, Any]) -> Iterator[Error]:
    """Every size's bytes follow from its count, and its algbw and busbw from its size and time."""
    found = _sweep(doc)
    if found is None:
        return
    block = found[0]
    name, ranks = block.get("collective"), block.get("ranks")
    typesize = collectives.TYPE_SIZES.get(str(block.get("dtype")))
    if name not in collectives.COLLECTIVES or not isinstance(ranks, int) or ranks < 1 or typesize is None:
        return
    for index, entry in enumerate(block["sizes"]):
        if isinstance(entry, dict):
            yield from _entry_errors(f"{BASE}/sizes/{index}", entry, name, ranks, typesize)


def _entry_errors(at: str, entry: dict[str, Any], name: str, ranks: int, typesize: int) -> Iterator[Error]:
    size, count, time = entry.get("size_bytes"), entry.get("count"), entry.get("time_us")
    expected = collectives.collective(name).printed_bytes(count, typesize, ranks) if isinstance(count, int) else None
    if expected is not None and size != expected:
        message = f"{name} of {count} elements of {typesize} B over {ranks} ranks moves {expected} B, not {size}"
        yield Error(f"{at}/size_bytes", "collective-size-mismatch", message)
        return
    stated = entry.get("printed")
    printed: dict[str, Any] = stated if isinstance(stated, dict) else {}
    for key, text in printed.items():
        if isinstance(text, str) and float(text) != entry.get(key):
            yield Error(f"{at}/printed/{key}", "collective-printed-mismatch", f"{text!r} is not {entry.get(key)!r}")
            return
    if isinstance(size, int) and isinstance(time, int | float) and time > 0:
        yield from _bandwidth_errors(at, entry, name, ranks, printed)


def _bandwidth_errors(
    at: str, entry: dict[str, Any], name: str, ranks: int, printed: dict[str, Any]
) -> Iterator[Error]:
    half_time = collectives.half_unit(printed["time_us"]) if "time_us" in printed else 0.0
    for key, column in (("algbw_gbs", "algbw"), ("busbw_gbs", "busbw")):
        value = entry.get(key)
        half_bw = collectives.half_unit(printed[key]) if key in printed else 0.0
        low, high = collectives.bandwidth_range(
            name,
            size_bytes=entry["size_bytes"],
            time_us=entry["time_us"],
            nranks=ranks,
            half_time_us=half_time,
            half_bw=half_bw,
        )
        lo, hi = getattr(low, column), getattr(high, column)
        if isinstance(value, int | float) and not lo <= value <= hi:
            factor = collectives.bus_factor(name, ranks)
            message = (
                f"{column} {value:g} GB/s does not follow from {entry['size_bytes']} B in {entry['time_us']:g} us "
                f"over {ranks} ranks: {name} gives {lo:.6g}..{hi:.6g} (busbw = algbw x {factor:g}, "
                f"{collectives.collective(name).source})"
            )
            yield Error(f"{at}/{key}", "collective-bandwidth-mismatch", message)


def collective_summaries_follow(doc: dict[str, Any]) -> Iterator[Error]:
    """Each size's time is the stated statistic of its ranks' times, and the sweep's summaries follow from it."""
    found = _sweep(doc)
    if found is None:
        return
    block, sizes = found
    yield from _rank_times_errors(block)
    yield from _average_errors(block, sizes)
    latency = block.get("small_message_latency_us")
    times = [(s["size_bytes"], s["time_us"]) for s in sizes if isinstance(s.get("size_bytes"), int)]
    if isinstance(latency, int | float) and times:
        smallest = min(size for size, _ in times)
        expected = min(t for size, t in times if size == smallest)
        if abs(latency - expected) > 1e-9 * max(expected, 1.0):
            message = f"the small-message latency is the time at the smallest size ({smallest} B): {expected:g} us"
            yield Error(f"{BASE}/small_message_latency_us", "collective-summary-mismatch", message)


def _rank_times_errors(block: dict[str, Any]) -> Iterator[Error]:
    ranks, statistic = block.get("ranks"), STATISTICS.get(block.get("time_statistic", ""))
    for index, entry in enumerate(block["sizes"]):
        times = entry.get("rank_times_us") if isinstance(entry, dict) else None
        if not isinstance(times, list) or not times:
            continue
        at = f"{BASE}/sizes/{index}"
        if len(times) != ranks:
            message = f"{len(times)} ranks' times for a sweep over {ranks} ranks"
            yield Error(f"{at}/rank_times_us", "collective-ranks-mismatch", message)
        elif statistic is not None and abs(statistic(times) - entry["time_us"]) > 1e-9 * max(entry["time_us"], 1.0):
            message = f"time_us must be the {block['time_statistic']} of rank_times_us: {statistic(times):g}"
            yield Error(f"{at}/time_us", "collective-summary-mismatch", message)


def _average_errors(block: dict[str, Any], sizes: list[dict[str, Any]]) -> Iterator[Error]:
    # nccl-tests' "Avg bus bandwidth": the mean busbw over every row and side, printed with %g (6 digits); rows
    # kept as printed are off by at most their largest half unit
    average, busbws = block.get("avg_busbw_gbs"), [s.get("busbw_gbs") for s in sizes]
    numbers = [b for b in busbws if isinstance(b, int | float)]
    if not isinstance(average, int | float) or not numbers:
        return
    mean = sum(numbers) / len(numbers)
    halves = [collectives.half_unit(s["printed"]["busbw_gbs"]) for s in sizes if isinstance(s.get("printed"), dict)]
    tolerance = max(halves, default=0.0) + 5e-6 * abs(mean) + 1e-9
    if abs(mean - average) > tolerance:
        message = f"the average bus bandwidth is the mean of the sizes' busbw: {mean:.6g} GB/s"
        yield Error(f"{BASE}/avg_busbw_gbs", "collective-summary-mismatch", message)


def topology_holds_together(doc: dict[str, Any]) -> Iterator[Error]:
    """One entry per node, and a device matrix that is square over its labels."""
    topology = value_at(doc, "system", "topology")
    if not isinstance(topology, dict) or not isinstance(topology.get("hosts"), list):
        return
    hosts = topology["hosts"]
    if hosts and topology.get("nodes") != len(hosts):
        message = f"{len(hosts)} hosts described for {topology.get('nodes')} nodes"
        yield Error("/system/topology/nodes", "topology-nodes-mismatch", message)
    for index, host in enumerate(hosts):
        matrix = host.get("device_matrix") if isinstance(host, dict) else None
        if not isinstance(matrix, dict) or not isinstance(matrix.get("labels"), list):
            continue
        size, cells = len(matrix["labels"]), matrix.get("cells")
        if not isinstance(cells, list) or len(cells) != size or any(len(row) != size for row in cells):
            message = f"the matrix must have {size} rows of {size} cells, one per label"
            yield Error(f"/system/topology/hosts/{index}/device_matrix/cells", "topology-matrix-not-square", message)
