"""Runs that were derived, not measured: `provenance.origin.derivation` (protocol 1.1).

A publisher may state a result it did not measure, computed by its own rule from a run it did measure: MLPerf's
inferred edge results (an Offline or MultiStream figure derived from the SingleStream run). Such a document is kept,
labelled and linked to its source run, but it repeats that run's measurement through a formula, so it is never
independent evidence: comparisons count no independent value for it (protocol.statistics.aggregate) and say so in a
caveat, and decisions do not rest on it (protocol.decisions.evidence). The registry asks `is_derived` for the same
answer wherever it counts runs.

Plain functions of the document: they read it defensively, so they can be asked of any stored document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# How each kind of derivation is said: the schema's closed list (provenance.origin.derivation.kind).
KIND_WORDS = {"mlperf-inferred": "inferred by MLPerf's rule"}


@dataclass(frozen=True)
class Derivation:
    """How a derived run was obtained: the publisher's rule, and the measured run it comes from (its scenario, its
    folder relative to the published tree and the digest of its document)."""

    kind: str
    rule: str
    from_scenario: str
    from_location: str
    from_digest: str

    def words(self) -> str:
        """One phrase for readers: what the number is and where it comes from."""
        how = KIND_WORDS.get(self.kind, f"derived ({self.kind})")
        run = self.from_digest or "(not imported with it)"
        return (
            f"{how} from the {self.from_scenario or 'measured'} run {run} "
            f"at {self.from_location or '(location not stated)'}: {self.rule or 'rule not stated'}"
        )


def derivation_of(doc: Mapping[str, Any]) -> Derivation | None:
    """The run's derivation, or None when the run was measured (no `provenance.origin.derivation`)."""
    found: Any = doc
    for key in ("provenance", "origin", "derivation"):
        found = found.get(key) if isinstance(found, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    fields = ("kind", "rule", "from_scenario", "from_location", "from_digest")
    return Derivation(*(str(found.get(name) or "") for name in fields))


def is_derived(doc: Mapping[str, Any]) -> bool:
    """Whether the run was derived from another run rather than measured: never independent evidence."""
    return derivation_of(doc) is not None
