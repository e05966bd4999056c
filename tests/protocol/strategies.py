"""Hypothesis strategies over real documents: random mutations of the examples (no Django here)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from tests.conftest import load_example

EXAMPLES = [load_example(n) for n in ("inference-server-h100-bf16", "inference-offline-cpu-int8", "training-h100-bf16")]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*prefix, i))
    return found


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def mutated_documents(draw: st.DrawFn) -> bytes:
    document = json.loads(json.dumps(draw(st.sampled_from(EXAMPLES))))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(document)[1:]))
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["set", "delete", "add"]))
        if action == "set":
            parent[path[-1]] = draw(json_values)
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=6))] = draw(json_values)
    raw = json.dumps(document).encode()
    if draw(st.booleans()):  # sometimes break the bytes themselves
        cut = draw(st.integers(0, len(raw)))
        raw = raw[:cut] + draw(st.binary(max_size=4)) + raw[cut:]
    return raw
