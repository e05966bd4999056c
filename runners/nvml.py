"""NVIDIA GPU readings through NVML (the `nvidia-ml-py` package, imported as `pynvml`).

Inventory (name, memory, driver, CUDA driver version, power limit, clocks) and, around a measurement,
temperatures, throttle reasons and the energy counter. Every reading that fails is None with its reason.
The device a run used is found by its UUID (CUDA and NVML number devices differently, and NVML ignores
CUDA_VISIBLE_DEVICES), and sampled in the background for the whole measurement window.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
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
    link = (
        _try(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
        _try(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
    )
    accelerator = {
        "vendor": "NVIDIA",
        "model": str(pynvml.nvmlDeviceGetName(handle)),
        "count": 1,
        "memory_gib": round(memory.total / 2**30, 2) if memory else None,
        "host_interconnect": f"PCIe Gen{link[0]} x{link[1]}" if all(link) else None,
        "interconnect": None,
        "power_limit_w": limit_mw / 1000.0 if limit_mw else None,
        "frequency_mhz": float(clocks) if clocks else None,
    }
    return accelerator, _device_details(handle)


def _device_details(handle: Any) -> dict[str, Any]:
    return {
        "uuid": _try(pynvml.nvmlDeviceGetUUID, handle),
        "compute_capability": _try(pynvml.nvmlDeviceGetCudaComputeCapability, handle),
        "persistence_mode": _try(pynvml.nvmlDeviceGetPersistenceMode, handle),
        "memory_clock_max_mhz": _try(pynvml.nvmlDeviceGetMaxClockInfo, handle, pynvml.NVML_CLOCK_MEM),
        "applications_clock_mhz": _try(pynvml.nvmlDeviceGetApplicationsClock, handle, pynvml.NVML_CLOCK_SM),
        "temperature_c": _try(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU),
    }


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


# ------------------------------------------------------------------------------------ which device ran it


@dataclass(frozen=True)
class Selection:
    """The NVML index of the device a run used, and how it was found (said in the document's notes)."""

    index: int | None
    how: str


def normalise_uuid(uuid: str) -> str:
    """NVML says "GPU-1b2c…", torch's device properties say "1b2c…": compare without the prefix."""
    text = uuid.strip().lower()
    return text[4:] if text.startswith("gpu-") else text


def select_device(
    devices: Sequence[tuple[int, str | None]], *, uuid: str | None, visible: str | None, ordinal: int = 0
) -> Selection:
    """Find the NVML index of CUDA device `ordinal` among `devices` ((NVML index, UUID) pairs).

    By UUID when the framework gives one (exact). Otherwise through CUDA_VISIBLE_DEVICES (`visible`), whose
    entries are NVML-style indices or UUID prefixes; a bare index there, or no variable at all, assumes
    CUDA_DEVICE_ORDER=PCI_BUS_ID (NVML's order), which the returned `how` says. MIG instances cannot be
    mapped to a board: no device is selected rather than the wrong one.
    """
    if uuid:
        return _select_by_uuid(devices, uuid)
    entries = [e.strip() for e in visible.split(",") if e.strip()] if visible is not None else None
    entry = str(ordinal) if entries is None else (entries[ordinal] if ordinal < len(entries) else None)
    if entry is None:
        return Selection(None, f"CUDA device {ordinal} is not among CUDA_VISIBLE_DEVICES={visible!r}")
    if entry.lower().startswith("mig-"):
        return Selection(
            None,
            f"CUDA device {ordinal} is the MIG instance {entry}: NVML board telemetry "
            "would describe the whole GPU, so none is recorded",
        )
    if entry.isdigit():
        return _select_by_index(devices, int(entry))
    return _select_by_prefix(devices, entry)


def _select_by_uuid(devices: Sequence[tuple[int, str | None]], uuid: str) -> Selection:
    wanted = normalise_uuid(uuid)
    for index, known in devices:
        if known and normalise_uuid(known) == wanted:
            return Selection(index, f"by UUID {known}")
    return Selection(None, f"no NVML device has the UUID {uuid} that the framework reported")


def _select_by_index(devices: Sequence[tuple[int, str | None]], index: int) -> Selection:
    if any(i == index for i, _ in devices):
        return Selection(index, f"by index {index} (assumes CUDA_DEVICE_ORDER=PCI_BUS_ID)")
    return Selection(None, f"NVML has no device {index}")


def _select_by_prefix(devices: Sequence[tuple[int, str | None]], entry: str) -> Selection:
    """The one device whose UUID starts with the CUDA_VISIBLE_DEVICES entry `entry`."""
    prefix = normalise_uuid(entry)
    matches = [i for i, known in devices if known and normalise_uuid(known).startswith(prefix)]
    if len(matches) == 1:
        return Selection(matches[0], f"by CUDA_VISIBLE_DEVICES UUID {entry}")
    return Selection(None, f"CUDA_VISIBLE_DEVICES entry {entry!r} matches {len(matches)} NVML devices")


def _devices() -> list[tuple[int, str | None]]:
    return [
        (i, _try(pynvml.nvmlDeviceGetUUID, pynvml.nvmlDeviceGetHandleByIndex(i)))
        for i in range(pynvml.nvmlDeviceGetCount())
    ]


def locate(uuid: str | None, visible: str | None, ordinal: int = 0) -> tuple[Any, Selection]:
    """The NVML handle of the device the run uses (None with the reason in `Selection.how`)."""
    reason = _start()
    if reason:
        return None, Selection(None, reason)
    chosen = select_device(_devices(), uuid=uuid, visible=visible, ordinal=ordinal)
    if chosen.index is None:
        return None, chosen
    return pynvml.nvmlDeviceGetHandleByIndex(chosen.index), chosen


def _details_section(pairs: list[tuple[dict[str, Any], dict[str, Any]]], chosen: Selection) -> dict[str, Any]:
    return {
        "devices": [d for _, d in pairs],
        "used_index": chosen.index,
        "selected": chosen.how,
        "machine_accelerators": _merge([a for a, _ in pairs]),
    }


def _unidentified(count: int, chosen: Selection) -> str | None:
    """Why the inventory lists no accelerator, or None when it lists the one the run used."""
    if not count:
        return "NVML sees no GPU"
    if chosen.index is None:
        return f"the GPU this run used could not be identified: {chosen.how}"
    return None


def inventory(uuid: str | None = None, visible: str | None = None, ordinal: int = 0) -> Inventory:
    """The NVIDIA GPU the run uses as the system's accelerator; every GPU NVML sees in `details`.

    A run of the bundled runners uses one device: listing the machine's other GPUs as accelerators would
    make a one-GPU measurement read as an eight-GPU system.
    """
    reason = _start()
    if reason:
        return Inventory([], None, {}, reason)
    count = pynvml.nvmlDeviceGetCount()
    pairs = [_device(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
    chosen = select_device(
        [(i, d.get("uuid")) for i, (_, d) in enumerate(pairs)], uuid=uuid, visible=visible, ordinal=ordinal
    )
    used = [pairs[chosen.index][0]] if chosen.index is not None else []
    cuda = _try(pynvml.nvmlSystemGetCudaDriverVersion)
    why = _unidentified(count, chosen)
    return Inventory(
        used,
        {"name": "nvidia", "version": str(pynvml.nvmlSystemGetDriverVersion())},
        _details_section(pairs, chosen),
        why,
        {"cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None},
    )


# ------------------------------------------------------------------------------ readings over the window


def _throttle_names(mask: int) -> list[str]:
    names = {
        "GPU_IDLE": 0x1,
        "APPLICATIONS_CLOCKS_SETTING": 0x2,
        "SW_POWER_CAP": 0x4,
        "HW_SLOWDOWN": 0x8,
        "SYNC_BOOST": 0x10,
        "SW_THERMAL_SLOWDOWN": 0x20,
        "HW_THERMAL_SLOWDOWN": 0x40,
        "HW_POWER_BRAKE_SLOWDOWN": 0x80,
        "DISPLAY_CLOCK_SETTING": 0x100,
    }
    return [name for name, bit in names.items() if mask & bit]


# Idle and the application-clock setting are not slowdowns.
NOT_SLOWDOWNS = ("GPU_IDLE", "APPLICATIONS_CLOCKS_SETTING")
SAMPLE_INTERVAL_S = 0.1


class GpuSampler:
    """Readings of the run's GPU over the measurement window.

    Energy comes from the board's cumulative counter read at start and stop; throttle reasons, temperature
    and clocks are polled every `interval` seconds by a background thread, so a slowdown in the middle of
    the window is recorded even if it has cleared by the end. `seconds` is the window's wall-clock duration,
    which is what the energy was accumulated over (average power = joules ÷ seconds).
    """

    def __init__(self, handle: Any, how: str, interval: float = SAMPLE_INTERVAL_S) -> None:
        self.handle, self.how, self.interval = handle, how, interval
        self._mask = 0
        self._polls = 0
        self._mask_failed = False
        self._max_c: float | None = None
        self._stop = threading.Event()
        self.start_c = _try(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU)
        self.energy_mj = _try(pynvml.nvmlDeviceGetTotalEnergyConsumption, handle)
        self.started = time.perf_counter()
        self._thread = threading.Thread(target=self._poll, name="benchreg-nvml", daemon=True)
        self._thread.start()

    @classmethod
    def start(
        cls, uuid: str | None = None, visible: str | None = None, ordinal: int = 0, interval: float = SAMPLE_INTERVAL_S
    ) -> tuple[GpuSampler | None, str | None]:
        handle, chosen = locate(uuid, visible, ordinal)
        if handle is None:
            return None, chosen.how
        return cls(handle, chosen.how, interval), None

    def _poll(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self.interval):
                return

    def _sample(self) -> None:
        mask = _try(pynvml.nvmlDeviceGetCurrentClocksEventReasons, self.handle)
        if mask is None:
            self._mask_failed = True
        else:
            self._mask |= int(mask)
        temp = _try(pynvml.nvmlDeviceGetTemperature, self.handle, pynvml.NVML_TEMPERATURE_GPU)
        if temp is not None:
            self._max_c = float(temp) if self._max_c is None else max(self._max_c, float(temp))
        self._polls += 1

    def _throttle_reasons(self) -> list[str] | None:
        """Every slowdown reason seen in the window; None when none could be read at all."""
        if self._mask_failed and not self._mask:
            return None
        return [r for r in _throttle_names(self._mask) if r not in NOT_SLOWDOWNS]

    def stop(self) -> dict[str, Any]:
        """End readings: energy (J) over the window's wall-clock seconds, temperatures, every throttle reason
        seen during the window, clocks and power limit."""
        h = self.handle
        energy = _try(pynvml.nvmlDeviceGetTotalEnergyConsumption, h)
        seconds = time.perf_counter() - self.started
        self._stop.set()
        self._thread.join()
        self._sample()  # the last instant of the window, too
        reasons = self._throttle_reasons()
        limit = _try(pynvml.nvmlDeviceGetEnforcedPowerManagementLimit, h)
        joules = (energy - self.energy_mj) / 1000.0 if energy is not None and self.energy_mj is not None else None
        return {
            "joules": joules,
            "seconds": seconds,
            "device": self.how,
            "start_c": self.start_c,
            "end_c": _try(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
            "max_c": self._max_c,
            "throttle_reasons": reasons,
            "throttle_polls": self._polls,
            "power_limit_w": limit / 1000.0 if limit else None,
            "graphics_mhz": _try(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM),
            "memory_mhz": _try(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM),
        }
