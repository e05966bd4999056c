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
