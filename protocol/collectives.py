"""Algorithm and bus bandwidth of a collective, by nccl-tests' own definitions (docs/interconnect.md).

Plain Python, no Django, so that the collective runner (runners/collectives.py), the importer of nccl-tests' output
(registry/importers/nccl_tests.py) and any later training or scaling work compute the same figure from the same
numbers. The definitions are those of NVIDIA/nccl-tests, read in its source (commit a0b82b2, July 2026; unchanged
in substance since the 2017 initial commit) and explained in its doc/PERFORMANCE.md, "Bus bandwidth":

    algbw = count x typesize [x nranks] / 1e9 / seconds          (GB/s, 10^9 bytes)
    busbw = algbw x factor(nranks)

`count` is nccl-tests' per-call element count (its `paramcount`: per rank for the gathers and scatters), and the
size nccl-tests prints in its table is max(send bytes, receive bytes), which for every collective below equals
count x typesize [x nranks]: so algbw is always the printed size over the time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

GB = 1.0e9  # nccl-tests divides by 1.0E9: its GB/s are 10^9 bytes per second, not GiB/s


def _all_reduce_factor(nranks: int) -> float:
    # src/all_reduce.cu, AllReduceGetBw: factor = 2*(nranks-1)/nranks. PERFORMANCE.md: n-1 additions and n
    # assignments per element, 2(n-1) transfers over n links.
    return 2.0 * (nranks - 1) / nranks


def _gather_factor(nranks: int) -> float:
    # src/all_gather.cu AllGatherGetBw, src/reduce_scatter.cu ReduceScatterGetBw, src/alltoall.cu AlltoAllGetBw,
    # src/gather.cu GatherGetBw, src/scatter.cu ScatterGetBw: factor = (nranks-1)/nranks.
    return (nranks - 1) / nranks


def _one(nranks: int) -> float:
    # src/broadcast.cu BroadcastGetBw, src/reduce.cu ReduceGetBw, src/sendrecv.cu SendRecvGetBw,
    # src/hypercube.cu HyperCubeGetBw: factor = 1 (busbw = algbw).
    return 1.0


@dataclass(frozen=True)
class Collective:
    """One collective as nccl-tests defines its bandwidth: what multiplies count x typesize, and the bus factor."""

    name: str  # nccl-tests' name, as in "<name>_perf" and its "Collective test starting" line
    bytes_scale: Callable[[int], int]  # count x typesize x this = the bytes algbw is computed from
    bus_factor: Callable[[int], float]
    source: str  # file and function in NVIDIA/nccl-tests
    # count x typesize x this = the size nccl-tests prints, max(send bytes, receive bytes): the bytes_scale but for
    # hypercube, which prints nranks blocks and counts nranks-1 (HyperCubeGetCollByteCount)
    printed_scale: Callable[[int], int] | None = None

    def printed_bytes(self, count: int, typesize: int, nranks: int) -> int:
        return count * typesize * (self.printed_scale or self.bytes_scale)(nranks)


def _single(nranks: int) -> int:
    return 1


def _per_rank(nranks: int) -> int:
    return nranks


def _all_but_one(nranks: int) -> int:
    return nranks - 1


COLLECTIVES: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective("all_reduce", _single, _all_reduce_factor, "src/all_reduce.cu AllReduceGetBw"),
        Collective("all_gather", _per_rank, _gather_factor, "src/all_gather.cu AllGatherGetBw"),
        Collective("reduce_scatter", _per_rank, _gather_factor, "src/reduce_scatter.cu ReduceScatterGetBw"),
        Collective("alltoall", _per_rank, _gather_factor, "src/alltoall.cu AlltoAllGetBw"),
        Collective("gather", _per_rank, _gather_factor, "src/gather.cu GatherGetBw"),
        Collective("scatter", _per_rank, _gather_factor, "src/scatter.cu ScatterGetBw"),
        Collective("broadcast", _single, _one, "src/broadcast.cu BroadcastGetBw"),
        Collective("reduce", _single, _one, "src/reduce.cu ReduceGetBw"),
        Collective("sendrecv", _single, _one, "src/sendrecv.cu SendRecvGetBw"),
        # HyperCubeGetBw counts nranks-1 blocks of count elements: each rank receives from every other.
        Collective("hypercube", _all_but_one, _one, "src/hypercube.cu HyperCubeGetBw", _per_rank),
    )
}
# PyTorch's name for the all-to-all is all_to_all; nccl-tests' binary is alltoall_perf.
ALIASES = {"all_to_all": "alltoall", "allreduce": "all_reduce", "allgather": "all_gather"}


@dataclass(frozen=True)
class Bandwidth:
    algbw: float  # GB/s (10^9 bytes per second)
    busbw: float  # GB/s


def collective(name: str) -> Collective:
    """The collective called `name` (nccl-tests' or PyTorch's spelling); ValueError naming the known ones."""
    key = ALIASES.get(name, name)
    if key not in COLLECTIVES:
        raise ValueError(f"unknown collective {name!r}: known are {', '.join(sorted(COLLECTIVES))}")
    return COLLECTIVES[key]


def algorithm_bytes(name: str, *, count: int, typesize: int, nranks: int) -> int:
    """The bytes nccl-tests divides by the time: count x typesize, times nranks for the gathers and scatters."""
    _check_ranks(nranks)
    if count < 0 or typesize < 1:
        raise ValueError(f"count must be >= 0 and typesize >= 1, not {count} and {typesize}")
    return count * typesize * collective(name).bytes_scale(nranks)


def bus_factor(name: str, nranks: int) -> float:
    """busbw / algbw for `nranks` ranks (0 for all-reduce and the gathers on one rank: no bus is used)."""
    _check_ranks(nranks)
    return collective(name).bus_factor(nranks)


def bandwidth(name: str, *, count: int, typesize: int, seconds: float, nranks: int) -> Bandwidth:
    """nccl-tests' `<Coll>GetBw(count, typesize, sec, &algBw, &busBw, nranks)`, in GB/s."""
    if not seconds > 0:
        raise ValueError(f"the time must be positive, not {seconds!r} s")
    algbw = algorithm_bytes(name, count=count, typesize=typesize, nranks=nranks) / GB / seconds
    return Bandwidth(algbw=algbw, busbw=algbw * bus_factor(name, nranks))


