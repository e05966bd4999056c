"""The comparability contract: which runs may be set side by side along an axis, and what differs.

The contract is data (schemas/comparability.v1.json), loaded once. For an axis (system, software,
precision) every field of a submission is governed by the most specific contract pointer above it, which
gives it a role: controlled (must be identical), subject (what the comparison is about), disclosed (may
differ, is shown) or ignored. Documents are flattened to leaves (JSON pointers to scalars or lists of
scalars); absent, null and empty are the same ("not stated"), and values are equal when their RFC 8785
canonical forms are, so 1 and 1.0 are equal while true and 1 are not.

`check` is symmetric and order-independent: the same runs in any order give the same differences (each
difference lists values in the order the runs were given). `compare` adds the statistics.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from . import sizing as capacity
from . import statistics as st
from .canonical import canonicalize, digest
from .errors import value_at
from .rules import DISTRIBUTION_METRICS
from .schema import SCHEMA_DIR

CONTRACT_FILE = SCHEMA_DIR / "comparability.v1.json"
ROLES = ("controlled", "subject", "disclosed")
Path = tuple[str, ...]


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


@dataclass(frozen=True)
class FieldDifference:
    """One field whose values differ between runs, in words a buyer understands.

    `values` holds each run's value as display text, in the order the runs were given; `role` is the
    field's role on the axis ("controlled", "subject", "disclosed", or "required" for a missing field
    an axis requires).
    """

    pointer: str
    field: str
    group: str
    label: str
    role: str
    values: tuple[str, ...]
    words: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "pointer": self.pointer,
            "field": self.field,
            "group": self.group,
            "label": self.label,
            "role": self.role,
            "values": list(self.values),
            "words": self.words,
        }


@dataclass(frozen=True)
class Verdict:
    """Whether runs may be compared along `axis`, and every field that differs, by role."""

    axis: str
    contract_version: str
    comparable: bool
    refusals: tuple[FieldDifference, ...]
    requirement_failures: tuple[FieldDifference, ...]
    disclosures: tuple[FieldDifference, ...]
    subject_differences: tuple[FieldDifference, ...]

    @property
    def offending(self) -> tuple[FieldDifference, ...]:
        """Everything that makes the comparison refused: controlled differences and missing requirements."""
        return self.refusals + self.requirement_failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "axis": self.axis,
            "contract_version": self.contract_version,
            "comparable": self.comparable,
            "refusals": [d.as_dict() for d in self.refusals],
            "requirement_failures": [d.as_dict() for d in self.requirement_failures],
            "disclosures": [d.as_dict() for d in self.disclosures],
            "subject_differences": [d.as_dict() for d in self.subject_differences],
        }


# ------------------------------------------------------------------------------------------ the contract


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
    if data["default_axis"] not in axes:
        raise ComparabilityError(f"contract default axis {data['default_axis']!r} is not an axis")
    requirements = tuple(
        (a, tuple(Requirement(r["pointer"], r["label"], r["reason"]) for r in data["axes"][a]["requirements"]))
        for a in axes
    )
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


def _split(pointer: str) -> Path:
    if pointer == "":
        return ()
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:])


def _join(path: Path) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def _primary_name(doc: Mapping[str, Any]) -> str | None:
    primary = (doc.get("metrics") or {}).get("primary")
    return primary.partition(".")[0] if isinstance(primary, str) else None


@dataclass(frozen=True)
class _Rule:
    path: Path
    group: Group | None  # None: ignored
    reason: str | None = None


class _RuleSet(dict[Path, _Rule]):
    """The contract's rules made concrete for some primary metric names, with each leaf path's governing rule
    remembered: every submission classifies ~150 leaves on every axis, nearly all of them paths seen before."""

    MEMO_LIMIT = 100_000  # paths remembered (documents may carry any keys: bounded, then started afresh)

    def __init__(self, rules: dict[Path, _Rule]) -> None:
        super().__init__(rules)
        self.wild = [r for r in rules.values() if "*" in r.path]
        self.memo: dict[Path, _Rule | None] = {}
        self.keyed: dict[Path, _KeyedLeaf | None] = {}

    def governing(self, path: Path) -> _Rule | None:
        try:
            return self.memo[path]
        except KeyError:
            if len(self.memo) >= self.MEMO_LIMIT:
                self.memo = {}
            rule = self.memo[path] = _governing(path, self, self.wild)
            return rule

    def keyed_leaf(self, path: Path) -> _KeyedLeaf | None:
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
                leaf = _KeyedLeaf(_join(path), group, axes) if axes else None
            self.keyed[path] = leaf
            return leaf


@dataclass(frozen=True)
class _KeyedLeaf:
    pointer: str
    group: Group | None
    controlled_on: tuple[str, ...]


def _rules(docs: Iterable[Mapping[str, Any]]) -> _RuleSet:
    """Contract pointers made concrete for these documents ('{primary}' resolved for each of them)."""
    return _concrete_rules(tuple(sorted({p for p in (_primary_name(d) for d in docs) if p})))


@lru_cache(maxsize=256)
def _concrete_rules(primaries: tuple[str, ...]) -> _RuleSet:
    """Shared and read-only: one per set of primary names (a handful: the metrics' names are few)."""
    c = contract()
    out: dict[Path, _Rule] = {_split(p): _Rule(_split(p), None, reason) for p, reason in c.ignored}
    for group in c.groups:
        for pointer in group.pointers:
            names = primaries if "{primary}" in pointer else [None]
            for name in names:
                concrete = pointer.replace("{primary}", name) if name else pointer
                out[_split(concrete)] = _Rule(_split(concrete), group)
    return _RuleSet(out)


def _matches(pattern: Path, path: Path) -> bool:
    return len(pattern) == len(path) and all(p in ("*", q) for p, q in zip(pattern, path, strict=True))


def _governing(path: Path, rules: Mapping[Path, _Rule], wild: Sequence[_Rule] | None = None) -> _Rule | None:
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


def _leaves(value: Any, path: Path = ()) -> Iterable[tuple[Path, Any]]:
    """Scalars and lists of scalars by path; None and empty containers are 'not stated' and yield nothing."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, (*path, str(key)))
    elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        for i, child in enumerate(value):
            yield from _leaves(child, (*path, str(i)))
    elif value is not None and value != []:
        yield path, value


def _normalised(group: Group, value: Any) -> Any:
    if group.compare == "major" and isinstance(value, str):
        return value.rsplit(".", 1)[0]  # "benchreg.submission/1.0" -> "benchreg.submission/1"
    return value


def _governed(doc: Mapping[str, Any], rules: _RuleSet) -> list[tuple[Path, Any, _Rule | None]]:
    """Every leaf of the document with the rule that governs it (the same on every axis)."""
    return [(path, value, rules.governing(path)) for path, value in _leaves(dict(doc))]


def _classify(doc: Mapping[str, Any], rules: _RuleSet, axis: str) -> dict[str, dict[Path, tuple[Group | None, Any]]]:
    """role -> {path: (group, value)} for every leaf of the document that has a role on this axis."""
    c = contract()
    out: dict[str, dict[Path, tuple[Group | None, Any]]] = {role: {} for role in ROLES}
    for path, value, rule in _governed(doc, rules):
        if rule is not None and rule.group is None:
            continue  # ignored, with the reason in the contract
        # A leaf no contract pointer covers (a field added by a later 1.x minor) takes the unlisted role.
        group = rule.group if rule is not None else None
        role = group.role(axis) if group is not None else c.unlisted_role
        out[role][path] = (group, _normalised(group, value) if group is not None else value)
    return out


def _axis(axis: str) -> str:
    c = contract()
    if axis not in c.axes:
        raise ComparabilityError(f"unknown axis {axis!r}: the axes are {', '.join(c.axes)}")
    return axis


def controlled_projection(doc: Mapping[str, Any], axis: str | None = None) -> dict[str, Any]:
    """The run's controlled fields on `axis` (default: the contract's default), as {JSON pointer: value}."""
    axis = _axis(axis or contract().default_axis)
    fields = _classify(doc, _rules([doc]), axis)["controlled"]
    return {_join(path): value for path, (_, value) in sorted(fields.items())}


def field_roles(doc: Mapping[str, Any], axis: str | None = None) -> dict[str, str]:
    """Every stated field of the run with its role on `axis` ("ignored" included), as {JSON pointer: role}."""
    axis = _axis(axis or contract().default_axis)
    rules = _rules([doc])
    classified = _classify(doc, rules, axis)
    out = {_join(p): "ignored" for p, _ in _leaves(dict(doc))}
    out.update({_join(p): role for role, fields in classified.items() for p in fields})
    return dict(sorted(out.items()))


def comparability_key(doc: Mapping[str, Any], axis: str | None = None) -> str:
    """'sha256:<hex>' of the canonical {contract version, axis, controlled projection}.

    Two runs have the same key on an axis exactly when no controlled field differs between them, so
    "every run comparable with X" is one lookup of X's key (requirements, e.g. quality on the precision
    axis, are checked by `check`).
    """
    axis = _axis(axis or contract().default_axis)
    return digest({"contract": contract().version, "axis": axis, "controlled": controlled_projection(doc, axis)})


def comparability_keys(doc: Mapping[str, Any]) -> dict[str, str]:
    """`comparability_key` on every axis at once: each leaf is read once, and what the contract says of its path
    (pointer, controlled on which axes) is remembered across documents. The projections' order does not matter:
    the digest's canonical form sorts keys."""
    c = contract()
    rules = _rules([doc])
    controlled: dict[str, dict[str, Any]] = {axis: {} for axis in c.axes}
    for path, value in _leaves(dict(doc)):
        leaf = rules.keyed_leaf(path)
        if leaf is None:
            continue
        if leaf.group is not None:
            value = _normalised(leaf.group, value)
        for axis in leaf.controlled_on:
            controlled[axis][leaf.pointer] = value
    return {
        axis: digest({"contract": c.version, "axis": axis, "controlled": fields}) for axis, fields in controlled.items()
    }


# ------------------------------------------------------------------------------------------ differences


def display(value: Any) -> str:
    """A value as a buyer reads it: 'not stated' for absent or null, yes/no for booleans."""
    if value is None:
        return "not stated"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, list):
        return ", ".join(display(v) for v in value) or "none"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


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


def _words(name: str, values: Sequence[str]) -> str:
    if len(values) == 2:
        return f"{name}: {values[0]} vs {values[1]}"
    runs: dict[str, list[int]] = {}
    for i, v in enumerate(values, start=1):
        runs.setdefault(v, []).append(i)
    parts = [f"{v} (run{'s' if len(ix) > 1 else ''} {', '.join(map(str, ix))})" for v, ix in runs.items()]
    return f"{name}: {' vs '.join(parts)}"


def _same(values: Sequence[Any]) -> bool:
    first = canonicalize(values[0])
    return all(canonicalize(v) == first for v in values[1:])


def _differences(per_doc: Sequence[Mapping[Path, tuple[Group | None, Any]]], role: str) -> tuple[FieldDifference, ...]:
    out = []
    for path in sorted(set().union(*(d.keys() for d in per_doc))):
        values = [d[path][1] if path in d else None for d in per_doc]
        if _same(values):
            continue
        group = next(d[path][0] for d in per_doc if path in d)
        shown = tuple(display(v) for v in values)
        name = field_name(path)
        out.append(
            FieldDifference(
                pointer=_join(path),
                field=name,
                group=group.id if group else "unlisted",
                label=group.label if group else "field not named in the contract",
                role=role,
                values=shown,
                words=_words(name, shown),
            )
        )
    return tuple(out)


