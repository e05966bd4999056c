"""The comparability contract as data: schemas/comparability.v1.json, loaded and checked once into typed
records (axes, groups of fields with a role per axis, requirements, what is shown beside a number, metric
directions).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..schema import SCHEMA_DIR

CONTRACT_FILE = SCHEMA_DIR / "comparability.v1.json"


ROLES = ("controlled", "subject", "disclosed")


class ComparabilityError(ValueError):
    """A comparison was asked for wrongly (unknown axis, fewer than two runs, a broken contract file)."""


@dataclass(frozen=True)
class Group:
    """A named set of fields sharing one role per axis, e.g. 'numeric precision'."""

    id: str
    label: str
    pointers: tuple[str, ...]
    roles: tuple[tuple[str, str], ...]  # (axis, role), kept as a tuple so the dataclass stays hashable
    compare: str | None = None  # "major": only the major of a 'name/major.minor' string is compared

    def role(self, axis: str) -> str:
        return dict(self.roles)[axis]


@dataclass(frozen=True)
class Requirement:
    """A field that must be present (not null) on every run compared along an axis."""

    pointer: str
    label: str
    reason: str


@dataclass(frozen=True)
class Contract:
    """The loaded contract. `document` is the data file as read, for GET /api/v1/protocol and reports."""

    id: str
    version: str
    protocol: str
    default_axis: str
    axes: tuple[str, ...]
    groups: tuple[Group, ...]
    ignored: tuple[tuple[str, str], ...]  # (pointer, reason)
    requirements: tuple[tuple[str, tuple[Requirement, ...]], ...]
    beside: tuple[tuple[str, tuple[str, ...]], ...]  # (axis, pointers shown beside every run's number)
    directions: tuple[tuple[str, str], ...]
    unlisted_role: str

    def requirements_for(self, axis: str) -> tuple[Requirement, ...]:
        return dict(self.requirements)[axis]

    def beside_for(self, axis: str) -> tuple[str, ...]:
        """Pointers whose values are shown beside each run's number on `axis` (e.g. precision and quality)."""
        return dict(self.beside)[axis]

    def lower_is_better(self, metric: str) -> bool:
        """Direction of a metric family ('latency_ms' or 'latency_ms.p99'); unknown ones: higher is better."""
        return dict(self.directions).get(metric.partition(".")[0]) == "lower"


@cache
def _raw_contract() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CONTRACT_FILE.read_text())
    return data


def contract_document() -> dict[str, Any]:
    """The contract data file as a JSON value (a copy: callers may not change the loaded contract)."""
    return copy.deepcopy(_raw_contract())


@cache
def contract() -> Contract:
    """The contract, loaded and checked once per process. Raises ComparabilityError if the file is broken."""
    data = _raw_contract()
    axes = tuple(data["axes"])
    groups = _groups(data, axes)
    if data["default_axis"] not in axes:
        raise ComparabilityError(f"contract default axis {data['default_axis']!r} is not an axis")
    requirements = _requirements(data, axes)
    return Contract(
        id=data["$id"],
        version=data["version"],
        protocol=data["protocol"],
        default_axis=data["default_axis"],
        axes=axes,
        groups=groups,
        ignored=tuple((i["pointer"], i["reason"]) for i in data["ignored"]),
        requirements=requirements,
        beside=tuple((a, tuple(data["axes"][a].get("beside", ()))) for a in axes),
        directions=tuple(data["metric_directions"].items()),
        unlisted_role=data["unlisted_role"],
    )


def _requirements(data: Mapping[str, Any], axes: tuple[str, ...]) -> tuple[tuple[str, tuple[Requirement, ...]], ...]:
    return tuple(
        (a, tuple(Requirement(r["pointer"], r["label"], r["reason"]) for r in data["axes"][a]["requirements"]))
        for a in axes
    )


def _groups(data: Mapping[str, Any], axes: tuple[str, ...]) -> tuple[Group, ...]:
    """The contract's groups, each with a valid role on every axis."""
    groups = tuple(
        Group(
            g["id"], g["label"], tuple(g["pointers"]), tuple((a, g["roles"].get(a, "")) for a in axes), g.get("compare")
        )
        for g in data["groups"]
    )
    for g in groups:
        bad = [f"{a}={r!r}" for a, r in g.roles if r not in ROLES]
        if bad:
            raise ComparabilityError(f"contract group {g.id} has no valid role for {', '.join(bad)}")
    return groups
