"""Two nodes of one distributed training run, on this machine: two launchers (as two agents would start them) meet at
one c10d rendezvous endpoint hosted by node 0 and form one world of 2 × 1 ranks; node 0 writes the one run document
with every rank's figures, node 1 writes nothing; a rank that dies on one node fails both and nothing is written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import protocol
from tests.runners.test_collectives_nodes import free_port, start

pytestmark = pytest.mark.slow


def node(rank: int, port: int, out: Path) -> subprocess.Popen[str]:
    argv = ["run", "distributed-training", "--nnodes", "2", "--node-rank", str(rank)]
    argv += ["--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "two-nodes", "--nproc-per-node", "1"]
    argv += ["--workload", "mlp-tiny", "--batch", "4", "--threads", "1", "--steps", "10", "--warmup-steps", "2"]
    argv += ["--slow-rank", "1", "--slow-rank-ms", "20", "--out", str(out), "--no-progress"]
    return start(f"from registry.cli import main; raise SystemExit(main({argv!r}))")


def test_two_nodes_meet_at_one_endpoint_and_node_0_writes_one_run_with_every_rank(tmp_path: Path) -> None:
    port = free_port()
    follower, leader = node(1, port, tmp_path / "node1"), node(0, port, tmp_path / "node0")
    said = {rank: p.communicate(timeout=600)[0] for rank, p in ((0, leader), (1, follower))}
    assert (leader.returncode, follower.returncode) == (0, 0), said
    assert "node 1 of 2: its ranks ran; node 0 writes the run" in said[1] and not (tmp_path / "node1").exists()
    (path,) = (tmp_path / "node0").glob("*.json")
    doc = protocol.check(path.read_bytes()).document
    layout, figures = doc["scenario"]["distributed"], doc["metrics"]["distributed"]
    assert (layout["world_size"], layout["nodes"], layout["processes_per_node"]) == (2, 2, 1)
    assert layout["global_batch"] == 8 and doc["system"]["nodes"] == 2
    ranks = figures["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1]
    assert sorted(r["node"].rsplit(" ", 1)[-1] for r in ranks) == ["0)", "1)"]  # one rank from each node
    assert figures["slowest_rank"] == 1  # the injected slow rank, whichever node c10d gave it
    assert "distributed.nodes" in doc["software"]["notes"]


def test_a_rank_that_dies_on_one_node_fails_both_and_nothing_is_written(tmp_path: Path) -> None:
    port = free_port()
    code = (
        "from pathlib import Path\n"
        "from runners.distributed import cli, options\n"
        "from runners.rendezvous import Rendezvous\n"
        "from runners.spec import RunSpec\n"
        "spec = RunSpec(phase='training', workload='mlp-tiny', batch_size=4, threads=1)\n"
        # rank 1 sleeps a negative time: it raises in its first micro-batch, before any all-reduce, as a killed
        # rank stops (the options refuse such a delay, so it is set past them)
        "injected = options.Injected(slow_rank=1, slow_s=0.001)\n"
        "object.__setattr__(injected, 'slow_s', -1.0)\n"
        "run = options.Options(spec, 'ddp', 1, nnodes=2, warmup_steps=1, steps=10, injected=injected)\n"
        f"meet = Rendezvous(2, {{rank}}, '127.0.0.1:{port}', 'dying')\n"
        "doc = cli.run(run, meet)\n"
        f"if doc is not None: cli.record.write(doc, Path({str(tmp_path)!r}))\n"
    )
    follower, leader = start(code.format(rank=1)), start(code.format(rank=0))
    said = [p.communicate(timeout=600)[0] for p in (leader, follower)]
    assert leader.returncode != 0 and follower.returncode != 0, said
    assert all("ChildFailedError" in text for text in said), said
    assert not list(tmp_path.glob("*.json"))
