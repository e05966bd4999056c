"""A reader of nccl-tests' standard output (all_reduce_perf and its siblings), checked against its own figures.

Plain Python, no Django: the registry's importer and `benchreg run collectives` (whose table is printed in the same
format) both read through it. What is read, from NVIDIA/nccl-tests' printing code (src/common.cu up to 2025-09, then
src/util.cu: writeDeviceReport, writeResultHeader, writeBenchmarkLinePreamble/Body, writeResultFooter):

- "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807" (2025-10 on) and NCCL's own
  "host:pid:tid [0] NCCL INFO NCCL version 2.18.5+cuda12.2" (with NCCL_DEBUG=INFO); other NCCL INFO/WARN lines are
  skipped as NCCL's, not the test's;
- "# Collective test starting: all_reduce_perf" (2025-06 on; before, the caller names the collective);
- the header "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20
  [agg iters: 1] validation: 1 [graph: 0] [...]" (agg iters and graph from 2022; later words kept as text);
- device lines "#  Rank  0 Group  0 Pid  12345 on host device  0 [0000:07:00] NVIDIA H100 80GB HBM3"
  (Group from 2022, Pid from 2019, the bus id [0x07] before 2025);
- the column header, read by name, so every layout seen in the history reads: size count type redop [root]
  then twice (out-of-place, in-place) time algbw busbw [copybw] error|#wrong [i_min i_max i_p99 i_cv%];
- the rows, "Out of bounds values" and "Avg bus bandwidth".

Every row's algbw and busbw are recomputed from its printed size and time with protocol/collectives.py, and must
match the printed figures within the print's rounding (half a unit in the last printed place of the time and of
each bandwidth): a log that does not reproduce its own figures is refused, naming the row and the column. A line
that is none of the above is refused with its number; lines beginning with "#" that are not structured (nccl-tests'
own comments, e.g. "# Using devices") are kept as notes, since "#" is nccl-tests' comment mark.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from protocol import collectives

MAX_BYTES = 8 * 1024 * 1024  # a 1,000-size sweep with NCCL_DEBUG=INFO chatter is well under 1 MiB
MAX_LINE = 4096  # nccl-tests' device report is at most 2048 characters per process (MAX_LINE in writeDeviceReport)

TYPE_SIZES = collectives.TYPE_SIZES  # nccl-tests' type names and their sizes in bytes


class NcclTestsError(ValueError):
    """The log cannot be read or does not hold together; `line` is its 1-based line number where there is one."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


@dataclass(frozen=True)
class Header:
    threads: int
    gpus: int
    min_bytes: int
    max_bytes: int
    step: int
    step_kind: str  # "factor" or "bytes"
    warmup_iters: int
    iters: int
    agg_iters: int | None
    validation: int
    graph: int | None
    rest: str  # what later versions add (unalign, side_work, ...), as printed


@dataclass(frozen=True)
class Device:
    rank: int
    group: int | None
    pid: int | None
    host: str
    device: int
    bus_id: str
    name: str


@dataclass(frozen=True)
class Measurement:
    time_us: float
    algbw: float
    busbw: float
    wrong: int | None  # "#wrong" (2022 on); None for N/A or the older "error" layout
    max_error: float | None  # the older "error" column: the largest deviation, not a count
    extra: dict[str, float]  # copybw, i_min, ... as printed, not checked
    printed: dict[str, str]  # every column's text, whose last digit says how it was rounded


@dataclass(frozen=True)
class Row:
    line: int
    size: int
    count: int
    type: str
    redop: str | None  # absent from broadcast's table before 2022
    root: int | None  # absent from the unrooted collectives' tables before 2022
    out_of_place: Measurement | None  # None: the side was not run (writeBenchMarkLineNullBody's blank)
    in_place: Measurement | None

    @property
    def measurements(self) -> list[tuple[str, Measurement]]:
        return [(n, m) for n, m in (("out-of-place", self.out_of_place), ("in-place", self.in_place)) if m is not None]

    @property
    def failed_validation(self) -> bool:
        """nccl-tests counted wrong elements in either run (#wrong > 0)."""
        return any((m.wrong or 0) > 0 for _, m in self.measurements)


