"""The comparability contract as data: schemas/comparability.v1.json, loaded and checked once into typed
records (axes, groups of fields with a role per axis, requirements, what is shown beside a number, metric
directions). Earlier versions are kept byte for byte beside it (FROZEN_CONTRACT_FILES), so what a stored
comparison was decided under can still be read.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..schema import SCHEMA_DIR

CONTRACT_FILE = SCHEMA_DIR / "comparability.v1.json"
# Earlier versions, each frozen byte for byte when the next was made (tests pin their digests). Comparisons stored
# under one keep it (their result names the version); asked again, they are decided under the live contract.
FROZEN_CONTRACT_FILES = {
    "1.1": SCHEMA_DIR / "comparability.v1.1.json",
    "1.2": SCHEMA_DIR / "comparability.v1.2.json",
}


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
    since: str | None = None  # the contract version that gave the group its roles (None: the keys' version)
    primary: str | None = None  # the group governs only runs whose headline is this metric (None: every run)

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
    key_version: str  # what a key hashes when none of its controlled fields is governed by a group with `since`

    def requirements_for(self, axis: str) -> tuple[Requirement, ...]:
        return dict(self.requirements)[axis]

    def beside_for(self, axis: str) -> tuple[str, ...]:
        """Pointers whose values are shown beside each run's number on `axis` (e.g. precision and quality)."""
        return dict(self.beside)[axis]

    def key_version_of(self, groups: Iterable[Group | None]) -> str:
        """The version a key with controlled fields of these groups hashes: the highest `since` among them, else
        the keys' version. A contract change that leaves a run's controlled fields and their meaning as they were
        leaves its key as it was (1.2 changed only fields protocol 1.2 added)."""
        versions = {self.key_version, *(g.since for g in groups if g is not None and g.since)}
        return max(versions, key=_version_order)

    def lower_is_better(self, metric: str) -> bool:
        """Direction of a metric family ('latency_ms' or 'latency_ms.p99'); unknown ones: higher is better."""
        return dict(self.directions).get(metric.partition(".")[0]) == "lower"


def _version_order(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@cache
def _raw_contract(version: str | None = None) -> dict[str, Any]:
    if version is None:
        path = CONTRACT_FILE
    elif version in FROZEN_CONTRACT_FILES:
        path = FROZEN_CONTRACT_FILES[version]
    else:
        raise ComparabilityError(f"no comparability contract {version}: this code knows {', '.join(known_versions())}")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def known_versions() -> tuple[str, ...]:
    """Every contract version this code has the file of, oldest first; the last is the live one."""
    return (*sorted(FROZEN_CONTRACT_FILES, key=_version_order), str(_raw_contract()["version"]))


def contract_document(version: str | None = None) -> dict[str, Any]:
    """The contract data file as a JSON value (a copy: callers may not change the loaded contract): the live one,
    or a frozen earlier `version` (what a stored comparison was decided under). ComparabilityError for a version
    this code does not have."""
    if version is not None and version == _raw_contract()["version"]:
        version = None
    return copy.deepcopy(_raw_contract(version))


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
        key_version=(data.get("keys") or {}).get("version", data["version"]),
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
            g["id"],
            g["label"],
            tuple(g["pointers"]),
            tuple((a, g["roles"].get(a, "")) for a in axes),
            g.get("compare"),
            g.get("since"),
            g.get("primary"),
        )
        for g in data["groups"]
    )
    for g in groups:
        bad = [f"{a}={r!r}" for a, r in g.roles if r not in ROLES]
        if bad:
            raise ComparabilityError(f"contract group {g.id} has no valid role for {', '.join(bad)}")
    return groups
