"""Host readings taken around a run: peak RSS, CPU energy (RAPL), CPU temperature, and a measured matmul
peak for MFU on CPUs (which publish no single peak for a given precision and thread count).

Every reader returns a value or None with the reason; nothing is estimated in place of a reading.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

RAPL_ROOT = Path("/sys/class/powercap")


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) for this process; False where the kernel refuses."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss(reset_worked: bool) -> tuple[int | None, str | None]:
    """Peak resident set size in bytes since the last reset, with a note when it is the lifetime peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                value = int(line.split()[1]) * 1024
                return value, None if reset_worked else "peak RSS since process start (could not reset VmHWM)"
    except OSError:
        pass
    # ru_maxrss is in KiB on Linux: the lifetime peak, which may include earlier runs in this process.
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "peak RSS since process start"


def cpu_temperature() -> tuple[float | None, str | None]:
    """The hottest CPU package/core temperature in °C, or None and why."""
    reader = getattr(psutil, "sensors_temperatures", None)
    try:
        sensors = reader() if reader else {}
    except OSError as exc:
        return None, f"temperature sensors unreadable: {exc}"
    readings = [t.current for name in ("coretemp", "k10temp", "zenpower", "cpu_thermal") for t in sensors.get(name, [])]
    if not readings:
        return None, "no CPU temperature sensor exposed (common in virtual machines)"
    return float(max(readings)), None


def _rapl_packages() -> list[Path]:
    return sorted(p for p in RAPL_ROOT.glob("intel-rapl:*") if p.name.count(":") == 1)


@dataclass
class RaplMeter:
    """CPU package energy from RAPL between `start` and `stop`, summed over packages, wrap-around aware."""

    packages: list[Path]
    readings: list[int]
    started: float

    @classmethod
    def start(cls) -> tuple[RaplMeter | None, str | None]:
        packages = _rapl_packages()
        if not packages:
            return None, f"RAPL not available ({RAPL_ROOT} absent: virtual machine or non-Intel/AMD CPU)"
        try:
            readings = [int((p / "energy_uj").read_text()) for p in packages]
        except OSError as exc:
            return None, f"RAPL energy counter not readable ({exc.strerror}; root-only since CVE-2020-8694)"
        return cls(packages, readings, time.perf_counter()), None

    def stop(self) -> tuple[float, float]:
        """(joules, seconds) since start."""
        joules = 0.0
        for path, before in zip(self.packages, self.readings, strict=True):
            after = int((path / "energy_uj").read_text())
            if after < before:  # the counter wrapped
                after += int((path / "max_energy_range_uj").read_text())
            joules += (after - before) / 1e6
        return joules, time.perf_counter() - self.started


PEAK_RUNS, PEAK_BUDGET_S = 5, 1.0


def measured_peak_tflops(matmul: Callable[[], object], flops: float, label: str) -> tuple[float, str]:
    """Best of up to five timed runs of a large matmul, as an attainable peak with a source saying exactly that.

    The timed runs stop once they took PEAK_BUDGET_S, at two at the least: on a device slow at this precision (bf16
    on a CPU without bf16 units, 2.4 s a run on the CI machine) five runs and a warm-up took 14 s, longer than the
    quick training run whose FLOP utilisation they serve. The first call pays for allocation and kernel selection
    and is not a sample, unless it alone is over the budget (then that overhead is lost in it)."""
    first = _timed(matmul)
    times = [first] if first >= PEAK_BUDGET_S else []
    while len(times) < PEAK_RUNS and (len(times) < 2 or sum(times) < PEAK_BUDGET_S):
        times.append(_timed(matmul))
    best = min(times)
    return round(flops / best / 1e12, 4), f"measured: best of {len(times)} × {label} (attainable peak, not a datasheet)"


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
