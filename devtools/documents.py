"""Building test documents from the examples (plain Python, no Django)."""

from __future__ import annotations

import copy
from typing import Any


def variant(document: dict[str, Any], system: str, throughput: float | None = None, **edits: Any) -> dict[str, Any]:
    """A copy of `document` on another system, with dotted-path edits ("precision.weights": "int8")."""
    doc = copy.deepcopy(document)
    doc["system"]["name"] = system
    if throughput is not None:
        doc["metrics"]["throughput"]["value"] = throughput
    for path, value in edits.items():
        node = doc
        *parents, last = path.split(".")
        for part in parents:
            node = node[part]
        node[last] = value
    return doc


# all_reduce over 8 ranks, 1 MiB of float in 100 us: algbw = 1048576 B / 1e9 / 1e-4 s = 10.48576 GB/s, busbw =
# algbw x 2(8-1)/8 = 18.35008 GB/s (nccl-tests' AllReduceGetBw). 8 B in 20 us: 0.0004 and 0.0007 GB/s.
COLLECTIVE_SIZES = [
    {"size_bytes": 8, "count": 2, "side": "in-place", "time_us": 20.0, "algbw_gbs": 0.0004, "busbw_gbs": 0.0007},
    {
        "size_bytes": 1048576,
        "count": 262144,
        "side": "in-place",
        "time_us": 100.0,
        "algbw_gbs": 10.48576,
        "busbw_gbs": 18.35008,
    },
]


def collective_document(**block: Any) -> dict[str, Any]:
    """A minimal valid collective run: an 8-rank all-reduce sweep measured by a runner (exact figures)."""
    metrics = {"collective": "all_reduce", "dtype": "float", "ranks": 8, "time_statistic": "max-over-ranks"}
    metrics |= {"sizes": copy.deepcopy(COLLECTIVE_SIZES)} | block
    return {
        "protocol": "benchreg.submission/1.3",
        "phase": "collective",
        "workload": {"name": "all_reduce", "version": "nccl-tests-2017", "shape": {"batch_size": 1}},
        "scenario": {"kind": "collective-sweep"},
        "precision": {"weights": "fp32", "activations": "fp32"},
        "system": {"name": "node", "nodes": 1, "accelerators": [], "host": None},
        "software": {"os": None, "communication": {"library": "nccl", "version": "2.21.5", "env": {}}},
        "conditions": {"window": {"iterations": 20}, "steady_state": {"method": "not-assessed", "reached": None}},
        "metrics": {"primary": "collectives", "collectives": metrics},
        "provenance": {"runner": {"name": "t", "version": "1"}, "submitter": "me", "source": "runner"},
    }
