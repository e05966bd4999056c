"""Each field's role on an axis, and what follows from the roles alone: a run's controlled projection, its
comparability keys, and its configuration.

Documents are flattened to leaves (JSON pointers to scalars or lists of scalars); absent, null and empty are
the same ("not stated"). Every leaf is governed by the most specific contract pointer above it ('*' matches
one list index); a leaf no pointer covers takes the contract's unlisted role.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from ..canonical import NotPlain, canonicalize, digest, digest_of_plain, plain
from .definition import ROLES, ComparabilityError, Group, contract

Path = tuple[str, ...]


def split_pointer(pointer: str) -> Path:
    if pointer == "":
        return ()
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:])


@lru_cache(maxsize=65_536)  # as field_name: a run's key joins ~100 paths, nearly all seen in every run
def join_pointer(path: Path) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


@lru_cache(maxsize=65_536)  # a pure function of the path; the same few hundred paths recur in every run
def field_name(path: Path) -> str:
    """'precision.weights', 'system.accelerators[0].model', 'software.settings["torch.num_threads"]'."""
    out = ""
    for part in path:
        if part.isdigit():
            out += f"[{part}]"
        elif part.replace("_", "").isalnum():
            out += ("." if out else "") + part
        else:
            out += f'["{part}"]'
    return out


def _primary_name(doc: Mapping[str, Any]) -> str | None:
    primary = (doc.get("metrics") or {}).get("primary")
    return primary.partition(".")[0] if isinstance(primary, str) else None


@dataclass(frozen=True)
class Rule:
    path: Path
    group: Group | None  # None: ignored
    reason: str | None = None


class RuleSet(dict[Path, Rule]):
    """The contract's rules made concrete for some primary metric names, with each leaf path's governing rule
    remembered: every submission classifies ~150 leaves on every axis, nearly all of them paths seen before."""

    MEMO_LIMIT = 100_000  # paths remembered (documents may carry any keys: bounded, then started afresh)

    def __init__(self, rules: dict[Path, Rule]) -> None:
        super().__init__(rules)
        self.wild = [r for r in rules.values() if "*" in r.path]
        self.memo: dict[Path, Rule | None] = {}
        self.keyed: dict[Path, KeyedLeaf | None] = {}
        self.roled: dict[tuple[Path, str], RoledLeaf | None] = {}

    def governing(self, path: Path) -> Rule | None:
        try:
            return self.memo[path]
        except KeyError:
            if len(self.memo) >= self.MEMO_LIMIT:
                self.memo = {}
            rule = self.memo[path] = governing(path, self, self.wild)
            return rule

    def keyed_leaf(self, path: Path) -> KeyedLeaf | None:
        """What `comparability_keys` needs of a leaf path, worked out once per path: its pointer, its group and
        the axes it is controlled on (None: ignored, or controlled on no axis)."""
        try:
            return self.keyed[path]
        except KeyError:
            if len(self.keyed) >= self.MEMO_LIMIT:
                self.keyed = {}
            rule = self.governing(path)
            leaf = None
            if rule is None or rule.group is not None:  # not ignored by the contract
                c = contract()
                group = rule.group if rule is not None else None
                axes = tuple(
                    axis
                    for axis in c.axes
                    if (group.role(axis) if group is not None else c.unlisted_role) == "controlled"
                )
                leaf = KeyedLeaf(join_pointer(path), group, axes) if axes else None
            self.keyed[path] = leaf
            return leaf

    def roled_leaf(self, path: Path, axis: str) -> RoledLeaf | None:
        """What `classify` needs of a leaf path on `axis`, worked out once per path and axis: its role and group
        (None: ignored by the contract). A decision classifies every leaf of each of its runs several times."""
        try:
            return self.roled[path, axis]
        except KeyError:
            if len(self.roled) >= self.MEMO_LIMIT:
                self.roled = {}
            rule = self.governing(path)
            leaf = None
            if rule is None or rule.group is not None:  # not ignored by the contract
                group = rule.group if rule is not None else None
                # A leaf no contract pointer covers (a field added by a later 1.x minor) takes the unlisted role.
                role = group.role(axis) if group is not None else contract().unlisted_role
                leaf = RoledLeaf(role, group)
            self.roled[path, axis] = leaf
            return leaf


_UNSEEN: Any = object()  # a path not yet in RuleSet.roled (None there means ignored)


@dataclass(frozen=True)
class RoledLeaf:
    role: str
    group: Group | None


@dataclass(frozen=True)
class KeyedLeaf:
    pointer: str
    group: Group | None
    controlled_on: tuple[str, ...]


def rules_for(docs: Iterable[Mapping[str, Any]]) -> RuleSet:
    """Contract pointers made concrete for these documents ('{primary}' resolved for each of them)."""
    return _concrete_rules(tuple(sorted({p for p in (_primary_name(d) for d in docs) if p})))


@lru_cache(maxsize=256)
def _concrete_rules(primaries: tuple[str, ...]) -> RuleSet:
    """Shared and read-only: one per set of primary names (a handful: the metrics' names are few)."""
    c = contract()
    out: dict[Path, Rule] = {split_pointer(p): Rule(split_pointer(p), None, reason) for p, reason in c.ignored}
    for group in c.groups:
        if group.primary is not None and group.primary not in primaries:
            continue  # a group for runs with another headline
        for pointer in group.pointers:
            names = primaries if "{primary}" in pointer else [None]
            for name in names:
                concrete = pointer.replace("{primary}", name) if name else pointer
                out[split_pointer(concrete)] = Rule(split_pointer(concrete), group)
    return RuleSet(out)


def _matches(pattern: Path, path: Path) -> bool:
    return len(pattern) == len(path) and all(p in ("*", q) for p, q in zip(pattern, path, strict=True))


def governing(path: Path, rules: Mapping[Path, Rule], wild: Sequence[Rule] | None = None) -> Rule | None:
    """The rule of the longest pointer that is a prefix of `path`; '*' matches any one segment (list index).

    `wild` is the rules whose pointer has a '*'; callers classifying many leaves gather it once.
    """
    if wild is None:
        wild = [r for r in rules.values() if "*" in r.path]
    for end in range(len(path), 0, -1):
        rule = rules.get(path[:end]) or next((r for r in wild if _matches(r.path, path[:end])), None)
        if rule is not None:
            return rule
    return None


def leaves(value: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Scalars and lists of scalars by path, in document order; None and empty containers are 'not stated' and
    yield nothing."""
    out: list[tuple[Path, Any]] = []
    if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict | list) for v in value)):
        _flatten(value, path, out)
    elif value is not None and value != []:
        out.append((path, value))
    return out


def _flatten(value: dict[Any, Any] | list[Any], path: Path, out: list[tuple[Path, Any]]) -> None:
    # One call per container, not per leaf, appending to one list (no generators): every run's ~150 leaves are
    # read on each axis, and a decision reads each of its runs again.
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        if child is None:
            continue
        here = (*path, str(key))
        if isinstance(child, dict):
            _flatten(child, here, out)
        elif isinstance(child, list):
            if any(isinstance(v, dict | list) for v in child):
                _flatten(child, here, out)
            elif child:
                out.append((here, child))
        else:
            out.append((here, child))


def normalised(group: Group, value: Any) -> Any:
    if group.compare == "major" and isinstance(value, str):
        return value.rsplit(".", 1)[0]  # "benchreg.submission/1.0" -> "benchreg.submission/1"
    return value


def same(values: Sequence[Any]) -> bool:
    first = canonicalize(values[0])
    return all(canonicalize(v) == first for v in values[1:])


def classify(doc: Mapping[str, Any], rules: RuleSet, axis: str) -> dict[str, dict[Path, tuple[Group | None, Any]]]:
    """role -> {path: (group, value)} for every leaf of the document that has a role on this axis."""
    out: dict[str, dict[Path, tuple[Group | None, Any]]] = {role: {} for role in ROLES}
    memo = rules.roled
    for path, value in leaves(dict(doc)):
        leaf = memo.get((path, axis), _UNSEEN)
        if leaf is _UNSEEN:
            leaf = rules.roled_leaf(path, axis)
        if leaf is None:
            continue  # ignored, with the reason in the contract
        out[leaf.role][path] = (leaf.group, normalised(leaf.group, value) if leaf.group is not None else value)
    return out


def known_axis(axis: str) -> str:
    c = contract()
    if axis not in c.axes:
        raise ComparabilityError(f"unknown axis {axis!r}: the axes are {', '.join(c.axes)}")
    return axis


def controlled_projection(doc: Mapping[str, Any], axis: str | None = None) -> dict[str, Any]:
    """The run's controlled fields on `axis` (default: the contract's default), as {JSON pointer: value}."""
    axis = known_axis(axis or contract().default_axis)
    fields = classify(doc, rules_for([doc]), axis)["controlled"]
    return {join_pointer(path): value for path, (_, value) in sorted(fields.items())}


def _key(classified: Mapping[str, Mapping[Path, tuple[Group | None, Any]]], axis: str) -> str:
    """The comparability key of a run classified on `axis` (see `comparability_key`)."""
    fields = classified["controlled"]
    projection = {join_pointer(p): v for p, (_, v) in sorted(fields.items())}
    version = contract().key_version_of(g for g, _ in fields.values())
    return digest({"contract": version, "axis": axis, "controlled": projection})


def field_roles(doc: Mapping[str, Any], axis: str | None = None) -> dict[str, str]:
    """Every stated field of the run with its role on `axis` ("ignored" included), as {JSON pointer: role}."""
    axis = known_axis(axis or contract().default_axis)
    rules = rules_for([doc])
    classified = classify(doc, rules, axis)
    out = {join_pointer(p): "ignored" for p, _ in leaves(dict(doc))}
    out.update({join_pointer(p): role for role, fields in classified.items() for p in fields})
    return dict(sorted(out.items()))


def comparability_key(doc: Mapping[str, Any], axis: str | None = None) -> str:
    """'sha256:<hex>' of the canonical {contract version, axis, controlled projection}.

    Two runs have the same key on an axis exactly when no controlled field differs between them, so
    "every run comparable with X" is one lookup of X's key (requirements, e.g. quality on the precision
    axis, are checked by `check`). The version is `Contract.key_version_of` the projection's groups: a
    function of the projection, so equal projections still give equal keys, and a run whose controlled
    fields a later contract did not touch keeps its key.
    """
    axis = known_axis(axis or contract().default_axis)
    return _key(classify(doc, rules_for([doc]), axis), axis)


def comparability_keys(doc: Mapping[str, Any]) -> dict[str, str]:
    """`comparability_key` on every axis at once: each leaf is read once, and what the contract says of its path
    (pointer, controlled on which axes) is remembered across documents. The projections' order does not matter:
    the digest's canonical form sorts keys.

    Each leaf's value is made canonical once (`plain`) as it is read, and each axis's projection is then digested as
    it stands, instead of canonicalizing the five projections leaf by leaf again (a leaf is controlled on several
    axes). A value or pointer outside the fast canonical subset sends the document through `comparability_key`."""
    c = contract()
    rules = rules_for([doc])
    controlled: dict[str, dict[str, Any]] = {axis: {} for axis in c.axes}
    groups: dict[str, list[Group | None]] = {axis: [] for axis in c.axes}
    try:
        for path, value in leaves(dict(doc)):
            leaf = rules.keyed_leaf(path)
            if leaf is None:
                continue
            if leaf.group is not None:
                value = normalised(leaf.group, value)
            if not leaf.pointer.isascii():
                raise NotPlain
            value = plain(value)
            for axis in leaf.controlled_on:
                controlled[axis][leaf.pointer] = value
                groups[axis].append(leaf.group)
        return {
            axis: digest_of_plain({"contract": c.key_version_of(groups[axis]), "axis": axis, "controlled": fields})
            for axis, fields in controlled.items()
        }
    except (NotPlain, orjson.JSONEncodeError):
        return {axis: comparability_key(doc, axis) for axis in c.axes}


# Subject groups that name a machine rather than describe it: two runs on lab-h200-07 and lab-h200-08 with
# the same accelerators, host and interconnect are repetitions of one configuration, not two arms.
IDENTITY_GROUPS = frozenset({"system_identity"})


# Disclosed groups that are part of what was run, not of how it went: on the system axis software may differ
# between runs, but two runs on one machine with 1 and with 2 BLAS threads (or two driver versions) are two
# configurations, never repetitions of one. Power readings, temperatures and warm-up stay outside: they are
# conditions of a run.
CONFIGURATION_GROUPS = frozenset({"software_stack", "software_settings"})
# Free text each run writes for itself (readings, load average, reasons a value is missing): not a setting.
NOTES = (("system", "notes"), ("software", "notes"))


def configuration(doc: Mapping[str, Any], axis: str) -> dict[str, Any]:
    """The run's configuration on `axis`, {field name: value}: its subject fields without identity fields, and the
    software stack and settings wherever the axis only discloses them (CONFIGURATION_GROUPS). Runs with equal
    configurations repeat one setup (one arm); runs whose settings differ are separate arms on every axis."""
    return _configuration(classify(doc, rules_for([doc]), known_axis(axis)))


def key_and_configuration(doc: Mapping[str, Any], axis: str) -> tuple[str, dict[str, Any]]:
    """`comparability_key` and `configuration` on `axis` from one reading of the document (a decision groups each
    of its runs by both)."""
    classified = classify(doc, rules_for([doc]), known_axis(axis))
    return _key(classified, axis), _configuration(classified)


def _configuration(classified: Mapping[str, Mapping[Path, tuple[Group | None, Any]]]) -> dict[str, Any]:
    fields = {p: gv for p, gv in classified["subject"].items() if gv[0] is None or gv[0].id not in IDENTITY_GROUPS}
    fields.update(
        (p, gv) for p, gv in classified["disclosed"].items() if gv[0] is not None and gv[0].id in CONFIGURATION_GROUPS
    )
    return {field_name(p): v for p, (_, v) in sorted(fields.items()) if p[:2] not in NOTES}
