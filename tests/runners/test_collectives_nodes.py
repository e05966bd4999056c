"""Two nodes of one collective run, on this machine: two launchers (as two agents would start them) meet at one c10d
rendezvous endpoint hosted by node 0; node 0 writes the one run document with every rank's figures, node 1 writes
nothing; a rank that dies on node 1 fails both nodes and nothing is written."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

import protocol
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(code: str) -> subprocess.Popen[str]:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def node(rank: int, port: int, out: Path) -> subprocess.Popen[str]:
    argv = ["run", "collectives", "--nnodes", "2", "--node-rank", str(rank), "--rdzv-endpoint", f"127.0.0.1:{port}"]
    argv += ["--rdzv-id", "two-agents", "--nproc-per-node", "1", "--collectives", "all_reduce,all_gather"]
    argv += ["--min-bytes", "64", "--max-bytes", "256", "--iters", "10", "--device", "cpu", "--out", str(out)]
    return start(f"from registry.cli import main; raise SystemExit(main({argv!r}))")


def test_two_nodes_meet_at_one_endpoint_and_node_0_writes_one_run_with_every_rank(tmp_path: Path) -> None:
    port = free_port()
    follower, leader = node(1, port, tmp_path / "node1"), node(0, port, tmp_path / "node0")
    said = {rank: p.communicate(timeout=300)[0] for rank, p in ((0, leader), (1, follower))}
    assert (leader.returncode, follower.returncode) == (0, 0), said
    assert "node 0 writes the run" in said[1] and not (tmp_path / "node1").exists()
    runs = sorted((tmp_path / "node0").glob("*.run.json"))
    assert [p.name for p in runs] == ["all_gather.run.json", "all_reduce.run.json"]
    for path in runs:
        doc = protocol.check(path.read_text()).document
        block = doc["metrics"]["collectives"]
        assert block["ranks"] == 2 and all(len(s["rank_times_us"]) == 2 for s in block["sizes"])
        topology = doc["system"]["topology"]
        assert topology["nodes"] == 2 and [h["ranks"] for h in topology["hosts"]] == [[0], [1]]


def test_a_rank_that_dies_on_one_node_fails_both_and_nothing_is_written(tmp_path: Path) -> None:
    port = free_port()
    options = "Options(collectives=('all_reduce',), min_bytes=8, max_bytes=8, warmup=1, iters=10, device='cpu'"
    code = (
        "from runners.collectives import Options, run\nfrom runners.rendezvous import Rendezvous\n"
        f"rdzv = Rendezvous(2, {{rank}}, '127.0.0.1:{port}', 'dying')\n"
        # node 1's only rank sleeps a negative time: it raises before its first all-reduce, as a killed rank stops
        f"options = {options}, delay_rank={{delay}}, delay_s=-1.0)\n"
        f"run(options, 1, __import__('pathlib').Path({str(tmp_path / 'node')!r} + '{{rank}}'), rendezvous=rdzv)\n"
    )
    follower = start(code.format(rank=1, delay=1))
    leader = start(code.format(rank=0, delay=1))
    said = [p.communicate(timeout=300)[0] for p in (leader, follower)]
    assert leader.returncode != 0 and follower.returncode != 0, said
    assert "ChildFailedError" in said[1]
    assert not list(tmp_path.glob("node*/*.run.json"))
