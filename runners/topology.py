"""What connects the devices and hosts of a run: the readers behind protocol 1.3's `/system/topology`.

Plain Python, each reader from the files and tools Linux and NVIDIA's driver provide, with its root or command
passed in so a test can give it recorded files:

- the device-to-device matrix: `nvidia-smi topo -m` (NVLink `NV<k>`, PCIe `PIX`/`PXB`/`PHB`, `NODE`, `SYS`), absent
  with its reason where there is no NVIDIA driver;
- PCIe generation and width of a device: /sys/bus/pci/devices/<bus id>/{current,max}_link_{speed,width};
- NICs and their link rates: /sys/class/net/*/speed (Mb/s) for Ethernet, /sys/class/infiniband/*/ports/*/rate for
  InfiniBand, RoCE and EFA;
- NUMA nodes and their CPUs: /sys/devices/system/node/node*/cpulist; each rank's CPU affinity: os.sched_getaffinity.

Nothing is guessed: a field that cannot be read is left out of the host's entry and named in its `absent` with why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

PCI_ROOT = Path("/sys/bus/pci/devices")
NET_ROOT = Path("/sys/class/net")
IB_ROOT = Path("/sys/class/infiniband")
NODE_ROOT = Path("/sys/devices/system/node")
# The cells `nvidia-smi topo -m` prints (its legend): X self, SOC before 2017 for SYS, NA where it cannot say.
CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|NA)$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # nvidia-smi underlines its header on a terminal
LABEL = re.compile(r"^(GPU|NIC|mlx|CPU)\S*$")
PCIE_GENERATIONS = {"2.5": 1, "5.0": 2, "8.0": 3, "16.0": 4, "32.0": 5, "64.0": 6}  # GT/s per lane


class TopologyError(ValueError):
    """A tool's output or a file does not read as its documented format."""


# --- nvidia-smi topo -m ------------------------------------------------------------------------------------------


def parse_topo_matrix(text: str) -> dict[str, Any]:
    """The matrix of `nvidia-smi topo -m`: labels in order, a row of cells per label, and each row's CPU and NUMA
    affinity where it prints them. Its columns are tab-separated; the legend after the table is not read."""
    lines = [ANSI.sub("", line).rstrip() for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if line.startswith("\t") and line.strip()), None)
    if header_at is None:
        raise TopologyError("no header line (a tab, then GPU0 ...): not nvidia-smi topo -m output")
    heads = [h.strip() for h in lines[header_at].split("\t")[1:]]
    labels = [h for h in heads if LABEL.match(h)]
    if not labels or heads[: len(labels)] != labels:
        raise TopologyError(f"the header names no device first: {heads!r}")
    extras = heads[len(labels) :]
    matrix: dict[str, Any] = {"labels": labels, "cells": [], "cpu_affinity": [], "numa_affinity": []}
    for number, line in enumerate(lines[header_at + 1 : header_at + 1 + len(labels)], start=header_at + 2):
        _row(matrix, extras, line, number)
    if len(matrix["cells"]) != len(labels):
        raise TopologyError(f"{len(labels)} labels but {len(matrix['cells'])} rows")
    return matrix


def _row(matrix: dict[str, Any], extras: list[str], line: str, number: int) -> None:
    labels = matrix["labels"]
    fields = [f.strip() for f in line.split("\t")]
    if fields[0] != labels[len(matrix["cells"])]:
        raise TopologyError(f"line {number}: row {fields[0]!r} where {labels[len(matrix['cells'])]!r} belongs")
    cells = fields[1 : 1 + len(labels)]
    for column, cell in zip(labels, cells, strict=False):
        if not CELL.match(cell):
            raise TopologyError(f"line {number}, column {column}: {cell!r} is not a link nvidia-smi names")
    if len(cells) != len(labels):
        raise TopologyError(f"line {number}: {len(cells)} cells for {len(labels)} labels")
    matrix["cells"].append(cells)
    rest = dict(zip(extras, fields[1 + len(labels) :], strict=False))
    matrix["cpu_affinity"].append(rest.get("CPU Affinity") or None)
    matrix["numa_affinity"].append(rest.get("NUMA Affinity") or None)


def read_topo_matrix(run: Callable[[list[str]], str] | None = None) -> tuple[dict[str, Any] | None, str]:
    """The matrix, or None and why it is absent (no nvidia-smi here, or it failed)."""
    if run is None:
        if shutil.which("nvidia-smi") is None:
            return None, "nvidia-smi not found: no NVIDIA driver on this host"
        run = _nvidia_smi
    try:
        return parse_topo_matrix(run(["nvidia-smi", "topo", "-m"])), ""
    except (OSError, subprocess.SubprocessError, TopologyError) as exc:
        return None, f"nvidia-smi topo -m: {exc}"[:500]


def _nvidia_smi(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=True).stdout


# --- PCIe --------------------------------------------------------------------------------------------------------


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _integer(text: str | None) -> int | None:
    return int(text) if text is not None and re.fullmatch(r"-?\d+", text) else None


def pcie_generation(speed: str | None) -> int | None:
    """'16.0 GT/s PCIe' (or '16 GT/s', kernels before 5.x) -> 4."""
    match = re.match(r"^(\d+(?:\.\d+)?) GT/s", speed or "")
    return PCIE_GENERATIONS.get(f"{float(match.group(1)):.1f}") if match else None


