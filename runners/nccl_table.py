"""nccl-tests' own stdout format, written for `benchreg run collectives` so that one reader reads both.

The formats are NVIDIA/nccl-tests' src/util.cu (2025-10 on): writeDeviceReport (header, device lines),
writeResultHeader (the column header), writeBenchmarkLinePreamble and writeBenchmarkLineBody (a row; a side that was
not measured is writeBenchMarkLineNullBody's blank), getFloatStr (numbers fitted to their column), writeResultFooter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NULL_BODY = " " * 32  # writeBenchMarkLineNullBody: a side not measured


@dataclass(frozen=True)
class DeviceLine:
    rank: int
    pid: int
    host: str
    device: int
    bus_id: str
    name: str


@dataclass(frozen=True)
class Side:
    time_us: float
    algbw: float
    busbw: float


@dataclass(frozen=True)
class TableRow:
    size: int
    count: int
    type: str
    redop: str
    root: int
    out_of_place: Side | None
    in_place: Side | None


def float_text(value: float, width: int) -> str:
    """getFloatStr: %.2f, else %.1f, else %.0f, whichever first fits `width`; else %.1e (or %.0e under 7)."""
    for decimals in (2, 1, 0):
        text = f"{value:{width}.{decimals}f}"
        if len(text) <= width:
            return text
    return f"{value:{width}.1e}" if width >= 7 else f"{value:{width}.0e}"


def header_lines(
    *, collective: str, min_bytes: int, max_bytes: int, step_factor: int, warmup: int, iters: int
) -> list[str]:
    return [
        f"# Collective test starting: {collective}",
        f"# nThread 1 nGpus 1 minBytes {min_bytes} maxBytes {max_bytes} step: {step_factor}(factor) "
        f"warmup iters: {warmup} iters: {iters} agg iters: 1 validation: 0 graph: 0",
        "#",
        "# Using devices",
    ]


def device_line(d: DeviceLine) -> str:
    return (
        f"#  Rank {d.rank:2d} Group {0:2d} Pid {d.pid:6d} on {d.host:>10s} device {d.device:2d} [{d.bus_id}] {d.name}"
    )


_PREAMBLE = "# {:>10s}  {:>12s}  {:>8s}  {:>6s}  {:>6s}"
_SIDE = "  {:>7s}  {:>6s}  {:>6s}  {:>6s}"


def column_lines() -> list[str]:
    """writeResultHeader without per-iteration or timestamp columns."""
    names = ("time", "algbw", "busbw", "#wrong")
    units = ("(us)", "(GB/s)", "(GB/s)", "")
    return [
        "#",
        _PREAMBLE.format("", "", "", "", "") + "           out-of-place                       in-place          ",
        _PREAMBLE.format("size", "count", "type", "redop", "root") + _SIDE.format(*names) + _SIDE.format(*names),
        _PREAMBLE.format("(B)", "(elements)", "", "", "") + _SIDE.format(*units) + _SIDE.format(*units),
    ]


def _side(side: Side | None) -> str:
    if side is None:
        return NULL_BODY
    # reportErrors off (validation: 0): "#wrong" is printed N/A
    return f"  {float_text(side.time_us, 7)}  {float_text(side.algbw, 6)}  {float_text(side.busbw, 6)}    N/A"


def row_line(row: TableRow) -> str:
    preamble = f"{row.size:12d}  {row.count:12d}  {row.type:>8s}  {row.redop:>6s}  {row.root:6d}"
    return (preamble + _side(row.out_of_place) + _side(row.in_place)).rstrip()


def footer_lines(rows: Sequence[TableRow], collective: str) -> list[str]:
    # writeResultFooter: the mean busbw over every measurement printed (out-of-place and in-place)
    busbws = [s.busbw for r in rows for s in (r.out_of_place, r.in_place) if s is not None]
    mean = sum(busbws) / len(busbws) if busbws else 0.0
    return [
        f"# {'Out of bounds values':<20s} : 0 OK",
        f"# {'Avg bus bandwidth':<20s} : {mean:g} ",
        "#",
        f"# Collective test concluded: {collective}",
    ]