@dataclass
class Log:
    collective: str
    header: Header
    devices: list[Device]
    rows: list[Row]
    out_of_bounds: int | None = None
    avg_busbw: float | None = None
    nccl_version: str | None = None
    nccl_tests_version: str | None = None
    timed: str = "time"  # "cputime" when nccl-tests ran with -C: then bandwidths come from GPU time, not checked
    notes: list[str] = field(default_factory=list)

    @property
    def nranks(self) -> int:
        return len(self.devices)

    @property
    def failed_rows(self) -> list[Row]:
        return [row for row in self.rows if row.failed_validation]


def read_path(path: Path, collective: str | None = None) -> Log:
    """Read a file of at most MAX_BYTES; see read_text."""
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise NcclTestsError(f"{path.name} is {size} bytes; an nccl-tests log is read up to {MAX_BYTES}")
    with path.open("rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NcclTestsError(f"{path.name} is not UTF-8 text (byte {exc.start})") from None
    return read_text(text, collective)


def read_text(text: str, collective: str | None = None) -> Log:
    """Read one nccl-tests run; `collective` (e.g. "all_reduce") where the log does not name it (before 2025-06)."""
    if len(text) > MAX_BYTES:
        raise NcclTestsError(f"the log is {len(text)} characters; it is read up to {MAX_BYTES}")
    state = _State(named=collective)
    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) > MAX_LINE:
            raise NcclTestsError(f"{len(line)} characters; a line is read up to {MAX_LINE}", number)
        _read_line(state, number, line.rstrip())
    return _finish(state)


# --- line by line ----------------------------------------------------------------------------------------------------

_HEADER = re.compile(
    r"^#? ?nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+) step: (\d+)\((factor|bytes)\) "
    r"warmup iters: (\d+) iters: (\d+)(?: agg iters: (\d+))? validation: (\d+)(?: graph: (\d+))?(.*)$"
)
_DEVICE = re.compile(
    r"^#\s+Rank\s+(\d+)(?:\s+Group\s+(\d+))?(?:\s+Pid\s+(\d+))? on\s+(\S+) device\s+(\d+) "
    r"\[([^\]\s]+)\] (.+)$"
)
_NCCL_LINE = re.compile(r"^\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN|TRACE|ABORT)\b(.*)$")
_NCCL_VERSION = re.compile(r"NCCL version (\S+)")
_TESTS_VERSION = re.compile(r"^# nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)\s*$")
_STARTING = re.compile(r"^# Collective test starting: (\S+?)(?:_perf)?(?:_mpi)?\s*$")
_OUT_OF_BOUNDS = re.compile(r"^#? ?Out of bounds values\s*: (\d+) (OK|FAILED)\s*$")
_AVG_BUSBW = re.compile(r"^#? ?Avg bus bandwidth\s*: (\S+)(?: (OK|FAILED))?\s*$")


@dataclass
class _State:
    named: str | None
    collective: str | None = None
    header: Header | None = None
    devices: list[Device] = field(default_factory=list)
    columns: list[str] | None = None
    column_line: int = 0
    rows: list[Row] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw: float | None = None
    avg_line: int = 0
    nccl_version: str | None = None
    nccl_tests_version: str | None = None
    notes: list[str] = field(default_factory=list)


def _read_line(state: _State, number: int, line: str) -> None:
    if not line.strip():
        return
    nccl = _NCCL_LINE.match(line)
    if nccl:  # NCCL's own debug output, interleaved with the test's when NCCL_DEBUG is set
        version = _NCCL_VERSION.search(nccl.group(1))
        if version and state.nccl_version is None:
            state.nccl_version = version.group(1)
        return
    if _read_structured(state, number, line):
        return
    if line.startswith("#"):
        state.notes.append(line.lstrip("#").strip())
        return
    if state.columns is None:
        raise NcclTestsError(f"not a line of nccl-tests' output: {line[:80]!r}", number)
    state.rows.append(_row(state, number, line))