def pcie_link(bus_id: str, root: Path | None = None) -> dict[str, Any] | None:
    """Current and maximum link speed and width of one PCI device, or None where sysfs has no such device."""
    root = root or PCI_ROOT
    device = root / normalise_bus_id(bus_id)
    if not device.is_dir():
        return None
    current, maximum = _text(device / "current_link_speed"), _text(device / "max_link_speed")
    width = _integer(_text(device / "current_link_width"))
    return {
        "bus_id": normalise_bus_id(bus_id),
        "current_gen": pcie_generation(current),
        "max_gen": pcie_generation(maximum),
        "current_width": width if width else None,  # 0: the link is down or the device has none
        "max_width": _integer(_text(device / "max_link_width")) or None,
        "current_speed": current,
        "max_speed": maximum,
        "numa_node": _integer(_text(device / "numa_node")),
    }


def normalise_bus_id(bus_id: str) -> str:
    """'00000000:07:00.0' (NVML) or '0000:07:00' (torch) -> '0000:07:00.0', as sysfs names it."""
    parts = bus_id.lower().split(":")
    if len(parts) == 3:
        domain, bus, rest = parts
        return f"{int(domain, 16):04x}:{bus}:{rest if '.' in rest else rest + '.0'}"
    return bus_id.lower()


# --- NICs --------------------------------------------------------------------------------------------------------


def _bus_of(device_link: Path) -> str | None:
    try:
        name = device_link.resolve(strict=True).name
    except OSError:
        return None
    return name if re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", name) else None


def ethernet_nics(root: Path | None = None) -> list[dict[str, Any]]:
    """Interfaces backed by a device (not lo, bridges or veths): link rate from `speed` (Mb/s; -1 when unknown)."""
    root = root or NET_ROOT
    out = []
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        if not (path / "device").exists():
            continue  # virtual: no NIC behind it
        speed = _integer(_text(path / "speed"))
        kind = "infiniband" if _text(path / "type") == "32" else "ethernet"  # ARPHRD_INFINIBAND: IPoIB
        out.append(
            {
                "name": path.name,
                "kind": kind,
                "rate_gbps": speed / 1000 if speed is not None and speed > 0 else None,
                "state": _text(path / "operstate"),
                "numa_node": _integer(_text(path / "device" / "numa_node")),
                "bus_id": _bus_of(path / "device"),
            }
        )
    return out


def rdma_nics(root: Path | None = None) -> list[dict[str, Any]]:
    """Each port of each RDMA device: 'mlx5_0/1' with its rate ('200 Gb/sec (4X HDR)'), InfiniBand or RoCE by its
    link layer, EFA by the device's name."""
    root = root or IB_ROOT
    out = []
    for device in sorted(root.iterdir()) if root.is_dir() else []:
        for port in sorted((device / "ports").iterdir()) if (device / "ports").is_dir() else []:
            rate = re.match(r"^(\d+(?:\.\d+)?) Gb/sec", _text(port / "rate") or "")
            layer = _text(port / "link_layer") or ""
            kind = "efa" if device.name.startswith("efa") else "infiniband" if layer == "InfiniBand" else "roce"
            state = _text(port / "state") or ""
            out.append(
                {
                    "name": f"{device.name}/{port.name}",
                    "kind": kind if layer in ("InfiniBand", "Ethernet") or kind == "efa" else "other",
                    "rate_gbps": float(rate.group(1)) if rate else None,
                    "state": state.partition(": ")[2] or state or None,
                    "numa_node": _integer(_text(device / "device" / "numa_node")),
                    "bus_id": _bus_of(device / "device"),
                }
            )
    return out


# --- NUMA and affinity -------------------------------------------------------------------------------------------


def parse_cpulist(text: str) -> list[int]:
    """The kernel's cpulist format, '0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise TopologyError(f"{text!r} is not a CPU list")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def numa_nodes(root: Path | None = None) -> list[dict[str, Any]]:
    root = root or NODE_ROOT
    found = []
    for path in root.glob("node[0-9]*") if root.is_dir() else []:
        cpulist = _text(path / "cpulist")
        if cpulist is not None:
            found.append({"node": int(path.name[4:]), "cpus": parse_cpulist(cpulist)})
    return sorted(found, key=lambda n: n["node"])


def cpu_affinity() -> list[int]:
    return sorted(os.sched_getaffinity(0))


# --- one host ----------------------------------------------------------------------------------------------------


def host_entry(host: str, bus_ids: list[str], run: Callable[[list[str]], str] | None = None) -> dict[str, Any]:
    """Everything readable about this host's topology, and why each part that is not is absent."""
    absent: dict[str, str] = {}
    matrix, why = read_topo_matrix(run)
    if matrix is None:
        absent["device_matrix"] = why
    nics = [*rdma_nics(), *ethernet_nics()]
    links = [link for link in (pcie_link(b) for b in bus_ids) if link is not None]
    if not bus_ids:
        absent["pcie"] = "no accelerator on a PCI bus in this run (CPU ranks)"
    elif not links:
        absent["pcie"] = f"none of {', '.join(bus_ids)} is in /sys/bus/pci/devices"
    if not nics:
        absent["nics"] = f"no device-backed interface in {NET_ROOT} or {IB_ROOT}"
    nodes = numa_nodes()
    if not nodes:
        absent["numa_nodes"] = f"no {NODE_ROOT}/node*/cpulist"
    entry = {"host": host, "device_matrix": matrix, "pcie": links, "nics": nics, "numa_nodes": nodes}
    return {**{k: v for k, v in entry.items() if v}, "absent": absent}
