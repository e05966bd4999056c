"""`check`: whether runs may be set side by side along an axis, with every field that differs, by role.

Symmetric and order-independent: the same runs in any order give the same differences (each difference lists
values in the order the runs were given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import value_at
from .definition import ROLES, ComparabilityError, Group, contract
from .roles import Path, classify, field_name, join_pointer, known_axis, rules_for, same, split_pointer
from .words import difference_words, display


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
        """Everything that makes the comparison refused: controlled differences and missing requirements, those
        that change the measurement first and free-text notes last (see `said_order`)."""
        return tuple(sorted(self.refusals + self.requirement_failures, key=lambda d: is_free_text(d.pointer)))

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


# The groups whose difference changes what was measured, in the order a refusal names them: what was run (workload,
# served model, data, shape, scenario), then how (precision, batch, metric), then on what (system, software, its
# settings). The contract's other groups follow in its own order; free-text fields come after all of them.
SAID_FIRST = (
    "protocol_major",
    "phase",
    "workload",
    "model",
    "served_model",
    "dataset",
    "shape",
    "request_shape",
    "scenario",
    "sweep_mode",
    "quality_definition",
    "precision",
    "batch",
    "metric_definition",
    "steady_state",
    "system",
    "software_stack",
    "software_settings",
)
# A field holding a free-text note (the submitter's words, not a setting): never the first reason a refusal gives.
FREE_TEXT_FIELDS = frozenset({"notes", "note", "description", "comment", "comments", "reasons"})


def is_free_text(pointer: str) -> bool:
    """Whether the field at `pointer` is a free-text note or description ('/precision/quantization/notes')."""
    return any(part in FREE_TEXT_FIELDS for part in split_pointer(pointer))


def said_order(differences: Sequence[FieldDifference]) -> tuple[FieldDifference, ...]:
    """`differences` as a refusal names them: those that change the measurement first (SAID_FIRST's groups, then
    the others), within a group a field before its details ('precision.weights' before 'precision.quantization.
    method'), free-text notes and descriptions last; otherwise as given (the contract's field order)."""
    rank = {group: i for i, group in enumerate(SAID_FIRST)}
    return tuple(
        sorted(
            differences,
            key=lambda d: (
                is_free_text(d.pointer),
                rank.get(d.group, len(SAID_FIRST)),
                len(split_pointer(d.pointer)),
            ),
        )
    )


def _differences(
    per_doc: Sequence[Mapping[Path, tuple[Group | None, Any]]], role: str, names: Sequence[str] | None = None
) -> tuple[FieldDifference, ...]:
    out = []
    for path in sorted(set().union(*(d.keys() for d in per_doc))):
        values = [d[path][1] if path in d else None for d in per_doc]
        if same(values):
            continue
        group = next(d[path][0] for d in per_doc if path in d)
        out.append(_difference(path, group, role, tuple(display(v) for v in values), names))
    return tuple(out)


def _difference(
    path: Path, group: Group | None, role: str, shown: tuple[str, ...], names: Sequence[str] | None = None
) -> FieldDifference:
    name = field_name(path)
    return FieldDifference(
        pointer=join_pointer(path),
        field=name,
        group=group.id if group else "unlisted",
        label=group.label if group else "field not named in the contract",
        role=role,
        values=shown,
        words=difference_words(name, shown, names),
    )


def meets_requirements(doc: Mapping[str, Any], axis: str) -> bool:
    """Whether one run states every field `axis` requires (e.g. measured quality on the iso-quality axis)."""
    return not _requirement_failures([doc], known_axis(axis))


def _requirement_failures(
    docs: Sequence[Mapping[str, Any]], axis: str, names: Sequence[str] | None = None
) -> tuple[FieldDifference, ...]:
    out = []
    for req in contract().requirements_for(axis):
        values = [value_at(d, req.pointer) for d in docs]
        if all(v is not None for v in values):
            continue
        shown = tuple(display(v) if v is not None else "missing" for v in values)
        name = field_name(split_pointer(req.pointer))
        out.append(
            FieldDifference(
                pointer=req.pointer,
                field=name,
                group="requirement",
                label=req.label,
                role="required",
                values=shown,
                words=f"{difference_words(name, shown, names)} (required on the {axis} axis: {req.reason})",
            )
        )
    return tuple(out)


def check(docs: Sequence[Mapping[str, Any]], axis: str | None = None, names: Sequence[str] | None = None) -> Verdict:
    """Whether `docs` (valid submissions) may be compared along `axis`, with every differing field. `names` are
    the runs' names in the words (the registry passes "run <id>"), else their positions.

    Comparable exactly when no controlled field differs and every requirement of the axis holds. Raises
    ComparabilityError for an unknown axis or fewer than two runs.
    """
    axis = known_axis(axis or contract().default_axis)
    docs = list(docs)
    if len(docs) < 2:
        raise ComparabilityError(f"a comparison needs at least 2 runs, got {len(docs)}")
    rules = rules_for(docs)
    classified = [classify(d, rules, axis) for d in docs]
    by_role = {role: _differences([c[role] for c in classified], role, names) for role in ROLES}
    failures = _requirement_failures(docs, axis, names)
    return Verdict(
        axis=axis,
        contract_version=contract().version,
        comparable=not by_role["controlled"] and not failures,
        refusals=said_order(by_role["controlled"]),
        requirement_failures=failures,
        disclosures=by_role["disclosed"],
        subject_differences=by_role["subject"],
    )
