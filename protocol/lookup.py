"""Reading a field of a document that may not have the shape the schema asks for (the semantic checks run on
documents the schema may also refuse, so that every problem is reported at once)."""

from __future__ import annotations

from typing import Any


def value_at(doc: Any, *path: str) -> Any:
    """The value at `path` (object keys, outermost first), or None where an object on the way is missing or is not
    an object."""
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc
