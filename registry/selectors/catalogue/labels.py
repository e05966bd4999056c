"""Comparable sets in words for readers: each set's question, unique across the registry, and the order in
which differences are named (root causes first). Presentation kept beside the reads it labels for now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.core.cache import cache

from protocol import comparability
from registry.models import CatalogueCell, Submission

from .query import CACHE_SECONDS, ComparableSet, cache_key_for, data_version


def base_label(row: Mapping[str, Any]) -> str:
    """A set's question in words, from the fields every catalogue reading has: "decoder-small · server · bf16 ·
    batch 8" ("batch —" where no batch size is stated)."""
    return f"{row['workload']} · {row['scenario']} · {row['precision']} · batch {row['batch'] or '—'}"


# The fields that make a question different, named first when two sets would otherwise read the same (and first in
# a refusal): phase, workload, scenario, quality target; then the rest in the contract's order.
ROOT_CAUSE_PREFIXES = (
    "/phase",
    "/workload/name",
    "/workload/version",
    "/workload/task",
    "/scenario/kind",
    "/scenario/quality_target",
    "/metrics/quality/metric",
    "/metrics/quality/target_ratio",
    "/metrics/quality/reference_precision",
    "/scenario",
)


RIVALS_READ = 12  # sets of one base label read to find what separates them; beyond, the key's digits do


def root_cause_order(differences: Iterable[Any]) -> list[Any]:
    """Differences (comparability.FieldDifference or their dicts) with the question-changing fields first, then
    the others in their given order; within the first group, in ROOT_CAUSE_PREFIXES order."""

    def rank(d: Any) -> int:
        pointer = d["pointer"] if isinstance(d, Mapping) else d.pointer
        return next(
            (i for i, p in enumerate(ROOT_CAUSE_PREFIXES) if pointer == p or pointer.startswith(p + "/")),
            len(ROOT_CAUSE_PREFIXES),
        )

    return sorted(differences, key=rank)  # stable: the rest keep the contract's order


def set_labels(sets: Iterable[ComparableSet], *, version: tuple[Any, ...] | None = None) -> dict[str, str]:
    """Each set's question in words, unique across the registry (withdrawn runs and filters included, so a label
    never changes with filters): "decoder-small · server · bf16 · batch 8", and where another set reads the same,
    the controlled field(s) that separate them in words, with this set's value: "… · steady state not reached".

    Which base labels several sets share is one DISTINCT read of the cells per data version; for those groups
    only, one run's document per set, checked with the comparability contract to name what differs. Cached per
    data version.
    """
    sets = list(sets)
    if not sets:
        return {}
    version = version if version is not None else data_version()
    cache_key = cache_key_for(version, "labels", sorted(s.key for s in sets))
    cached = cache.get(cache_key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    labels = {
        s.key: base_label(
            {"workload": s.workload, "scenario": s.scenario, "precision": s.precision, "batch": s.batch_size}
        )
        for s in sets
    }
    rivals = _shared_base_labels(version)
    groups = {(s.workload, s.scenario, s.precision, s.batch_size) for s in sets}
    for shape in groups & rivals.keys():
        labels.update(_separated(rivals[shape], labels))
    cache.set(cache_key, labels, CACHE_SECONDS)
    return labels


_SHAPE = ("workload_name", "scenario_kind", "precision_weights", "batch_size")


def _shared_base_labels(version: tuple[Any, ...]) -> dict[tuple[Any, ...], list[str]]:
    """{(workload, scenario, precision, batch): [keys]} for every base label that more than one set shares, over
    all cells (withdrawn included): one DISTINCT read of the cells per data version."""
    cache_key = cache_key_for(version, "shared-labels")
    groups = cache.get(cache_key)
    if groups is None:
        found: dict[tuple[Any, ...], list[str]] = {}
        for key, *values in CatalogueCell.objects.values_list("comparability_key", *_SHAPE).distinct():
            found.setdefault(tuple(values), []).append(key)
        groups = {values: sorted(keys) for values, keys in found.items() if len(keys) > 1}
        cache.set(cache_key, groups, CACHE_SECONDS)
    return groups  # type: ignore[no-any-return]


def _separated(keys: list[str], labels: dict[str, str]) -> dict[str, str]:
    """Labels for sets that share a base label: the fewest controlled fields (root causes first) that tell each
    apart from the others, named with this set's value."""
    mine = [k for k in keys if k in labels]
    read = list(dict.fromkeys([*mine, *keys]))[:RIVALS_READ]
    docs = []
    for key in read:
        run = Submission.objects.filter(comparability_key=key).only("document").order_by("id").first()
        docs.append(run.document if run is not None else {})
    differences = root_cause_order(comparability.check(docs, "system").refusals)
    out = {}
    for i, key in enumerate(read):
        if key not in labels:
            continue
        chosen: list[Any] = []
        for d in differences:
            same = [j for j in range(len(read)) if j != i and all(c.values[j] == c.values[i] for c in chosen)]
            if not same:
                break
            if any(d.values[j] != d.values[i] for j in same):
                chosen.append(d)
        words = [comparability.field_words(d.pointer, d.values[i]) for d in chosen] or [f"key {key[7:15]}"]
        out[key] = labels[key] + " · " + "; ".join(words)
    for key in mine:
        out.setdefault(key, labels[key] + f" · key {key[7:15]}")  # beyond RIVALS_READ: the key's own digits
    return out
