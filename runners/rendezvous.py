"""Where the nodes of a multi-node run meet, and the launch configuration of one node (torch.distributed's launcher).

Shared by `benchreg run collectives` and `benchreg run distributed-training`: each node runs the same command with
`--nnodes N --node-rank R --rdzv-endpoint host:port --rdzv-id ID`; node 0's launcher hosts the c10d store at the
endpoint, the others connect to it, and the launcher starts `nproc_per_node` processes on each node once all N
have arrived (or none: the rendezvous times out). Node 0 writes the run with every rank's figures.

torch's c10d rendezvous orders the nodes by their descriptors (host name, launcher pid), not by `--node-rank`, so
global rank 0 may run on any node: the results are gathered to every rank and node 0 (the node rank given here)
is the one that returns them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from .arguments import count

MAX_NODES = 1024
# What every rank imports, imported once by multiprocessing's fork server, from which the launcher forks each rank.
# Started with "spawn", each rank imported torch and torch._dynamo (which torch.optim loads) itself: about 4 s of CPU
# a rank here, paid again at every launch of a process that launches several times (an agent, the tests).
RANK_MODULES = ["torch", "torch._dynamo", "torch.distributed", "runners.distributed.worker", "runners.collectives"]


@dataclass(frozen=True)
class Rendezvous:
    """Where the nodes of a multi-node run meet (torch.distributed's c10d rendezvous): `endpoint` host:port, hosted
    by node 0's launcher; `run_id` the same on every node; this node's `node_rank` (0 writes the run)."""

    nnodes: int
    node_rank: int
    endpoint: str
    run_id: str

    def __post_init__(self) -> None:
        if not 1 <= self.nnodes <= MAX_NODES:
            raise ValueError(f"--nnodes must be between 1 and {MAX_NODES}, not {self.nnodes}")
        if not 0 <= self.node_rank < self.nnodes:
            raise ValueError(f"--node-rank must be 0 to {self.nnodes - 1}, not {self.node_rank}")
        host, _, port = self.endpoint.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--rdzv-endpoint is host:port, not {self.endpoint!r}")
        if not self.run_id or len(self.run_id) > 200:
            raise ValueError("--rdzv-id must be 1 to 200 characters")

    @property
    def leads(self) -> bool:
        """Whether this node writes the run (node 0 of the group)."""
        return self.node_rank == 0


def alone(prefix: str) -> Rendezvous:
    """A one-node run's rendezvous: a free port on this host, a fresh run id (several runs may share the machine)."""
    return Rendezvous(1, 0, "127.0.0.1:0", f"{prefix}-{uuid.uuid4().hex[:8]}")


def launch_config(nproc_per_node: int, rendezvous: Rendezvous | None, prefix: str) -> Any:
    """torch's LaunchConfig for this node: `rendezvous` (one of several nodes) or alone (None)."""
    import multiprocessing

    from torch.distributed.launcher.api import LaunchConfig  # PyTorch, loaded only when a run starts

    # Set before the fork server starts (once per process). It holds no Python thread and no CUDA context (importing
    # torch does not create one), so forking it is safe, as for DataLoader workers started the same way.
    multiprocessing.set_forkserver_preload(RANK_MODULES)
    meet = rendezvous or alone(prefix)
    return LaunchConfig(
        min_nodes=meet.nnodes,
        max_nodes=meet.nnodes,
        nproc_per_node=nproc_per_node,
        run_id=meet.run_id,
        rdzv_backend="c10d",
        rdzv_endpoint=meet.endpoint,
        # node 0 hosts the rendezvous store; the others only connect (two agents may share one host)
        rdzv_configs={"is_host": meet.leads} if rendezvous is not None else {},
        max_restarts=0,  # a failed rank fails the run; a restart would time a different job
        monitor_interval=0.1,
        start_method="forkserver",
    )


def add_arguments(p: Any, default_id: str) -> None:
    """--nnodes, --node-rank, --rdzv-endpoint and --rdzv-id."""
    p.add_argument(
        "--nnodes", type=count(1, 10_000), default=1, help="nodes meeting at --rdzv-endpoint (each runs this command)"
    )
    p.add_argument(
        "--node-rank", type=count(0, 9_999), default=0, help="this node's rank; node 0 hosts the rendezvous and writes"
    )
    p.add_argument("--rdzv-endpoint", help="host:port of node 0's rendezvous store (c10d), with --nnodes > 1")
    p.add_argument("--rdzv-id", default=default_id, help="the run id, the same on every node")


def from_arguments(args: Any) -> Rendezvous | None:
    """The rendezvous the arguments name, None for a one-node run; ValueError naming what is wrong."""
    if args.nnodes == 1 and args.rdzv_endpoint is None:
        if args.node_rank != 0:
            raise ValueError(f"--node-rank {args.node_rank} needs --nnodes above it and --rdzv-endpoint")
        return None
    if args.rdzv_endpoint is None:
        raise ValueError("--nnodes > 1 needs --rdzv-endpoint host:port (node 0's)")
    return Rendezvous(args.nnodes, args.node_rank, args.rdzv_endpoint, args.rdzv_id)
