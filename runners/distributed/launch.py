"""The launcher side: start the ranks with torch.distributed's own launcher and rendezvous, collect rank 0's figures.

`elastic_launch` is what `torchrun` (torch.distributed.run) runs: it starts `nproc_per_node` processes on this node,
each with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set by the c10d rendezvous, and each joins the
default process group from that environment (`dist.init_process_group` with no address of ours).
"""

from __future__ import annotations

import uuid
from typing import Any

from .options import Options
from .worker import worker


def launch(options: Options) -> dict[str, Any]:
    """Run `options` on this node; rank 0's outcome (every rank's figures). A rank that fails raises
    torch.distributed.elastic's ChildFailedError, and nothing is returned."""
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=options.nproc_per_node,
        run_id=f"training-{uuid.uuid4().hex[:8]}",
        rdzv_backend="c10d",
        rdzv_endpoint="127.0.0.1:0",  # a free port: several runs may share the machine
        max_restarts=0,  # a restarted rank would time a different job
        monitor_interval=0.1,
        start_method="spawn",
    )
    returned = elastic_launch(config, worker)(options)
    return dict(returned[0])
