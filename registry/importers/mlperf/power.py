"""MLPerf Power: the measured average system power of a result, computed exactly as MLPerf's submission checker
computes it, stored as `metrics.energy`.

MLPerf's rule (mlcommons/inference tools/submission/submission_checker/checks/power_check.py,
`get_power_metric_check`; the same code as `get_power_metric` of the v4.x-v5.1 single-file checker): a result
has power when its `performance/power/` folder exists. The SPEC PTDaemon samples of the timed run are
`performance/run_1/spl.txt`, one line per reading (`Time,<MM-DD-YYYY hh:mm:ss.fff>,Watts,<W>,Volts,...`). The
average power is the plain mean of the Watts values (> 0) of the lines whose time lies strictly between LoadGen's
`power_begin` and `power_end` records of that run's `mlperf_log_detail.txt`; the window is power_end -
power_begin. Both clocks are read as written (the checker adds no time-zone offset). MLCommons then publishes
(`Power_Result`): the average power in W for Offline, Server and Interactive; energy per query in mJ for
SingleStream and MultiStream (average power x window x 1000 / queries, x 8 for a MultiStream result inferred from
a SingleStream run). `mlperf_power_result` gives that figure from the stored block, for checks against
MLCommons' table.

The ranging run (`performance/ranging/`) sets the analyzer's ranges; MLPerf does not score it, and neither is it
read here. The Power working group's own checks (`power/power_checker.py`: PTD session messages, source hashes,
uncertainty) are not repeated: the importer only lists which of the files it requires are missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .ledger import Ledger
from .plan import Build, SourceError

# The files MLPerf's checker requires in performance/power/ (constants.py REQUIRED_POWER_FILES).
POWER_FILES = ("client.json", "client.log", "ptd_logs.txt", "server.json", "server.log")
# LoadGen's power_begin / power_end and PTDaemon's spl.txt times (the checker's datetime_format).
TIME_FORMAT = "%m-%d-%Y %H:%M:%S.%f"
SCOPE = "system under test, wall (AC) power as the SPEC PTDaemon analyzer measured it"
# The scenarios whose published power figure is the average power (W); the others publish mJ per query.
WATTS_SCENARIOS = frozenset({"Offline", "Server", "Interactive"})
# MLPerf counts 8 samples per query when it infers MultiStream from a SingleStream run (get_inferred_result).
INFERRED_MULTISTREAM_SAMPLES = 8


@dataclass(frozen=True)
class Samples:
    """spl.txt as the checker reads it: (time, watts) of every 'Time,' line, in file order."""

    readings: list[tuple[datetime, float]]


def read_spl(text: str) -> Samples:
    """spl.txt: PTDaemon's 'Time,<time>,Watts,<value>,...' lines (other lines are not readings, as for the checker).
    A 'Time,' line whose time or Watts field cannot be read raises SourceError naming the line."""
    readings = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("Time"):
            continue
        fields = line.split(",")
        if len(fields) < 4 or fields[2] != "Watts":
            raise SourceError(f"line {number} is not 'Time,<time>,Watts,<value>,...'")
        try:
            readings.append((datetime.strptime(fields[1], TIME_FORMAT), float(fields[3])))
        except ValueError:
            raise SourceError(f"line {number}: time {fields[1]!r} or Watts {fields[3]!r} cannot be read") from None
    if not readings:
        raise SourceError("has no 'Time,...,Watts,...' reading")
    return Samples(readings)


def read_ptd_log(text: str) -> dict[str, Any]:
    """ptd_logs.txt: the PTDaemon version and the analyzers it selected, in PTDaemon's words."""
    version = re.search(r"^\s*Version\s+(\S+)", text, re.MULTILINE)
    analyzers = re.findall(r"Selected power analyzer '([^']+)'", text)
    return {"version": version[1] if version else None, "analyzers": list(dict.fromkeys(analyzers))}


@dataclass(frozen=True)
class PowerSources:
    """What the power files of one result gave: the spl.txt readings (None if unreadable) and the PTD words."""

    samples: Samples | None
    ptd: dict[str, Any] | None


