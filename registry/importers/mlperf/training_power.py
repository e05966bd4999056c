"""MLPerf Training Power: the energy of a run from its power/<result>/node_*.txt and sw_*.txt readings, totalled
as MLCommons' result summarizer does (mlperf_logging/result_summarizer/result_summarizer.py, the commit each round
was scored with), read from rounds/training/power.json.

Per node file: conversion_eff × Σ power_reading × (its time − the previous reading's) over the measurement window,
stretched to the run's time to train (× time to train / window), in joules (W × ms / 1000). Per switch file:
conversion_eff × interconnect_power_est × time to train. A run's energy is the sum over its files; the result's is
the mean over the runs the time's olympic mean kept, times scaling.json's factor (training.py).

How the window is read changed between rounds ('integration'): v4.0 was scored with the readings in file order and
the window ending at the later of power_measurement_stop and the last reading; from v4.1 the records are sorted by
time and only readings between start and stop count. A file the round's rule cannot total (no start, a window of
no length, a reading before the start in file order) is refused in words, never totalled another way.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeGuard

from .plan import SourceError
from .training_rules import RULES_DIR

POWER_RULES = RULES_DIR / "power.json"


@dataclass(frozen=True)
class PowerRule:
    """One round's power rule: where the readings are, their keys, how the window is read, and the source."""

    round: str
    folder: str
    node_files: str
    switch_files: str
    keys: dict[str, str]
    integration: str  # "log-order" or "time-ordered"
    source: str  # repo@commit:path, for the document's method

    def run_folder(self, benchmark_folder: Path, result_file: Path) -> Path:
        """power/<result>/: the summarizer's `result_file.split("/")[-1].split(".")[0]`."""
        return benchmark_folder / self.folder / result_file.name.split(".")[0]


@functools.cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(POWER_RULES.read_text(encoding="utf-8"))
    if data.get("kind") != "mlperf-training-power-rules":
        raise SourceError(f"{POWER_RULES.name} is not MLPerf Training's power rules")
    return data


def power_rule(round_value: str) -> PowerRule | None:
    """The round's power rule, or None when power.json has none for it (rounds before Training Power)."""
    data = _data()
    entry = data["rounds"].get(round_value)
    if entry is None:
        return None
    if entry["integration"] not in data["integrations"]:
        raise SourceError(f"power.json: {round_value}'s integration {entry['integration']!r} is not one it describes")
    source = data["source"]
    return PowerRule(
        round=round_value,
        folder=data["layout"]["folder"],
        node_files=data["layout"]["node_files"],
        switch_files=data["layout"]["switch_files"],
        keys=dict(data["keys"]),
        integration=entry["integration"],
        source=f"{source['repo']}@{entry['commit'][:12]}:{source['path']}",
    )


def node_energy(records: list[dict[str, Any]], time_to_train_ms: float, rule: PowerRule) -> float:
    """Joules one node file adds to a run (the summarizer's _compute_power_node of the round's commit)."""
    keys = rule.keys
    lines = [
        (_stamp(r), r)
        for r in records
        if r["key"] in (keys["start"], keys["stop"], keys["reading"], keys["efficiency"])
    ]
    if rule.integration == "time-ordered":
        lines.sort(key=lambda line: line[0])  # stable, as Python's list.sort in the summarizer
    start = stop = previous = None
    last = 0.0
    total = 0.0
    efficiency = 1.0
    for stamp, record in lines:
        key = record["key"]
        if key == keys["start"]:
            start = previous = stamp
        elif key == keys["reading"]:
            if stop is not None and rule.integration == "time-ordered":
                continue  # after the stop: outside the window
            if previous is None:
                if rule.integration == "log-order":
                    # the v4.0 summarizer would multiply this reading by its time since 1970
                    raise SourceError(f"a {keys['reading']} before {keys['start']}: the v4.0 rule cannot total it")
                continue  # before the start: outside the window
            total += _number(record, keys["reading"]) * (stamp - previous)
            previous = stamp
            last = max(last, stamp)
        elif key == keys["stop"]:
            stop = stamp  # from v4.1 the last stop (in time) ends the window, as the summarizer overwrites it
            if rule.integration == "log-order":
                break  # the v4.0 summarizer stops reading at the first stop
        elif key == keys["efficiency"]:
            efficiency = _number(record, keys["efficiency"])
    if start is None:
        raise SourceError(f"no {keys['start']} record")
    end = max(stop or 0.0, last) if rule.integration == "log-order" else stop if stop is not None else last
    if not end > start:
        raise SourceError(
            f"the measurement window ({keys['start']} to {keys['stop']} or the last reading) has no length: "
            "MLCommons' summarizer divides by it"
        )
    return efficiency * total * time_to_train_ms / (end - start) / 1000


def switch_energy(records: list[dict[str, Any]], time_to_train_ms: float, rule: PowerRule) -> float:
    """Joules one switch file adds (the summarizer's _compute_power_sw): its first interconnect_power_est (W),
    times conversion_eff stated before it, over the time to train; 0 when it states none, as there."""
    keys = rule.keys
    efficiency, watts = 1.0, 0.0
    for record in records:
        if record["key"] == keys["efficiency"]:
            efficiency = _number(record, keys["efficiency"])
        if record["key"] == keys["switch"]:
            watts = _number(record, keys["switch"])
            break
    return efficiency * watts * time_to_train_ms / 1000


def _stamp(record: dict[str, Any]) -> float:
    stamp = record.get("time_ms")
    if not _finite(stamp):
        raise SourceError(f"a {record['key']} record without a time_ms number")
    return float(stamp)


def _number(record: dict[str, Any], key: str) -> float:
    value = record.get("value")
    if not _finite(value):
        raise SourceError(f"a {key} record whose value {value!r} is not a number")
    return float(value)


def _finite(value: Any) -> TypeGuard[int | float | Decimal]:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool) and math.isfinite(value)