def bandwidth_from_size(name: str, *, size_bytes: int, seconds: float, nranks: int) -> Bandwidth:
    """The same from the size nccl-tests prints in its table, max(send bytes, receive bytes) (common.cu, TimeTest).

    That size is the algorithm bytes for every collective but hypercube, whose printed size counts nranks blocks
    and whose algbw counts nranks-1 (HyperCubeGetCollByteCount, HyperCubeGetBw)."""
    if size_bytes < 0:
        raise ValueError(f"the size must be >= 0 bytes, not {size_bytes}")
    if not seconds > 0:
        raise ValueError(f"the time must be positive, not {seconds!r} s")
    _check_ranks(nranks)
    spec = collective(name)
    algorithm = size_bytes * (nranks - 1) / nranks if spec.name == "hypercube" else float(size_bytes)
    algbw = algorithm / GB / seconds
    return Bandwidth(algbw=algbw, busbw=algbw * spec.bus_factor(nranks))


def _check_ranks(nranks: int) -> None:
    if nranks < 1:
        raise ValueError(f"a collective needs at least one rank, not {nranks}")


# nccl-tests' type names (test_typenames in src/common.cu, old and new) and their sizes in bytes.
TYPE_SIZES = {
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "int32": 4,
    "uint32": 4,
    "int": 4,
    "int64": 8,
    "uint64": 8,
    "half": 2,
    "float": 4,
    "double": 8,
    "bfloat16": 2,
    "f8e4m3": 1,
    "f8e5m2": 1,
}


def half_unit(text: str) -> float:
    """Half a unit in the last place printed: "12.34" 0.005, "1234" 0.5, "1.2e+04" 500 (printf rounds to nearest).

    nccl-tests prints times %7.2f below 100 us, %7.1f below 10,000 us and %7.0f above (common.cu to 2025-09; from
    2025-10 util.cu getFloatStr: %.2f, %.1f, %.0f, then %.1e, whichever first fits 7 characters), and bandwidths
    %6.2f (then the same rule in 6 characters). The text says which was used."""
    mantissa, _, exponent = text.strip().lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def bandwidth_range(
    name: str, *, size_bytes: int, time_us: float, nranks: int, half_time_us: float = 0.0, half_bw: float = 0.0
) -> tuple[Bandwidth, Bandwidth]:
    """The lowest and highest (algbw, busbw) a time of `time_us` +- `half_time_us` gives, widened by a bandwidth's
    own print rounding `half_bw` and the double arithmetic: what a figure printed from that time may read.

    With both halves 0 (figures kept exact, as the runner writes them) the range is the formula's value +- a
    relative 1e-9."""
    slowest = (time_us + half_time_us) * 1e-6
    fastest = (time_us - half_time_us) * 1e-6
    low = bandwidth_from_size(name, size_bytes=size_bytes, seconds=slowest, nranks=nranks)
    high = (
        bandwidth_from_size(name, size_bytes=size_bytes, seconds=fastest, nranks=nranks)
        if fastest > 0
        else Bandwidth(float("inf"), float("inf"))
    )

    def widen(value: float, sign: int) -> float:
        return value + sign * (half_bw + 1e-9 * max(abs(value), 1.0))

    return (
        Bandwidth(widen(low.algbw, -1), widen(low.busbw, -1)),
        Bandwidth(widen(high.algbw, 1), widen(high.busbw, 1)),
    )