def _requirement_failures(docs: Sequence[Mapping[str, Any]], axis: str) -> tuple[FieldDifference, ...]:
    out = []
    for req in contract().requirements_for(axis):
        values = [value_at(d, req.pointer) for d in docs]
        if all(v is not None for v in values):
            continue
        shown = tuple(display(v) if v is not None else "missing" for v in values)
        name = field_name(_split(req.pointer))
        out.append(
            FieldDifference(
                pointer=req.pointer,
                field=name,
                group="requirement",
                label=req.label,
                role="required",
                values=shown,
                words=f"{_words(name, shown)} (required on the {axis} axis: {req.reason})",
            )
        )
    return tuple(out)


def check(docs: Sequence[Mapping[str, Any]], axis: str | None = None) -> Verdict:
    """Whether `docs` (valid submissions) may be compared along `axis`, with every differing field.

    Comparable exactly when no controlled field differs and every requirement of the axis holds. Raises
    ComparabilityError for an unknown axis or fewer than two runs.
    """
    axis = _axis(axis or contract().default_axis)
    docs = list(docs)
    if len(docs) < 2:
        raise ComparabilityError(f"a comparison needs at least 2 runs, got {len(docs)}")
    rules = _rules(docs)
    classified = [_classify(d, rules, axis) for d in docs]
    by_role = {role: _differences([c[role] for c in classified], role) for role in ROLES}
    failures = _requirement_failures(docs, axis)
    return Verdict(
        axis=axis,
        contract_version=contract().version,
        comparable=not by_role["controlled"] and not failures,
        refusals=by_role["controlled"],
        requirement_failures=failures,
        disclosures=by_role["disclosed"],
        subject_differences=by_role["subject"],
    )


