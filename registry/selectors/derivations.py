"""Runs derived from another run (MLPerf's inferred results, `provenance.origin.derivation`), linked to the measured
run they derive from: that run is found by the digest the derivation names.

The run page reads one run's derivation from its document (`derived_from`); list pages, which do not load
documents, annotate their single read of the page's rows with the derivation's source digest and the id of the
stored run holding it (`with_derivation`), so labelling costs no query of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KT

from protocol.derivation import derivation_of
from registry.models import Submission

FROM_DIGEST = "document__provenance__origin__derivation__from_digest"
KIND = "document__provenance__origin__derivation__kind"


@dataclass(frozen=True)
class DerivedFrom:
    """What a reader needs beside a derived run: the rule, the measured run's scenario, folder and digest, and the
    stored run with that digest (None when the registry does not hold it)."""

    rule: str
    from_scenario: str
    from_location: str
    from_digest: str
    run_id: int | None


def derived_from(document: Mapping[str, Any]) -> DerivedFrom | None:
    """The derivation of a stored run's document, with the measured run it names looked up; None for a measured run."""
    derivation = derivation_of(document)
    if derivation is None:
        return None
    source = (
        Submission.objects.filter(digest=derivation.from_digest).values_list("pk", flat=True).first()
        if derivation.from_digest
        else None
    )
    return DerivedFrom(
        derivation.rule, derivation.from_scenario, derivation.from_location, derivation.from_digest, source
    )


def with_derivation(runs: QuerySet[Submission]) -> QuerySet[Submission]:
    """`runs` with `derived_kind` (None for measured runs), `derived_from_digest` (None also when the measured run was
    not imported with it) and `derived_from_id` (the stored run holding that digest, None when absent) on each row,
    read in the same query."""
    holder = Submission.objects.filter(digest=OuterRef("derived_from_digest")).values("pk")[:1]
    return runs.annotate(derived_kind=KT(KIND), derived_from_digest=KT(FROM_DIGEST)).annotate(
        derived_from_id=Subquery(holder)
    )