def _read_structured(state: _State, number: int, line: str) -> bool:
    """The header, device, version, column and summary lines; True where `line` was one of them."""
    if "nThread" in line and line.lstrip("# ").startswith("nThread"):
        state.header = _header(line, number)
    elif _DEVICE.match(line):
        state.devices.append(_device(line))
    elif line.lstrip("# ").startswith("Rank "):
        raise NcclTestsError(f"a device line that does not read: {line[:80]!r}", number)
    elif match := _TESTS_VERSION.match(line):
        state.nccl_tests_version = match.group(1)
        state.nccl_version = state.nccl_version or _nccl_version_from_code(int(match.group(3)))
    elif match := _STARTING.match(line):
        state.collective = match.group(1)
    elif (tokens := line.lstrip("#").split())[:3] == ["size", "count", "type"]:
        state.columns, state.column_line = tokens, number
    elif tokens[:2] == ["(B)", "(elements)"]:
        _check_units(tokens, number)
    elif "Out of bounds values" in line or "Avg bus bandwidth" in line:
        _summary(state, number, line)
    else:
        return False
    return True


def _header(line: str, number: int) -> Header:
    match = _HEADER.match(line)
    if not match:
        raise NcclTestsError(f"a run header that does not read: {line[:120]!r}", number)
    g = match.groups()
    return Header(
        threads=int(g[0]),
        gpus=int(g[1]),
        min_bytes=int(g[2]),
        max_bytes=int(g[3]),
        step=int(g[4]),
        step_kind=g[5],
        warmup_iters=int(g[6]),
        iters=int(g[7]),
        agg_iters=int(g[8]) if g[8] is not None else None,
        validation=int(g[9]),
        graph=int(g[10]) if g[10] is not None else None,
        rest=g[11].strip(),
    )


def _device(line: str) -> Device:
    match = _DEVICE.match(line)
    assert match is not None  # the caller matched it
    rank, group, pid, host, device, bus_id, name = match.groups()
    return Device(
        rank=int(rank),
        group=int(group) if group is not None else None,
        pid=int(pid) if pid is not None else None,
        host=host,
        device=int(device),
        bus_id=bus_id,
        name=name.strip(),
    )


def _nccl_version_from_code(code: int) -> str:
    # NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z from 2.9 on (X*1000 + Y*100 + Z before): nccl.h
    if code >= 20900:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _check_units(tokens: list[str], number: int) -> None:
    for unit in tokens[2:]:
        if unit not in ("(us)", "(GB/s)", "(%)"):
            raise NcclTestsError(
                f"a column in {unit}; nccl-tests prints times in (us) and bandwidths in (GB/s)", number
            )


def _summary(state: _State, number: int, line: str) -> None:
    bounds = _OUT_OF_BOUNDS.match(line)
    if bounds:
        state.out_of_bounds = int(bounds.group(1))
        if (state.out_of_bounds > 0) != (bounds.group(2) == "FAILED"):
            raise NcclTestsError(f"{state.out_of_bounds} out-of-bounds values marked {bounds.group(2)}", number)
        return
    average = _AVG_BUSBW.match(line)
    if not average:
        raise NcclTestsError(f"a summary line that does not read: {line[:80]!r}", number)
    state.avg_busbw = _number(average.group(1), number, "Avg bus bandwidth")
    state.avg_line = number


# --- the table -------------------------------------------------------------------------------------------------------

_TIME_COLUMNS = ("time", "cputime")
_ALL_TIMES = ("time", "algbw", "busbw")