# Subject groups that name a machine rather than describe it: two runs on lab-h200-07 and lab-h200-08 with
# the same accelerators, host and interconnect are repetitions of one configuration, not two arms.
IDENTITY_GROUPS = frozenset({"system_identity"})


def configuration(doc: Mapping[str, Any], axis: str) -> dict[str, Any]:
    """The run's configuration on `axis`: its subject fields without identity fields, {field name: value}."""
    fields = _classify(doc, _rules([doc]), _axis(axis))["subject"]
    return {field_name(p): v for p, (g, v) in sorted(fields.items()) if g is None or g.id not in IDENTITY_GROUPS}


# ------------------------------------------------------------------------------------------ comparisons


def beside(doc: Mapping[str, Any], axis: str) -> list[dict[str, str]]:
    """What the contract shows beside this run's number on `axis`: [{pointer, field, value}] ('not stated')."""
    return [
        {"pointer": p, "field": field_name(_split(p)), "value": display(value_at(doc, p))}
        for p in contract().beside_for(_axis(axis))
    ]


METRIC_WORDS = {
    "throughput": "throughput",
    "tokens_per_second": "token throughput",
    "request_rate": "request rate",
    "goodput": "goodput",
    "latency_ms": "latency",
    "ttft_ms": "time to first token",
    "tpot_ms": "time per output token",
    "step_time_ms": "step time",
    "time_to_quality": "time to quality",
}


def metric_words(metric: str) -> str:
    """'latency_ms.p99' -> 'p99 latency', 'step_time_ms' -> 'median step time', 'throughput' -> 'throughput'."""
    name, _, stat = metric.partition(".")
    noun = METRIC_WORDS.get(name, name.replace("_", " "))
    if name not in DISTRIBUTION_METRICS:
        return noun  # rates ("throughput", "goodput") and time to quality have one value
    return f"{'median' if stat in ('', 'p50') else stat} {noun}"


def _base_label(doc: Mapping[str, Any], axis: str, config: Mapping[str, Any], differing: Sequence[str]) -> str:
    if axis == "iso-quality":  # the system in words, then the number format it chose to meet the target
        weights = (doc.get("precision") or {}).get("weights")
        return _base_label(doc, "system", config, differing) + (f", {weights}" if weights else "")
    if axis == "system":
        system = doc.get("system") or {}
        accels = [
            (f"{a['count']}× " if isinstance(a.get("count"), int) and a["count"] > 1 else "")
            + (a.get("model") or "unnamed accelerator")
            for a in system.get("accelerators") or []
        ]
        cpu = (system.get("host") or {}).get("cpu_model")
        what = ", ".join(accels) or (f"CPU {cpu}" if cpu else "host CPU (model not stated)")
        nodes = system.get("nodes")
        return what + (f", {nodes} nodes" if isinstance(nodes, int) and nodes > 1 else "")
    parts = [_setting_words(f, config.get(f)) for f in differing[:4]]
    return ", ".join(parts) + (", …" if len(differing) > 4 else "") or f"{axis} as tested"


def _setting_words(name: str, value: Any) -> str:
    """A label's words for one field: 'torch 2.13.0' for a framework, 'torch.num_threads=2' for a setting,
    'weights=int8' for a precision field: the field's last name, not its whole path."""
    parent, _, last = name.rpartition(".")
    if name.endswith('"]'):  # software.settings["torch.num_threads"]
        parent, _, last = name[:-2].rpartition('["')
    if parent.endswith("frameworks"):
        return f"{last} {display(value)}"
    return f"{last}={display(value)}"


