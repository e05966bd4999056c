"""A decision question and the server runs that enter it, for the hostile probes on decisions."""

from __future__ import annotations

from typing import Any

from devtools.documents import variant
from tests.conftest import load_example

QUESTION = {
    "workload": "decoder-small",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 2000}],
    "quality": {"target_ratio": 0.99},
    "demand": {"value": 20000, "unit": "tokens/s"},
    "prices": {"system_hour": {"*": 98.0}, "energy_per_kwh": 0.1},
}


def server_run(system: str, tput: float) -> dict[str, Any]:
    """The bf16 server example on `system` at `tput`, measured at QUESTION's quality target."""
    doc = variant(load_example("inference-server-h100-bf16"), system, tput)
    doc["metrics"]["quality"]["target_ratio"] = 0.99
    return doc
