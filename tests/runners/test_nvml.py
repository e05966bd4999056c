"""GPU telemetry describes the GPU that ran the work, over the whole window.

The device selection is plain logic, tested here without a GPU. The sampler is exercised against a
stand-in for the NVML library (the one edge that cannot run on CPU CI): a device whose throttle reasons
and energy counter change while the window is open. On a GPU machine the same code runs against the
real library (see docs/measurement.md for the recorded figures).
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from runners import nvml

H100_A = "GPU-1b2c3d4e-0000-1111-2222-333344445555"
H100_B = "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"
DEVICES = [(0, H100_A), (1, H100_B)]


def test_it_finds_the_device_by_the_uuid_the_framework_reports_whatever_its_index() -> None:
    chosen = nvml.select_device(DEVICES, uuid="9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff", visible="1", ordinal=0)
    assert chosen.index == 1
    assert "UUID" in chosen.how


def test_it_maps_cuda_visible_devices_to_nvml_indices_instead_of_assuming_zero() -> None:
    assert nvml.select_device(DEVICES, uuid=None, visible="1", ordinal=0).index == 1
    assert nvml.select_device(DEVICES, uuid=None, visible="1,0", ordinal=1).index == 0


def test_it_accepts_uuid_prefixes_in_cuda_visible_devices_as_cuda_does() -> None:
    assert nvml.select_device(DEVICES, uuid=None, visible="GPU-9f8e", ordinal=0).index == 1


def test_it_says_so_when_an_index_is_only_assumed_to_be_in_pci_order() -> None:
    chosen = nvml.select_device(DEVICES, uuid=None, visible=None, ordinal=0)
    assert chosen.index == 0
    assert "PCI_BUS_ID" in chosen.how


@pytest.mark.parametrize(
    ("uuid", "visible", "why"),
    [
        ("GPU-00000000-dead-beef-0000-000000000000", None, "no NVML device has the UUID"),
        (None, "MIG-5c3f0a4e-1111-2222-3333-444455556666", "MIG instance"),
        (None, "7", "NVML has no device 7"),
        (None, "GPU-", "matches 2 NVML devices"),
        (None, "0", "not among CUDA_VISIBLE_DEVICES"),
    ],
)
def test_it_records_no_device_rather_than_the_wrong_one(uuid: str | None, visible: str, why: str) -> None:
    ordinal = 1 if visible == "0" else 0
    chosen = nvml.select_device(DEVICES, uuid=uuid, visible=visible, ordinal=ordinal)
    assert chosen.index is None
    assert why in chosen.how


class FakeNvml:
    """Two boards; board 1 throttles (SW power cap) for a moment in the middle of the window only."""

    NVMLError = RuntimeError
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1

    def __init__(self) -> None:
        self.throttling = threading.Event()
        self.energy_mj = {0: 5_000_000, 1: 9_000_000}

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> SimpleNamespace:
        return SimpleNamespace(index=i)

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return DEVICES[h.index][1]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        return 0x1 | (0x4 if h.index == 1 and self.throttling.is_set() else 0)

    def nvmlDeviceGetTemperature(self, h: Any, _: int) -> int:
        return 60 + h.index

    def nvmlDeviceGetTotalEnergyConsumption(self, h: Any) -> int:
        return self.energy_mj[h.index]

    def nvmlDeviceGetEnforcedPowerManagementLimit(self, h: Any) -> int:
        return 700_000

    def nvmlDeviceGetClockInfo(self, h: Any, _: int) -> int:
        return 1980


def test_the_sampler_reads_the_used_board_and_keeps_a_throttle_seen_mid_window(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml()
    monkeypatch.setattr(nvml, "pynvml", fake)
    sampler, reason = nvml.GpuSampler.start(H100_B, None, interval=0.005)
    assert reason is None and sampler is not None
    fake.throttling.set()
    time.sleep(0.05)
    fake.throttling.clear()  # cleared before the window ends: a read at stop alone would miss it
    fake.energy_mj[1] += 350_000  # board 1 used 350 J; board 0 is someone else's
    fake.energy_mj[0] += 999_000
    time.sleep(0.05)
    readings = sampler.stop()
    assert readings["throttle_reasons"] == ["SW_POWER_CAP"]
    assert readings["joules"] == pytest.approx(350.0)
    assert readings["seconds"] >= 0.1
    assert readings["end_c"] == 61
    assert "UUID" in readings["device"]


def test_a_sampler_that_cannot_identify_the_device_measures_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvml, "pynvml", FakeNvml())
    sampler, reason = nvml.GpuSampler.start("GPU-unknown", None)
    assert sampler is None
    assert reason is not None and "UUID" in reason


def test_the_inventory_lists_the_used_gpu_as_the_accelerator_not_the_whole_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeNvml()
    fake.nvmlDeviceGetMemoryInfo = lambda h: SimpleNamespace(total=80 * 2**30)  # type: ignore[attr-defined]
    fake.nvmlDeviceGetName = lambda h: "NVIDIA H100 80GB HBM3"  # type: ignore[attr-defined]
    fake.nvmlSystemGetDriverVersion = lambda: "570.86"  # type: ignore[attr-defined]
    for name in (
        "nvmlDeviceGetMaxClockInfo",
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetCudaComputeCapability",
        "nvmlDeviceGetPersistenceMode",
        "nvmlDeviceGetApplicationsClock",
        "nvmlSystemGetCudaDriverVersion",
    ):
        setattr(fake, name, lambda *a: None)
    monkeypatch.setattr(nvml, "pynvml", fake)
    inv = nvml.inventory(H100_B, None)
    assert [a["count"] for a in inv.accelerators] == [1]
    assert inv.details["used_index"] == 1
    assert inv.details["machine_accelerators"][0]["count"] == 2
