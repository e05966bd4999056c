"""The launcher side: start the ranks with torch.distributed's own launcher and rendezvous, collect rank 0's figures.

`elastic_launch` is what `torchrun` (torch.distributed.run) runs: it starts `nproc_per_node` processes on this node,
each with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set by the c10d rendezvous, and each joins the
default process group from that environment (`dist.init_process_group` with no address of ours). Several nodes meet
at one rendezvous (runners/rendezvous.py), as `benchreg run collectives` does.
"""

from __future__ import annotations

from typing import Any

from ..rendezvous import Rendezvous, launch_config
from .options import Options
from .worker import worker


def launch(options: Options, rendezvous: Rendezvous | None = None) -> dict[str, Any]:
    """Run `options` on this node, alone or as one of `rendezvous.nnodes`: every rank's figures on the leading node
    (node 0 of the rendezvous, the only node otherwise), {} on the others. A rank that fails on any node raises
    torch.distributed.elastic's ChildFailedError on every node (its peers' collectives fail), and nothing is returned.
    """
    from torch.distributed.launcher.api import elastic_launch

    nodes = rendezvous.nnodes if rendezvous is not None else 1
    if nodes != options.nnodes:
        raise ValueError(f"the rendezvous meets {nodes} node(s), the run is of {options.nnodes}")
    config = launch_config(options.nproc_per_node, rendezvous, "training")
    returned = elastic_launch(config, worker)(options, rendezvous.node_rank if rendezvous is not None else 0)
    return next((dict(value) for value in returned.values() if value), {})