def _labels(docs: Sequence[Mapping[str, Any]], axis: str, configs: Sequence[dict[str, Any]]) -> list[str]:
    """One label per arm, unique: the configuration in words, plus what tells apart arms that read alike."""
    names = sorted(set().union(*configs))
    differing = (
        [n for n in names if not _same([configs[0].get(n)] + [c.get(n) for c in configs[1:]])]
        if len(configs) > 1
        else []
    )
    labels = [_base_label(d, axis, c, differing) for d, c in zip(docs, configs, strict=True)]
    for label, clash in _clashes(labels):
        local = [n for n in differing if not _same([configs[i].get(n) for i in clash])]
        if local:
            for i in clash:
                labels[i] = f"{label} ({', '.join(_setting_words(n, configs[i].get(n)) for n in local[:3])})"
    for label, clash in _clashes(labels):  # still alike: the same configuration under different controlled conditions
        # A decision groups runs across keys (one never reached steady state): the controlled fields that differ
        # tell them apart.
        controlled = [controlled_projection(docs[i], axis) for i in clash]
        pointers = [p for p in sorted(set().union(*controlled)) if not _same([c.get(p) for c in controlled])]
        for i, fields in zip(clash, controlled, strict=True):
            words = [
                f"{'.'.join(field_name(_split(p)).split('.')[-2:])}={display(fields.get(p))}" for p in pointers[:3]
            ]
            labels[i] = f"{label} ({', '.join(words)})" if words else label
    for label, clash in _clashes(labels):  # still equal (more than 3 fields differ): number them, never merge them
        for n, i in enumerate(clash[1:], start=2):
            labels[i] = f"{label} #{n}"
    return labels


def _clashes(labels: Sequence[str]) -> list[tuple[str, list[int]]]:
    """Each label more than one arm has, with those arms' indices in order."""
    at: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        at.setdefault(label, []).append(i)
    return [(label, clash) for label, clash in at.items() if len(clash) > 1]


def arm_labels(docs: Sequence[Mapping[str, Any]], axis: str, configs: Sequence[dict[str, Any]]) -> list[str]:
    """One unique label per configuration (docs[i] is a run of configs[i]), as comparisons label their arms."""
    return _labels(docs, _axis(axis), configs)