def load(ledger: Ledger, scenario_dir: Path) -> PowerSources | None:
    """The result's power files, read through the ledger (so they are hashed and listed), or None when the result
    has no `performance/power/` folder (MLPerf: no power measurement). Missing files MLPerf requires are warnings."""
    power = scenario_dir / "performance" / "power"
    if not power.is_dir():
        return None
    missing = [name for name in POWER_FILES if not (power / name).is_file()]
    if missing:
        where = power.relative_to(ledger.tree).as_posix()
        ledger.warnings.append(f"{where}/ lacks {', '.join(missing)}, which MLPerf's power check requires")
    spl = ledger.load(
        scenario_dir / "performance" / "run_1" / "spl.txt", read_spl, what="SPEC PTDaemon samples", required=False
    )
    ptd = ledger.load(power / "ptd_logs.txt", read_ptd_log, what="SPEC PTDaemon log", required=False, quiet=True)
    return PowerSources(spl, ptd)


def attach(document: dict[str, Any], sources: PowerSources | None, detail: dict[str, Any], build: Build) -> None:
    """Put MLPerf's measured power into document['metrics']['energy'] (its window and method are protocol 1.1
    fields, the minor every MLPerf document declares). Nothing is attached, with a warning saying why, when the
    window or the samples fail."""
    if sources is None:
        return
    if sources.samples is None:
        build.warnings.append("performance/power/ exists but spl.txt gave no readings: no measured power stored")
        return
    try:
        energy = energy_block(sources.samples, detail, sources.ptd)
    except SourceError as exc:
        build.warnings.append(f"no measured power stored: {exc}")
        return
    document["metrics"]["energy"] = energy  # the window and method are 1.1 fields: MLPerf documents declare 1.1


def energy_block(samples: Samples, detail: dict[str, Any], ptd: dict[str, Any] | None) -> dict[str, Any]:
    """metrics.energy: MLPerf's average power over LoadGen's power window, the window, and the energy it holds."""
    begin, end = _marker(detail, "power_begin"), _marker(detail, "power_end")
    if end <= begin:
        raise SourceError(f"power_end {detail['power_end']!r} is not after power_begin {detail['power_begin']!r}")
    inside = [watts for time, watts in samples.readings if begin < time < end and watts > 0]
    if not inside:
        raise SourceError(
            f"spl.txt has no reading above 0 W strictly between power_begin {detail['power_begin']!r} and "
            f"power_end {detail['power_end']!r} (MLPerf's checker fails such a result)"
        )
    average = sum(inside) / len(inside)  # the checker's own sum and division, so the same float
    window = (end - begin).total_seconds()
    return {
        "source": "spec-ptd",
        "average_power_w": average,
        "joules": average * window,
        "window_s": window,
        "method": _method(len(inside), ptd),
        "scope": SCOPE,
    }


def _marker(detail: dict[str, Any], key: str) -> datetime:
    value = detail.get(key)
    if not isinstance(value, str):
        raise SourceError(f"the detail log has no {key} record, which bounds MLPerf's power window")
    try:
        return datetime.strptime(value, TIME_FORMAT)
    except ValueError:
        raise SourceError(f"{key} {value!r} is not LoadGen's 'MM-DD-YYYY hh:mm:ss.fff' time") from None


def _method(count: int, ptd: dict[str, Any] | None) -> str:
    tool = "SPEC PTDaemon"
    if ptd and ptd.get("version"):
        tool += f" {ptd['version']}"
    if ptd and ptd.get("analyzers"):
        tool += f" ({', '.join(ptd['analyzers'])})"
    return (
        f"{tool}: mean of the {count} spl.txt Watts readings strictly between LoadGen's power_begin and "
        "power_end of performance/run_1 (MLPerf Power, submission checker get_power_metric)"
    )[:500]


def mlperf_power_result(energy: dict[str, Any], scenario: str, loadgen_scenario: str, queries: int) -> float:
    """The figure MLCommons publishes as Power_Result for this result (W, or mJ per query), from a stored block.

    `scenario` is the result's folder scenario, `loadgen_scenario` the scenario LoadGen ran, `queries` the run's
    result_query_count. The arithmetic is the checker's, in its order, so the float is the same.
    """
    if scenario in WATTS_SCENARIOS:
        return float(energy["average_power_w"])
    joules = energy["average_power_w"] * energy["window_s"]
    if scenario == "MultiStream" and loadgen_scenario == "SingleStream":
        return float(joules * INFERRED_MULTISTREAM_SAMPLES * 1000 / queries)
    return float(joules * 1000 / queries)
