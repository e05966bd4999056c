"""The topology readers on recorded files: `nvidia-smi topo -m` output written in its documented format (tab-separated,
header underlined on a terminal, legend after the table), and sysfs trees laid out as Linux lays them out."""

from __future__ import annotations

from pathlib import Path

import pytest

import protocol
from devtools.documents import collective_document
from runners import topology

# A 4-GPU node with two NICs, as `nvidia-smi topo -m` prints it (the header is underlined with ANSI escapes when
# printed to a terminal; GPU NUMA ID since driver 520).
TOPO = (
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV18\tNV18\tNV18\tPXB\tSYS\t0-47,96-143\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tNV18\tNV18\tPXB\tSYS\t0-47,96-143\t0\t\tN/A\n"
    "GPU2\tNV18\tNV18\t X \tNV18\tSYS\tPXB\t48-95,144-191\t1\t\tN/A\n"
    "GPU3\tNV18\tNV18\tNV18\t X \tSYS\tPXB\t48-95,144-191\t1\t\tN/A\n"
    "NIC0\tPXB\tPXB\tSYS\tSYS\t X \tSYS\t\t\t\t\n"
    "NIC1\tSYS\tSYS\tPXB\tPXB\tSYS\t X \t\t\t\t\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_0\n"
    "  NIC1: mlx5_1\n"
)


def test_the_device_matrix_reads_labels_cells_and_affinities() -> None:
    matrix = topology.parse_topo_matrix(TOPO)
    assert matrix["labels"] == ["GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1"]
    assert matrix["cells"][0] == ["X", "NV18", "NV18", "NV18", "PXB", "SYS"]
    assert matrix["cells"][5] == ["SYS", "SYS", "PXB", "PXB", "SYS", "X"]
    assert matrix["cpu_affinity"][2] == "48-95,144-191" and matrix["numa_affinity"][:4] == ["0", "0", "1", "1"]
    assert matrix["cpu_affinity"][4] is None  # a NIC row prints none


def test_a_matrix_cell_it_does_not_know_is_refused_naming_line_and_column() -> None:
    with pytest.raises(topology.TopologyError, match=r"line 3, column GPU2: 'NVL' is not a link"):
        topology.parse_topo_matrix(TOPO.replace("GPU1\tNV18\t X \tNV18", "GPU1\tNV18\t X \tNVL"))
    with pytest.raises(topology.TopologyError, match="not nvidia-smi topo -m output"):
        topology.parse_topo_matrix("No devices were found\n")


def test_without_nvidia_smi_the_matrix_is_absent_with_why() -> None:
    def failing(command: list[str]) -> str:
        raise OSError("nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")

    matrix, why = topology.read_topo_matrix(failing)
    assert matrix is None and "couldn't communicate" in why
    assert topology.read_topo_matrix(lambda command: TOPO)[0] is not None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


@pytest.fixture
def sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A host with one GPU at 0000:07:00.0 (Gen4 x16 of Gen5 x16), a 100 Gb/s Ethernet NIC, an NDR InfiniBand HCA,
    a loopback and a bridge (not NICs), and two NUMA nodes."""
    pci = tmp_path / "bus/pci/devices"
    gpu, nic, hca = pci / "0000:07:00.0", pci / "0000:0c:00.0", pci / "0000:1a:00.0"
    for name, text in {
        "current_link_speed": "16.0 GT/s PCIe",
        "max_link_speed": "32.0 GT/s PCIe",
        "current_link_width": "16",
        "max_link_width": "16",
        "numa_node": "0",
    }.items():
        _write(gpu / name, text)
    _write(nic / "numa_node", "1")
    _write(hca / "numa_node", "0")
    net = tmp_path / "class/net"
    for name, files in {
        "eth0": {"speed": "100000", "type": "1", "operstate": "up"},
        "lo": {"speed": "-1", "type": "772", "operstate": "unknown"},
        "br0": {"speed": "-1", "type": "1", "operstate": "up"},
    }.items():
        for file, text in files.items():
            _write(net / name / file, text)
    (net / "eth0" / "device").symlink_to(nic)
    port = tmp_path / "class/infiniband/mlx5_0/ports/1"
    _write(port / "rate", "400 Gb/sec (4X NDR)")
    _write(port / "link_layer", "InfiniBand")
    _write(port / "state", "4: ACTIVE")
    (port.parents[1] / "device").symlink_to(hca)
    _write(tmp_path / "devices/system/node/node0/cpulist", "0-3,8-11")
    _write(tmp_path / "devices/system/node/node1/cpulist", "4-7")
    monkeypatch.setattr(topology, "PCI_ROOT", pci)
    monkeypatch.setattr(topology, "NET_ROOT", net)
    monkeypatch.setattr(topology, "IB_ROOT", tmp_path / "class/infiniband")
    monkeypatch.setattr(topology, "NODE_ROOT", tmp_path / "devices/system/node")
    return tmp_path


def test_pcie_generation_and_width_come_from_sysfs(sysfs: Path) -> None:
    link = topology.pcie_link("00000000:07:00.0")  # NVML's spelling of the bus id
    assert link is not None
    assert (link["current_gen"], link["max_gen"], link["current_width"], link["numa_node"]) == (4, 5, 16, 0)
    assert topology.pcie_link("0000:99:00") is None
    assert topology.pcie_generation("8 GT/s") == 3 and topology.pcie_generation("unknown") is None


def test_nics_and_their_link_rates_come_from_sysfs(sysfs: Path) -> None:
    assert topology.ethernet_nics() == [
        {
            "name": "eth0",
            "kind": "ethernet",
            "rate_gbps": 100.0,
            "state": "up",
            "numa_node": 1,
            "bus_id": "0000:0c:00.0",
        }
    ]
    assert topology.rdma_nics() == [
        {
            "name": "mlx5_0/1",
            "kind": "infiniband",
            "rate_gbps": 400.0,
            "state": "ACTIVE",
            "numa_node": 0,
            "bus_id": "0000:1a:00.0",
        }
    ]


def test_numa_nodes_and_cpu_lists(sysfs: Path) -> None:
    assert topology.numa_nodes() == [{"node": 0, "cpus": [0, 1, 2, 3, 8, 9, 10, 11]}, {"node": 1, "cpus": [4, 5, 6, 7]}]
    assert topology.parse_cpulist("0-2,5") == [0, 1, 2, 5]
    with pytest.raises(topology.TopologyError):
        topology.parse_cpulist("0-x")


def test_a_host_entry_holds_every_reader_and_passes_the_protocol(sysfs: Path) -> None:
    entry = topology.host_entry("node1", ["0000:07:00"], run=lambda command: TOPO)
    assert entry["absent"] == {} and entry["pcie"][0]["bus_id"] == "0000:07:00.0"
    assert [n["name"] for n in entry["nics"]] == ["mlx5_0/1", "eth0"]
    cpu = topology.host_entry("node1", [], run=lambda command: "garbage\n")
    assert set(cpu["absent"]) == {"device_matrix", "pcie"} and "device_matrix" not in cpu
    doc = collective_document()
    doc["system"]["topology"] = {"nodes": 2, "processes_per_node": 1, "hosts": [entry, cpu]}
    protocol.check(doc)
