"""The comparability contract: which runs may be set side by side along an axis, and what differs.

The contract is data (schemas/comparability.v1.json), loaded once. For an axis (system, software,
precision) every field of a submission is governed by the most specific contract pointer above it, which
gives it a role: controlled (must be identical), subject (what the comparison is about), disclosed (may
differ, is shown) or ignored. Documents are flattened to leaves (JSON pointers to scalars or lists of
scalars); absent, null and empty are the same ("not stated"), and values are equal when their RFC 8785
canonical forms are, so 1 and 1.0 are equal while true and 1 are not.

`check` is symmetric and order-independent: the same runs in any order give the same differences (each
difference lists values in the order the runs were given). `compare` adds the statistics.

One module per concern: `definition` (the data file, loaded), `roles` (each field's role; projections, keys,
configurations), `verdict` (`check`), `words` (values, labels and sentences for readers) and `comparison`
(`compare`).
"""

from .comparison import beside, blocking_reasons, compare
from .definition import (
    CONTRACT_FILE,
    ROLES,
    ComparabilityError,
    Contract,
    Group,
    Requirement,
    contract,
    contract_document,
    known_versions,
)
from .roles import (
    CONFIGURATION_GROUPS,
    IDENTITY_GROUPS,
    Path,
    comparability_key,
    comparability_keys,
    configuration,
    controlled_projection,
    field_name,
    field_roles,
    key_and_configuration,
)
from .setting_words import setting_words
from .verdict import FieldDifference, Verdict, check, is_free_text, meets_requirements, said_order
from .words import (
    BLOCKER_WORDS,
    METRIC_WORDS,
    arm_labels,
    axis_label,
    blockers_in_brief,
    display,
    field_words,
    metric_words,
)

__all__ = [
    "BLOCKER_WORDS",
    "CONFIGURATION_GROUPS",
    "CONTRACT_FILE",
    "IDENTITY_GROUPS",
    "METRIC_WORDS",
    "ROLES",
    "ComparabilityError",
    "Contract",
    "FieldDifference",
    "Group",
    "Path",
    "Requirement",
    "Verdict",
    "arm_labels",
    "axis_label",
    "beside",
    "blockers_in_brief",
    "blocking_reasons",
    "check",
    "comparability_key",
    "comparability_keys",
    "compare",
    "configuration",
    "contract",
    "contract_document",
    "controlled_projection",
    "display",
    "field_name",
    "field_roles",
    "field_words",
    "is_free_text",
    "key_and_configuration",
    "known_versions",
    "meets_requirements",
    "metric_words",
    "said_order",
    "setting_words",
]
