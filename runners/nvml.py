"""NVIDIA GPU readings through NVML (the `nvidia-ml-py` package, imported as `pynvml`).

Inventory (name, memory, driver, CUDA driver version, power limit, clocks) and, around a measurement,
temperatures, throttle reasons and the energy counter. Every reading that fails is None with its reason.
Only device 0 (the one the runners use) is sampled during a run; the inventory lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

try:
    import pynvml
except ImportError:  # pragma: no cover - depends on the installation
    pynvml = None


@dataclass(frozen=True)
class Inventory:
    """Accelerators (protocol items), the driver section, runtimes, raw details, and why if none."""

    accelerators: list[dict[str, Any]]
    driver: dict[str, Any] | None
    details: dict[str, Any]
    reason: str | None
    runtimes: dict[str, str | None] = field(default_factory=dict)


def _start() -> str | None:
    if pynvml is None:
        return "nvidia-ml-py not installed: pip install 'benchreg[gpu]'"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML unavailable: {exc}"
    return None


def _try(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except pynvml.NVMLError:
        return None


def _device(handle: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    memory = _try(pynvml.nvmlDeviceGetMemoryInfo, handle)
    limit_mw = _try(pynvml.nvmlDeviceGetEnforcedPowerManagementLimit, handle)
    clocks = _try(pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_SM)
    link = (_try(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
            _try(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle))
    accelerator = {"vendor": "NVIDIA", "model": str(pynvml.nvmlDeviceGetName(handle)), "count": 1,
                   "memory_gib": round(memory.total / 2**30, 2) if memory else None,
                   "host_interconnect": f"PCIe Gen{link[0]} x{link[1]}" if all(link) else None,
                   "interconnect": None, "power_limit_w": limit_mw / 1000.0 if limit_mw else None,
                   "frequency_mhz": float(clocks) if clocks else None}
    details = {"uuid": _try(pynvml.nvmlDeviceGetUUID, handle),
               "compute_capability": _try(pynvml.nvmlDeviceGetCudaComputeCapability, handle),
               "persistence_mode": _try(pynvml.nvmlDeviceGetPersistenceMode, handle),
               "memory_clock_max_mhz": _try(pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_MEM),
               "applications_clock_mhz": _try(pynvml.nvmlDeviceGetApplicationsClock, handle, pynvml.NVML_CLOCK_SM),
               "temperature_c": _try(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU)}
    return accelerator, details


def _merge(accelerators: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Identical devices become one entry with a count, as the protocol's accelerators list expects."""
    merged: list[dict[str, Any]] = []
    for acc in accelerators:
        same = next((m for m in merged if {**m, "count": 1} == acc), None)
        if same:
            same["count"] += 1
        else:
            merged.append(dict(acc))
    return merged


def inventory() -> Inventory:
    """Every NVIDIA GPU NVML sees."""
    reason = _start()
    if reason:
        return Inventory([], None, {}, reason)
    count = pynvml.nvmlDeviceGetCount()
    pairs = [_device(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
    cuda = _try(pynvml.nvmlSystemGetCudaDriverVersion)
    return Inventory(
        _merge([a for a, _ in pairs]), {"name": "nvidia", "version": str(pynvml.nvmlSystemGetDriverVersion())},
        {"devices": [d for _, d in pairs]}, None if count else "NVML sees no GPU",
        {"cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None})


def _throttle_names(mask: int) -> list[str]:
    names = {"GPU_IDLE": 0x1, "APPLICATIONS_CLOCKS_SETTING": 0x2, "SW_POWER_CAP": 0x4, "HW_SLOWDOWN": 0x8,
             "SYNC_BOOST": 0x10, "SW_THERMAL_SLOWDOWN": 0x20, "HW_THERMAL_SLOWDOWN": 0x40,
             "HW_POWER_BRAKE_SLOWDOWN": 0x80, "DISPLAY_CLOCK_SETTING": 0x100}
    return [name for name, bit in names.items() if mask & bit]


@dataclass
class GpuSampler:
    """Readings of GPU 0 at the start and end of a measurement."""

    handle: Any
    energy_mj: int | None
    temperature_c: float | None

    @classmethod
    def start(cls) -> tuple[GpuSampler | None, str | None]:
        reason = _start()
        if reason:
            return None, reason
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return cls(handle, _try(pynvml.nvmlDeviceGetTotalEnergyConsumption, handle),
                   _try(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU)), None

    def stop(self) -> dict[str, Any]:
        """End readings: energy used (J), temperatures, throttle reasons, clocks and power limit."""
        h = self.handle
        energy = _try(pynvml.nvmlDeviceGetTotalEnergyConsumption, h)
        mask = _try(pynvml.nvmlDeviceGetCurrentClocksEventReasons, h)
        # Idle and the application-clock setting are not slowdowns.
        reasons = [r for r in _throttle_names(mask) if r not in ("GPU_IDLE", "APPLICATIONS_CLOCKS_SETTING")] \
            if mask is not None else None
        limit = _try(pynvml.nvmlDeviceGetEnforcedPowerManagementLimit, h)
        return {"joules": (energy - self.energy_mj) / 1000.0 if energy is not None and self.energy_mj is not None
                else None,
                "start_c": self.temperature_c,
                "end_c": _try(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
                "throttle_reasons": reasons, "power_limit_w": limit / 1000.0 if limit else None,
                "graphics_mhz": _try(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM),
                "memory_mhz": _try(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM)}