def _sides(columns: list[str], number: int) -> tuple[int, list[str], list[str]]:
    """The prefix length and the out-of-place and in-place column names of a column header."""
    starts = [i for i, name in enumerate(columns) if name in _TIME_COLUMNS]
    if len(starts) != 2:
        raise NcclTestsError(f"a column header without one out-of-place and one in-place time: {columns}", number)
    if "timestamp" in columns:
        raise NcclTestsError("a table with timestamps (-Z) is not read: its time of day has spaces", number)
    first, second = columns[starts[0] : starts[1]], columns[starts[1] :]
    for side in (first, second):
        if not all(name in side for name in _ALL_TIMES) or not ({"#wrong", "error"} & set(side)):
            raise NcclTestsError(f"a column header without time, algbw, busbw and #wrong or error: {columns}", number)
    return starts[0], first, second


def _row(state: _State, number: int, line: str) -> Row:
    assert state.columns is not None
    prefix, first, second = _sides(state.columns, state.column_line)
    tokens = line.split()
    missing = _missing_side(line, tokens, prefix, len(first), len(second))
    if len(tokens) != len(state.columns) and missing is None:
        raise NcclTestsError(
            f"{len(tokens)} columns where the header on line {state.column_line} names {len(state.columns)}", number
        )
    named = dict(zip(state.columns[:prefix], tokens[:prefix], strict=True))
    if not set(named) <= {"size", "count", "type", "redop", "root"}:
        raise NcclTestsError(f"unknown leading columns {sorted(named)}", state.column_line)
    return Row(
        line=number,
        size=_integer(named["size"], number, "size"),
        count=_integer(named["count"], number, "count"),
        type=named["type"],
        redop=named.get("redop"),
        root=_integer(named["root"], number, "root", minimum=-1) if "root" in named else None,
        out_of_place=None if missing == "out" else _measurement(first, tokens[prefix : prefix + len(first)], number),
        in_place=None if missing == "in" else _measurement(second, tokens[-len(second) :], number),
    )


def _missing_side(line: str, tokens: list[str], prefix: int, first: int, second: int) -> str | None:
    """ "out" or "in" where a row holds one side only: nccl-tests blanks an out-of-place side not run with 32
    spaces (writeBenchMarkLineNullBody); benchreg's runner does the same for a side torch does not offer, and leaves
    the in-place side off the end of the line."""
    if first != second or len(tokens) != prefix + first or prefix == 0:
        return None
    after = re.match(r"^\s*(?:\S+\s+){" + str(prefix - 1) + r"}\S+", line)
    assert after is not None
    gap = len(line[after.end() :]) - len(line[after.end() :].lstrip())
    return "out" if gap >= 32 else "in"


def _measurement(names: list[str], tokens: list[str], number: int) -> Measurement:
    values = dict(zip(names, tokens, strict=True))
    wrong_text = values.get("#wrong")
    error_text = values.get("error")
    known = {"time", "cputime", "algbw", "busbw", "#wrong", "error"}
    return Measurement(
        time_us=_number(values.get("time") or values["cputime"], number, "time"),
        algbw=_number(values["algbw"], number, "algbw"),
        busbw=_number(values["busbw"], number, "busbw"),
        wrong=None if wrong_text in (None, "N/A") else _integer(wrong_text, number, "#wrong"),
        max_error=None if error_text in (None, "N/A") else _number(error_text, number, "error"),
        extra={k: _number(v, number, k) for k, v in values.items() if k not in known and v != "N/A"},
        printed=values,
    )


def _integer(text: str, number: int, column: str, minimum: int = 0) -> int:
    # "%6g" prints a count from 1e6 on as "1e+06": read it exactly where it is a whole number.
    value = _number(text, number, column)
    if value != int(value) or value < minimum:
        raise NcclTestsError(f"{column} {text!r} is not a whole number >= {minimum}", number)
    return int(value)


