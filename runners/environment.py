"""Environment capture: the `system` and `software` sections of a document, plus a fuller inventory.

What cannot be read is null, and the reason goes into the section's `notes` under the field's name; no
value is guessed. Reading is cheap (no framework is imported here: versions come from package metadata),
so the same call serves every run and a lab machine's enrolment as an agent.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from . import __version__, nvml

PACKAGES = ("numpy", "scipy", "psutil", "rich", "threadpoolctl", "torch", "nvidia-ml-py", "httpx")
# Relevant to matmul speed; the full flag list goes to the inventory.
KEY_CPU_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "avx_vnni",
    "amx_bf16",
    "amx_int8",
    "amx_tile",
    "neon",
    "asimd",
    "sve",
    "hypervisor",
)
ENV_SWITCHES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "KMP_AFFINITY",
    "OMP_PROC_BIND",
    "GOMP_CPU_AFFINITY",
    "CUDA_VISIBLE_DEVICES",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "ATEN_CPU_CAPABILITY",
    "PYTORCH_CUDA_ALLOC_CONF",
)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpuinfo() -> dict[str, Any]:
    text = _read("/proc/cpuinfo") or ""
    model = flags = None
    sockets: set[str] = set()
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key in ("model name", "Model", "Hardware") and model is None:
            model = value
        elif key in ("flags", "Features") and flags is None:
            flags = value.split()
        elif key == "physical id":
            sockets.add(value)
    return {"model": model or platform.processor() or None, "flags": flags or [], "sockets": len(sockets) or None}


def _detect_virt(flag: str) -> str | None:
    tool = shutil.which("systemd-detect-virt")
    if tool is None:
        return None
    done = subprocess.run([tool, flag], capture_output=True, text=True, timeout=5, check=False)
    return done.stdout.strip() or None


def _virtualization(flags: list[str], notes: dict[str, str]) -> str | None:
    found = _detect_virt("--vm")
    if found == "none":
        return "bare-metal"
    if found:
        return found
    if "hypervisor" in flags:
        return "vm"  # the CPU says it runs under a hypervisor; which one is unknown without the tool
    notes["virtualization"] = "systemd-detect-virt unavailable and no hypervisor CPU flag: unknown"
    return None


def _container() -> str | None:
    found = _detect_virt("--container")
    if found and found != "none":
        return found
    if Path("/.dockerenv").exists():
        return "docker"
    return "podman" if Path("/run/.containerenv").exists() else None


def _frequency_mhz(notes: dict[str, str]) -> float | None:
    freq = psutil.cpu_freq()
    frequency = (freq.max or freq.current) if freq else None
    if not frequency:
        notes["frequency_mhz"] = "cpufreq not exposed"
    return frequency


def host_section(notes: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The `system.host` section and the full CPU flag list."""
    cpu = _cpuinfo()
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) or None
    if nodes is None:
        notes["numa_nodes"] = "/sys/devices/system/node not readable"
    frequency = _frequency_mhz(notes)
    host = {
        "cpu_model": cpu["model"],
        "sockets": cpu["sockets"],
        "cores": psutil.cpu_count(logical=False),
        "threads": psutil.cpu_count(logical=True),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 2),
        "numa_nodes": nodes,
        "frequency_mhz": round(frequency, 1) if frequency else None,
    }
    flags = [f for f in KEY_CPU_FLAGS if f in cpu["flags"]]
    notes["cpu_flags"] = " ".join(flags) if flags else "no CPU flags readable"
    return host, cpu["flags"]


def _os() -> dict[str, Any]:
    try:
        release = platform.freedesktop_os_release()
        name, version = release.get("NAME"), release.get("VERSION_ID")
    except OSError:
        name, version = platform.system(), platform.version()
    return {"name": name, "version": version, "kernel": platform.release()}


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that can change a result (None: not installed)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    out["benchreg"] = __version__
    return out


def host_settings() -> dict[str, str | int | float | bool | None]:
    """Process and OS switches that change results: affinity, governor, turbo, environment variables."""
    out: dict[str, str | int | float | bool | None] = {
        "process.cpu_affinity_count": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu.scaling_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "cpu.intel_pstate.no_turbo": _read("/sys/devices/system/cpu/intel_pstate/no_turbo"),
        "cpu.boost": _read("/sys/devices/system/cpu/cpufreq/boost"),
        "kernel.numa_balancing": _read("/proc/sys/kernel/numa_balancing"),
        "mm.transparent_hugepage": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
    }
    out.update({f"env.{name}": os.environ.get(name) for name in ENV_SWITCHES})
    return out


def capture(device: str = "cpu", device_uuid: str | None = None) -> dict[str, Any]:
    """The environment: {"system": ..., "software": ..., "inventory": ...}.

    `system` and `software` are protocol sections (without `software.frameworks`, which the backend that
    runs fills in, and without backend settings); `inventory` holds what the protocol has no field for.
    """
    system_notes: dict[str, str] = {}
    host, all_flags = host_section(system_notes)
    gpus = _gpus(device, device_uuid)
    system = _system(host, all_flags, gpus, system_notes)
    software = _software(gpus)
    inventory = {
        "cpu_flags": all_flags,
        "python_executable": sys.executable,
        "gpus": gpus.details,
        "boot_time": psutil.boot_time(),
    }
    return {"system": system, "software": software, "inventory": inventory}


def _system(host: dict[str, Any], all_flags: list[str], gpus: nvml.Inventory, notes: dict[str, str]) -> dict[str, Any]:
    if gpus.reason:
        notes["accelerators"] = gpus.reason
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    system = {
        "name": socket.gethostname() or "unknown",
        "nodes": 1,
        "accelerators": gpus.accelerators,
        "host": host,
        "cooling": None,
        "virtualization": _virtualization(all_flags, notes),
        "notes": notes,
    }
    notes.setdefault("cooling", "not readable from software")
    if load is not None:
        notes["load_average_at_start"] = " ".join(f"{x:.2f}" for x in load)
    return system


def _gpus(device: str, device_uuid: str | None) -> nvml.Inventory:
    if device == "cuda":
        return nvml.inventory(device_uuid, os.environ.get("CUDA_VISIBLE_DEVICES"))
    return nvml.Inventory([], None, {}, "not a CUDA run")


def _software(gpus: nvml.Inventory) -> dict[str, Any]:
    runtimes: dict[str, str | None] = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
    }
    runtimes.update(gpus.runtimes)
    return {
        "os": _os(),
        "driver": gpus.driver,
        "runtimes": runtimes,
        "frameworks": {},
        "packages": package_versions(),
        "container": _container(),
        "settings": host_settings(),
        "notes": {},
    }