def _arms(configs: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Runs grouped by identical configuration, in order of first appearance: repetitions of one setup."""
    groups: dict[str, list[int]] = {}
    for i, config in enumerate(configs):
        groups.setdefault(digest(config), []).append(i)
    return list(groups.values())


def blocking_reasons(doc: Mapping[str, Any], run: int, arm: int, name: str) -> list[dict[str, Any]]:
    """Why this run makes any verdict about its arm inconclusive: unsteady, overloaded or invalid."""
    cond = doc.get("conditions") or {}
    out = []
    steady = cond.get("steady_state") or {}
    if steady.get("reached") is False:
        why = "; ".join(steady.get("reasons") or []) or "no reason given"
        out.append(
            {
                "code": "unsteady",
                "message": f"{name} never reached steady state ({why})",
                "run": run,
                "arm": arm,
                "name": name,
            }
        )
    validity = cond.get("validity") or {}
    failed = [k for k, ok in (validity.get("checks") or {}).items() if ok is False]
    if "kept_up_with_arrivals" in failed:
        out.append(
            {
                "code": "overloaded",
                "message": f"{name} was overloaded: it completed fewer requests than "
                "arrived, so its latencies measure a growing queue",
                "run": run,
                "arm": arm,
                "name": name,
            }
        )
    other = [k for k in failed if k != "kept_up_with_arrivals"]
    if validity.get("valid") is False and (other or not failed):
        out.append(
            {
                "code": "invalid",
                "message": f"{name} failed its validity checks" + (f" ({', '.join(other)})" if other else ""),
                "run": run,
                "arm": arm,
                "name": name,
            }
        )
    return out


BLOCKER_WORDS = {
    "unsteady": "never reached steady state",
    "overloaded": "was overloaded",
    "invalid": "failed its validity checks",
}


def blockers_in_brief(reasons: Sequence[Mapping[str, Any]]) -> str:
    """'run 5 and run 8 never reached steady state; run 3 was overloaded': which runs block a verdict and how, in
    one clause for the statement. The full reasons (why each run was unsteady) stay in `reasons`."""
    by_code: dict[str, list[str]] = {}
    for reason in reasons:
        who = str(reason.get("name") or f"run {reason.get('run')}").split(" (")[0]
        names = by_code.setdefault(str(reason.get("code")), [])
        if who not in names:
            names.append(who)
    parts = []
    for code, names in by_code.items():
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        parts.append(f"{who} {BLOCKER_WORDS.get(code, code)}")
    return "; ".join(parts)


def _num(value: float | None) -> str:
    """Three significant figures, trailing zeros kept: 1.00, 0.793, 8.50, 1260."""
    if value is None:
        return "?"
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:#.3g}".rstrip(".")


def _ratio_words(subject: str, baseline: str, metric: str, lower: bool, r: st.Ratio, family: int) -> str:
    what = metric_words(metric)
    # With several comparisons against one baseline each interval is wider (Bonferroni): together they
    # are 95% intervals, which is what the words say.
    label = f"{st.CONFIDENCE:.0%} CI" if family == 1 else f"simultaneous {st.CONFIDENCE:.0%} CI"
    ci = f"{label} {_num(r.ci_low)}–{_num(r.ci_high)}" if r.ci_low is not None else "no interval"
    if r.value is None:
        return f"{subject}'s {what} cannot be set against {baseline}'s: {r.method}"
    if lower:
        change = abs(1.0 - r.value) * 100.0
        direction = "lower" if r.value < 1.0 else "higher"
        return f"{subject}'s {what} is {_num(r.value)}× {baseline}'s, {change:.0f}% {direction} ({ci}; lower is better)"
    return f"{subject} delivers {_num(r.value)}× {baseline}'s {what} ({ci})"


def _pair(
    j: int, b: int, arms: Sequence[dict[str, Any]], estimates: Sequence[st.Estimate], family: int
) -> dict[str, Any]:
    """Arm j (subject) against arm b (baseline): ratio, verdict and one sentence that carries its caveats.

    `family` is how many arms are set against the baseline: Bonferroni keeps the chance of any false
    "distinguishable" among them <= 5%, which matters because the summary picks the best of them.
    """
    est = estimates[j]
    r = st.ratio(est, estimates[b], confidence=1.0 - (1.0 - st.CONFIDENCE) / family)
    words = _ratio_words(arms[j]["label"], arms[b]["label"], est.metric, est.lower_is_better, r, family)
    blockers = arms[j]["reasons"] + arms[b]["reasons"]
    if blockers:
        verdict = "inconclusive"
        statement = f"Inconclusive: {blockers_in_brief(blockers)}. Taken at face value, {words}"
    elif r.evidence is not None:
        verdict = "not-enough-evidence"
        why = (
            "; ".join(
                f"{a['label']}: {e.evidence}"
                for a, e in ((arms[j], est), (arms[b], estimates[b]))
                if e.evidence is not None
            )
            or r.evidence
        )
        statement = f"Not enough evidence: {why}. Taken at face value, {words}"
    elif r.distinguishable:
        verdict = "distinguishable"
        statement = f"{words}; distinguishable from noise"
    else:
        verdict = "indistinguishable"
        statement = f"{words}; not distinguishable from noise (the interval includes 1)"
    return {
        "subject": j,
        "baseline": b,
        "metric": est.metric,
        "ratio": st.rounded(r.value),
        "ci_low": st.rounded(r.ci_low),
        "ci_high": st.rounded(r.ci_high),
        "confidence": r.confidence,
        "simultaneous": {"comparisons": family, "confidence": st.CONFIDENCE} if family > 1 else None,
        "distinguishable": r.distinguishable if verdict in ("distinguishable", "indistinguishable") else None,
        "outcome": r.outcome,
        "method": r.method,
        "evidence": r.evidence,
        "verdict": verdict,
        "statement": statement,
        "face_value": words,
        "words": statement,
    }


def _comparison_caveats(docs: Sequence[Mapping[str, Any]], arms: list[list[int]]) -> list[dict[str, Any]]:
    out = []
    head = (docs[0].get("metrics") or {}).get("primary", "")
    if (docs[0].get("scenario") or {}).get("kind") in capacity.SERVING_SCENARIOS and head.partition(".")[0] in (
        "throughput",
        "tokens_per_second",
        "request_rate",
    ):
        out.append(
            {
                "code": "offered-load-throughput",
                "message": "in a server scenario the throughput follows "
                "the offered load; latency or goodput tell systems apart better",
            }
        )
    energies = [(d.get("metrics") or {}).get("energy") for d in docs]
    meters = {f"{e.get('source')} ({e.get('scope') or 'scope not stated'})" for e in energies if isinstance(e, dict)}
    if len(meters) > 1:
        out.append(
            {
                "code": "energy-measured-differently",
                "message": "energy was measured with different meters "
                f"or scopes ({'; '.join(sorted(meters))}): energy per output is not like for like",
            }
        )
    if len(arms) == 1:
        out.append(
            {
                "code": "single-configuration",
                "message": "all runs repeat one configuration: they are "
                "aggregated, and there is nothing to compare them against",
            }
        )
    return out


def compare(
    docs: Sequence[Mapping[str, Any]],
    axis: str | None = None,
    prices: Mapping[str, float] | None = None,
    sizing: Mapping[str, Any] | None = None,
    *,
    currency: str = "USD",
    resamples: int = st.RESAMPLES,
    baseline: int | None = None,
    names: Sequence[str] | None = None,
    digests: Sequence[str] | None = None,
    verdict: Verdict | None = None,
) -> dict[str, Any]:
    """The whole comparison as a JSON value (finite, rounded floats): what the registry stores and reports print.

    `prices` maps system.name to a price per system-hour (stated as an assumption); `sizing` is
    {"target_load", "load_unit", "latency_objectives"?: [{"metric", "percentile", "max_ms"}], "headroom"?}.
    `baseline` is the index of a run: its arm is the baseline every other arm is set against (default: the
    first arm). `names` are how messages name the runs (the registry passes "run 17"; default "run #1");
    `digests` are the runs' digests when the caller has them (canonicalizing raw samples is the slow part).
    `verdict` is `check(docs, axis)` when the caller has already asked it (it is not asked again).
    `resamples` is ignored (kept for old callers). When the verdict refuses, runs are listed without
    statistics and arms/pairwise are empty.
    """
    axis = _axis(axis or contract().default_axis)
    runs = [dict(d) for d in docs]
    if baseline is not None and not 0 <= baseline < len(runs):
        raise ComparabilityError(f"the baseline must be one of the compared runs (0-{len(runs) - 1}), not {baseline}")
    if names is not None and len(names) != len(runs):
        raise ComparabilityError("one name per run")
    if digests is not None and len(digests) != len(runs):
        raise ComparabilityError("one digest per run")
    verdict = verdict if verdict is not None else check(runs, axis)
    c = contract()
    result: dict[str, Any] = {
        "kind": "benchreg.comparison/1",
        "contract": {"id": c.id, "version": c.version},
        "axis": axis,
        "comparable": verdict.comparable,
        "verdict": verdict.as_dict(),
        "disclosures": [d.as_dict() for d in verdict.disclosures],
        "runs": [],
        "arms": [],
        "pairwise": [],
        "caveats": [],
        "assumptions": [],
        "methods": dict(st.METHODS),
    }
    known = list(digests) if digests is not None else [digest(d) for d in runs]
    result["runs"] = [
        {
            "index": i,
            "digest": known[i],
            "system": (d.get("system") or {}).get("name"),
            "headline": {"metric": (d.get("metrics") or {}).get("primary")},
        }
        for i, d in enumerate(runs)
    ]
    if not verdict.comparable:
        return result
    _fill(
        result,
        runs,
        axis,
        prices,
        sizing,
        currency,
        baseline,
        list(names) if names is not None else [f"run #{i + 1}" for i in range(len(runs))],
    )
    return result


def _fill(
    result: dict[str, Any],
    docs: Sequence[dict[str, Any]],
    axis: str,
    prices: Mapping[str, float] | None,
    sizing: Mapping[str, Any] | None,
    currency: str,
    baseline_run: int | None,
    names: Sequence[str],
) -> None:
    per_run = [configuration(d, axis) for d in docs]
    groups = _arms(per_run)
    configs = [per_run[m[0]] for m in groups]
    labels = _labels([docs[m[0]] for m in groups], axis, configs)
    run_estimates = [st.headline_estimate(d) for d in docs]  # each run's, once: arms and runs both use them
    digests = [r["digest"] for r in result["runs"]]
    arms, estimates = [], []
    for a, members in enumerate(groups):
        est = st.aggregate(
            [docs[i] for i in members],
            estimates=[run_estimates[i] for i in members],
            keys=[digests[i] for i in members],
        )
        estimates.append(est)
        reasons = [x for i in members for x in blocking_reasons(docs[i], i, a, f"{names[i]} ({labels[a]})")]
        arm: dict[str, Any] = {
            "index": a,
            "label": labels[a],
            "configuration": _plain(configs[a]),
            "runs": members,
            "estimate": est.as_dict(),
            "reasons": reasons,
            "derived": capacity.arm_derived([docs[i] for i in members], prices, currency),
        }
        if sizing is not None:
            arm["sizing"] = capacity.arm_sizing([docs[i] for i in members], sizing)
        arms.append(arm)
    for a, members in enumerate(groups):
        for i in members:
            est = run_estimates[i]
            quality = (docs[i].get("metrics") or {}).get("quality")
            found = [x.as_dict() for x in st.caveats(docs[i], est)]
            result["runs"][i].update(
                arm=a,
                name=names[i],
                headline=est.as_dict(),
                quality=quality,
                caveats=found,
                beside=beside(docs[i], axis),
            )
            result["caveats"] += [{"run": i, **x} for x in found]
    result["caveats"] += _comparison_caveats(docs, groups)
    result["arms"] = arms
    base = next(a for a, m in enumerate(groups) if baseline_run in m) if baseline_run is not None else 0
    others = [j for j in range(len(arms)) if j != base]
    result["pairwise"] = [_pair(j, base, arms, estimates, max(1, len(others))) for j in others]
    result["conclusion"] = _conclusion(arms, estimates, result["pairwise"], base)
    if prices:
        result["assumptions"].append(
            {
                "kind": "price",
                "currency": currency,
                "per_system_hour": dict(prices),
                "words": "hourly prices supplied by the user, not measured",
            }
        )
    if sizing is not None:
        result["assumptions"].append(
            {
                "kind": "sizing",
                "request": _plain(sizing),
                "words": "replica counts assume linear scaling of the tested system",
            }
        )


def _conclusion(
    arms: Sequence[dict[str, Any]], estimates: Sequence[st.Estimate], pairwise: Sequence[dict[str, Any]], base: int
) -> dict[str, Any]:
    """The one sentence a reader takes away: the best arm against the baseline, with every blocking reason."""
    reasons = [x for arm in arms for x in arm["reasons"]]
    if len(arms) == 1:
        est = estimates[0]
        ci = (
            f" ({est.confidence:.0%} CI {_num(est.ci_low)}–{_num(est.ci_high)})"
            if est.ci_low is not None
            else f" (no interval: {est.evidence})"
        )
        words = (
            f"all runs repeat one configuration, {arms[0]['label']}: {metric_words(est.metric)} "
            f"{_num(est.value)} {est.unit or ''}{ci}; there is nothing to compare it against"
        )
        if reasons:
            return {
                "outcome": "inconclusive",
                "statement": f"Inconclusive: {blockers_in_brief(reasons)}. Taken at face value, {words}",
                "reasons": reasons,
                "baseline": 0,
                "focus": [0],
            }
        return {
            "outcome": "single-configuration",
            "statement": words[0].upper() + words[1:],
            "reasons": [],
            "baseline": 0,
            "focus": [0],
        }
    ranked = sorted(
        (j for j in range(len(arms)) if j != base and estimates[j].value is not None),
        key=lambda j: (estimates[j].value or 0.0) * (1 if estimates[j].lower_is_better else -1),
    )
    best = ranked[0] if ranked else next(j for j in range(len(arms)) if j != base)
    pair = next(p for p in pairwise if p["subject"] == best)
    common = {"baseline": base, "focus": [base, best]}
    if reasons:
        return {
            "outcome": "inconclusive",
            "statement": f"Inconclusive: {blockers_in_brief(reasons)}. Taken at face value, {pair['face_value']}",
            "reasons": reasons,
            **common,
        }
    why = [
        {
            "code": "not-enough-evidence",
            "message": pair["statement"].split(". Taken at face value", 1)[0].removeprefix("Not enough evidence: "),
            "run": None,
            "arm": None,
        }
    ]
    return {
        "outcome": pair["verdict"],
        "statement": pair["statement"],
        "reasons": why if pair["verdict"] == "not-enough-evidence" else [],
        **common,
    }


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))
