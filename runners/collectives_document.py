"""The protocol 1.3 run document of one collective's sweep (`benchreg run collectives`; docs/interconnect.md).

One document per collective: its workload is the collective (nccl-tests' name), its phase `collective`, its scenario
`collective-sweep`, and `/metrics/collectives` holds every size and side measured with each rank's time. The system
and software are this host's capture (runners/environment.py) with `/system/topology` (each host's, read by its local
rank 0) and `/software/communication` (the process group's backend, NCCL's version and the NCCL_* environment).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import protocol
from protocol import collectives as formulas

from . import __version__, environment

RUNNER_NAME = "benchreg.runners.collectives"
WORKLOAD_VERSION = "nccl-tests-2017"  # the bandwidth definitions of protocol/collectives.py, unchanged since 2017
FORMATS = {"float": "fp32", "half": "fp16", "bfloat16": "bf16", "double": "fp64"}


@dataclass(frozen=True)
class Context:
    """What a document says beyond the measurement: who, when, and the job and agent that ran it."""

    submitter: str
    started_at: str
    finished_at: str
    nproc_per_node: int
    job: str | None = None
    agent: str | None = None


def collective_block(name: str, dtype: str, results: list[Any], nranks: int) -> dict[str, Any]:
    """`/metrics/collectives` of one collective from the runner's measurements (runners.collectives.Measured)."""
    mine = sorted((m for m in results if m.collective == name), key=lambda m: (m.size, m.side))
    smallest = min(m.size for m in mine)
    sizes = [
        {
            "size_bytes": m.size,
            "count": m.count,
            "side": m.side,
            "time_us": m.time_us,
            "algbw_gbs": m.algbw,
            "busbw_gbs": m.busbw,
            "wrong": None,  # the runner does not check the data (nccl-tests' validation 0)
            "rank_times_us": list(m.rank_times_us),
        }
        for m in mine
    ]
    return {
        "collective": name,
        "dtype": dtype,
        "redop": "sum" if name in ("all_reduce", "reduce_scatter") else None,
        "root": 0 if name == "broadcast" else None,
        "ranks": nranks,
        "time_statistic": "max-over-ranks",
        "sizes": sizes,
        "small_message_latency_us": min(m.time_us for m in mine if m.size == smallest),
        "avg_busbw_gbs": sum(m.busbw for m in mine) / len(mine),
        "data_checked": False,
        "definition": formulas.collective(name).source,
    }


def topology_section(hosts: list[dict[str, Any]], nproc_per_node: int) -> dict[str, Any]:
    return {"nodes": len(hosts), "processes_per_node": nproc_per_node, "hosts": hosts}


def communication_section(env: dict[str, Any]) -> dict[str, Any]:
    library = "nccl" if env["backend"] == "nccl" else "gloo"
    return {"library": library, "version": env.get("nccl") if library == "nccl" else None, "env": env["nccl_env"]}


def document(name: str, dtype: str, options: Any, outcome: dict[str, Any], context: Context) -> dict[str, Any]:
    """One checked protocol 1.3 document (protocol.Invalid if the measurement does not hold together)."""
    on_cuda = outcome["environment"]["backend"] == "nccl"
    captured = environment.capture("cuda" if on_cuda else "cpu")
    system, software = captured["system"], captured["software"]
    system["nodes"] = max(1, len(outcome["hosts"]))
    system["topology"] = topology_section(outcome["hosts"], context.nproc_per_node)
    software["frameworks"] = {"torch": outcome["environment"]["torch"]}
    software["communication"] = communication_section(outcome["environment"])
    doc = {
        "protocol": f"{protocol.PROTOCOL_NAME}/1.3",
        "phase": "collective",
        "workload": {
            "name": name,
            "version": WORKLOAD_VERSION,
            "task": "collective communication",
            "shape": {"batch_size": 1},  # one collective call at a time; the message sizes are in the metrics
        },
        "scenario": {"kind": "collective-sweep"},
        "precision": {"weights": FORMATS[dtype], "activations": FORMATS[dtype]},
        "system": system,
        "software": software,
        "conditions": _conditions(options),
        "metrics": {
            "primary": "collectives",
            "collectives": collective_block(name, dtype, outcome["results"], _n(outcome)),
        },
        "provenance": _provenance(context),
    }
    return protocol.check(json.loads(json.dumps(doc))).document


def _n(outcome: dict[str, Any]) -> int:
    return len(outcome["devices"])


def _conditions(options: Any) -> dict[str, Any]:
    return {
        "warmup": {"iterations": options.warmup, "seconds": None},
        "window": {"iterations": options.iters, "seconds": None, "repetitions": None},
        "steady_state": {
            "method": "not-assessed",
            "reached": None,
            "reasons": ["each size is timed once over its iterations, as nccl-tests does"],
        },
        "isolation": None,
    }


def _provenance(context: Context) -> dict[str, Any]:
    return {
        "runner": {"name": RUNNER_NAME, "version": __version__},
        "submitter": context.submitter,
        "source": "runner",
        "started_at": context.started_at,
        "finished_at": context.finished_at,
        "job": context.job,
        "agent": context.agent,
    }