def _number(text: str, number: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise NcclTestsError(f"{column} {text!r} is not a number", number) from None
    if not math.isfinite(value) or (value < 0 and column != "root"):
        raise NcclTestsError(f"{column} {text!r} is not a finite number >= 0", number)
    return value


# --- the whole: does it reproduce its own figures? -------------------------------------------------------------------


def _finish(state: _State) -> Log:
    name = _collective_name(state)
    if state.header is None:
        raise NcclTestsError("no run header ('# nThread ... nGpus ... minBytes ...'): not an nccl-tests log")
    if not state.devices:
        raise NcclTestsError("no device lines ('#  Rank  0 ...'): the number of ranks, and so busbw, is unknown")
    if state.columns is None or not state.rows:
        raise NcclTestsError("no result table: the run printed no row")
    log = Log(
        collective=name,
        header=state.header,
        devices=state.devices,
        rows=state.rows,
        out_of_bounds=state.out_of_bounds,
        avg_busbw=state.avg_busbw,
        nccl_version=state.nccl_version,
        nccl_tests_version=state.nccl_tests_version,
        timed="cputime" if "cputime" in state.columns else "time",
        notes=state.notes,
    )
    for row in log.rows:
        _check_row(log, row)
    if log.avg_busbw is not None:
        _check_average(log, state.avg_line)
    return log


def _collective_name(state: _State) -> str:
    if state.collective and state.named and collectives.collective(state.named).name != state.collective:
        raise NcclTestsError(f"the log is of {state.collective}, not {state.named} as stated")
    name = state.collective or state.named
    if name is None:
        raise NcclTestsError("this log does not name its collective (before 2025-06): state it, e.g. all_reduce")
    try:
        return collectives.collective(name).name
    except ValueError as exc:
        raise NcclTestsError(str(exc)) from None


def _check_row(log: Log, row: Row) -> None:
    typesize = TYPE_SIZES.get(row.type)
    if typesize is None:
        raise NcclTestsError(f"type {row.type!r} is not one of nccl-tests' ({', '.join(TYPE_SIZES)})", row.line)
    expected = collectives.collective(log.collective).printed_bytes(row.count, typesize, log.nranks)
    if row.size != expected:
        ranks = expected // (row.count * typesize) if row.count else 1
        raise NcclTestsError(
            f"size {row.size} B is not count {row.count} x {typesize} B ({row.type})"
            + (f" x {ranks} ranks" if ranks > 1 else ""),
            row.line,
        )
    if log.timed == "cputime":
        return  # -C prints CPU time beside bandwidths from GPU time: nothing to reproduce
    for side, measured in row.measurements:
        for column in ("algbw", "busbw"):
            low, high = _expected_range(log, row, measured, column)
            printed = getattr(measured, column)
            if not low <= printed <= high:
                raise NcclTestsError(
                    f"{side} {column} {printed:g} GB/s does not follow from size {row.size} B in "
                    f"{measured.time_us:g} us over {log.nranks} ranks: {log.collective} gives {low:.6g}..{high:.6g}",
                    row.line,
                )


def _expected_range(log: Log, row: Row, measured: Measurement, column: str) -> tuple[float, float]:
    """What `column` may print, given the printed time's rounding and the column's own."""
    time_text = measured.printed.get("time") or measured.printed["cputime"]
    low, high = collectives.bandwidth_range(
        log.collective,
        size_bytes=row.size,
        time_us=measured.time_us,
        nranks=log.nranks,
        half_time_us=collectives.half_unit(time_text),
        half_bw=collectives.half_unit(measured.printed[column]),
    )
    return getattr(low, column), getattr(high, column)


def _check_average(log: Log, number: int) -> None:
    # writeResultFooter prints bw[0] = the mean busBw over every out-of-place and in-place measurement, with "%g"
    # (6 significant digits); the printed rows are rounded, so their mean is off by at most their largest half unit.
    measured = [m for row in log.rows for _, m in row.measurements]
    mean = sum(m.busbw for m in measured) / len(measured)
    tolerance = max(collectives.half_unit(m.printed["busbw"]) for m in measured) + 5e-6 * abs(mean) + 1e-12
    assert log.avg_busbw is not None
    if abs(mean - log.avg_busbw) > tolerance and log.timed == "time":
        raise NcclTestsError(
            f"Avg bus bandwidth {log.avg_busbw:g} is not the mean of the rows' busbw ({mean:.6g})", number
        )
