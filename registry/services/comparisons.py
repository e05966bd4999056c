"""Comparing runs like for like. A refused comparison stores nothing and explains every blocking field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

import protocol
from protocol import comparability, statistics
from protocol.sizing import SizingError
from registry.choices import AuditKind, Trust
from registry.exceptions import RegistryError
from registry.models import Comparison, ComparisonRun, Submission
from registry.services.audit import audit_append


class NotComparable(RegistryError):
    """The runs differ in a field the contract controls for this axis (or miss what the axis requires)."""

    status = 422
    code = "not-comparable"


def _refusal_errors(verdict: comparability.Verdict) -> list[dict[str, Any]]:
    return [
        {
            "pointer": d.pointer,
            "code": "requirement-not-met" if d.role == "required" else "controlled-field-differs",
            "field": d.field,
            "label": d.label,
            "role": d.role,
            "values": list(d.values),
            "message": d.words,
        }
        for d in verdict.offending
    ]


def _check_usable(runs: Sequence[Submission]) -> None:
    if len(runs) < 2:
        raise RegistryError(
            "a comparison needs at least two runs",
            code="too-few-runs",
            errors=[{"pointer": "/runs", "code": "too-few-runs", "message": "give two or more runs"}],
        )
    _refuse_repeated(runs)
    _refuse_same_measurement(runs)
    examples = [(i, r) for i, r in enumerate(runs) if r.trust == Trust.EXAMPLE]
    # hand-written examples measure nothing: never evidence for a decision
    _refuse_runs(
        NotComparable,
        "example documents cannot be compared",
        "example-run",
        [(i, f"run {r.pk} is an example document (trust: example), not a measurement") for i, r in examples],
    )
    _refuse_withdrawn(runs)


def _refuse_repeated(runs: Sequence[Submission]) -> None:
    """One run twice is not two measurements: it would weigh double in every statistic."""
    first: dict[int, int] = {}
    repeated = [(i, first.setdefault(r.pk, i), r) for i, r in enumerate(runs) if first.setdefault(r.pk, i) != i]
    _refuse_runs(
        RegistryError,
        "a comparison names each run once",
        "duplicate-run",
        [(i, f"run {r.pk} is already /runs/{j} (by id or by digest)") for i, j, r in repeated],
    )


def _refuse_same_measurement(runs: Sequence[Submission]) -> None:
    """Two documents of one measurement (the same published files, read from two folders or by two importers) are
    one value, not two: comparing both would count it twice (protocol.measurement_identity)."""
    first: dict[str, Submission] = {}
    repeated = [
        (i, first[r.measurement], r)
        for i, r in enumerate(runs)
        if r.measurement and first.setdefault(r.measurement, r) is not r
    ]
    _refuse_runs(
        NotComparable,
        "a comparison counts each measurement once",
        "same-measurement",
        [
            (
                i,
                f"run {r.pk} and run {one.pk} are the same measurement (identical source files): keep one of them",
            )
            for i, one, r in repeated
        ],
    )


def _refuse_withdrawn(runs: Sequence[Submission]) -> None:
    withdrawn = [(i, r) for i, r in enumerate(runs) if getattr(r, "withdrawal", None) is not None]
    _refuse_runs(
        NotComparable,
        "withdrawn runs cannot be compared",
        "withdrawn-run",
        [
            (i, f"run {r.pk} was withdrawn by {r.withdrawal.withdrawn_by_name}: {r.withdrawal.reason}")
            for i, r in withdrawn
        ],
    )


def _refuse_runs(error: type[RegistryError], message: str, code: str, offending: list[tuple[int, str]]) -> None:
    """Raise `error` naming each offending run (its position and why) when there is any."""
    if offending:
        raise error(
            message,
            code=code,
            errors=[{"pointer": f"/runs/{i}", "code": code, "message": words} for i, words in offending],
        )


def _baseline_position(runs: Sequence[Submission], baseline: Submission | int | str | None) -> int | None:
    """Where the baseline (a run, or its id or digest) stands among `runs`; a run outside them is a 400."""
    if baseline is None:
        return None
    ref = baseline.pk if isinstance(baseline, Submission) else baseline
    for i, run in enumerate(runs):
        if ref in (run.pk, run.digest):
            return i
    compared = ", ".join(str(r.pk) for r in runs)
    raise RegistryError(
        "the baseline must be one of the compared runs",
        code="invalid-baseline",
        status=422,
        errors=[
            {
                "pointer": "/baseline",
                "code": "invalid-baseline",
                "message": f"run {ref!r} is not among the runs compared ({compared})",
            }
        ],
    )


def _request_key(inputs: Mapping[str, Any]) -> str:
    """What makes two comparison requests the same question with the same answer: the inputs, the contract
    version and the statistical methods in force (their words change whenever a method does)."""
    return protocol.digest(
        {"inputs": dict(inputs), "contract": comparability.contract().version, "methods": statistics.METHODS}
    )


def comparison_create(
    *,
    runs: Sequence[Submission],
    axis: str,
    created_by: User,
    prices: Mapping[str, float] | None = None,
    currency: str = "USD",
    sizing: Mapping[str, Any] | None = None,
    baseline: Submission | int | str | None = None,
) -> tuple[Comparison, bool]:
    """Compare runs along `axis` and store the result. Returns (comparison, created).

    `baseline` (one of `runs`, or its id or digest) picks the baseline arm: the configuration every other is
    set against and the conclusion is about (default: the first run's). Raises NotComparable (422) with every
    offending field when the contract refuses, RegistryError (400) for unusable input. The same inputs give the
    same digest, so repeating a request returns the stored one.
    """
    _check_usable(runs)
    position = _baseline_position(runs, baseline)
    inputs = _inputs(runs, axis, prices, currency, sizing, position)
    request_key = _request_key(inputs)
    known = Comparison.objects.filter(request_key=request_key).order_by("id").first()
    if known is not None:  # the same question asked again costs a lookup, not a recomputation
        return known, False
    result = _compare(runs, axis, position, prices=prices, sizing=sizing, currency=currency)
    return _store_once(runs, axis, inputs, result, request_key, created_by)


def _store_once(
    runs: Sequence[Submission],
    axis: str,
    inputs: dict[str, Any],
    result: dict[str, Any],
    request_key: str,
    created_by: User,
) -> tuple[Comparison, bool]:
    """Store the comparison unless one with the same digest is stored (by now, or by a concurrent request)."""
    canonical = protocol.canonicalize({"inputs": inputs, "result": result})
    digest = protocol.digest_of(canonical)
    existing = Comparison.objects.filter(digest=digest).first()
    if existing is not None:
        return existing, False
    try:
        return comparison_store(runs, axis, inputs, result, canonical.decode(), digest, request_key, created_by), True
    except IntegrityError:
        existing = Comparison.objects.filter(digest=digest).first()
        if existing is None:
            raise
        return existing, False


def _inputs(
    runs: Sequence[Submission],
    axis: str,
    prices: Mapping[str, float] | None,
    currency: str,
    sizing: Mapping[str, Any] | None,
    position: int | None,
) -> dict[str, Any]:
    inputs = {
        "runs": [r.digest for r in runs],
        "axis": axis,
        "prices": dict(prices or {}),
        "currency": currency,
        "sizing": dict(sizing) if sizing else None,
    }
    if position is not None:
        inputs["baseline"] = runs[position].digest  # absent when not chosen: earlier comparisons keep their digest
    return inputs


def _verdict(documents: Sequence[Mapping[str, Any]], axis: str, names: Sequence[str]) -> comparability.Verdict:
    verdict = comparability.check(documents, axis, names)
    if not verdict.comparable:
        raise NotComparable(
            f"these runs do not answer the same question on the {axis} axis", errors=_refusal_errors(verdict)
        )
    return verdict


def _compare(runs: Sequence[Submission], axis: str, position: int | None, **options: Any) -> dict[str, Any]:
    """The comparison's result (`options`: prices, sizing, currency); NotComparable with every offending field
    when the contract refuses."""
    documents = [r.document for r in runs]
    names = [f"run {r.pk}" for r in runs]  # the registry's ids, as every page and report heads its columns
    try:
        verdict = _verdict(documents, axis, names)
        return comparability.compare(
            documents,
            axis,
            **options,
            baseline=position,
            names=names,
            digests=[r.digest for r in runs],
            verdict=verdict,
        )
    except (comparability.ComparabilityError, SizingError) as exc:
        # Only what the caller asked wrongly is a 400. Anything else raised inside the statistics is a bug:
        # it propagates, is logged with its trace and answers 500, never blaming the input.
        raise RegistryError(str(exc), code="invalid-comparison") from None


@transaction.atomic
def comparison_store(
    runs: Sequence[Submission],
    axis: str,
    inputs: dict[str, Any],
    result: dict[str, Any],
    canonical: str,
    digest: str,
    request_key: str,
    created_by: User,
) -> Comparison:
    comparison = Comparison.objects.create(
        digest=digest,
        request_key=request_key,
        axis=axis,
        inputs=inputs,
        result=result,
        canonical=canonical,
        created_by=created_by,
        created_by_name=created_by.get_username(),
        created_at=timezone.now(),
    )
    ComparisonRun.objects.bulk_create(
        [ComparisonRun(comparison=comparison, submission=run, position=i) for i, run in enumerate(runs)]
    )
    audit_append(
        kind=AuditKind.COMPARISON_CREATED,
        actor=created_by.get_username(),
        subject=digest,
        payload={"comparison": comparison.pk, "axis": axis, "runs": inputs["runs"]},
    )
    return comparison
