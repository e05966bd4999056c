"""Apply small edits to example documents by JSON pointer (test helper)."""

from __future__ import annotations

import copy
from typing import Any

DELETE = object()


def _parts(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]


def apply(document: dict[str, Any], edits: dict[str, Any]) -> dict[str, Any]:
    """Return a copy with each pointer set to its value (DELETE removes the key)."""
    doc = copy.deepcopy(document)
    for pointer, value in edits.items():
        *parents, last = _parts(pointer)
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return doc
