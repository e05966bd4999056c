"""Reading comparisons and the runs comparable with a given one."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import QuerySet

from protocol import comparability
from registry.choices import Trust
from registry.exceptions import NotFound, RegistryError
from registry.models import Comparison, Submission
from registry.models.fields import MAX_ROW_ID
from registry.selectors.submissions import submission_list


def comparable_runs(
    *, run: Submission, axis: str, include_withdrawn: bool = False, include_examples: bool = True
) -> QuerySet[Submission]:
    """Every other run with the same comparability key on `axis`: one index lookup, newest first. Examples are
    listed (they are shown, marked) unless `include_examples` is False, for callers about to compare."""
    if axis not in comparability.contract().axes:
        raise RegistryError(
            f"unknown axis {axis!r}; choose from {', '.join(comparability.contract().axes)}", code="unknown-axis"
        )
    runs = submission_list().filter(**{Submission.KEY_COLUMNS[axis]: run.key_for(axis)}).exclude(pk=run.pk)
    if not include_examples:
        runs = runs.exclude(trust=Trust.EXAMPLE)
    return runs if include_withdrawn else runs.filter(withdrawal__isnull=True)


def runs_by_reference(*, refs: Sequence[int | str]) -> list[Submission]:
    """Runs named by id or digest, in the given order. Unknown references raise one error naming each."""
    ids = [r for r in refs if isinstance(r, int) and 0 < r <= MAX_ROW_ID]
    digests = [r for r in refs if isinstance(r, str)]
    found: dict[int | str, Submission] = {
        **{r.pk: r for r in Submission.objects.select_related("withdrawal").filter(pk__in=ids)},
        **{r.digest: r for r in Submission.objects.select_related("withdrawal").filter(digest__in=digests)},
    }
    missing = [
        {"pointer": f"/runs/{i}", "code": "unknown-run", "message": f"no run {ref!r} in this registry"}
        for i, ref in enumerate(refs)
        if ref not in found
    ]
    if missing:
        raise RegistryError("some runs do not exist", errors=missing, code="unknown-run", status=422)
    return [found[ref] for ref in refs]


def comparison_get(*, comparison_id: int) -> Comparison:
    comparison: Comparison | None = Comparison.objects.filter(pk=comparison_id).first()
    if comparison is None:
        raise NotFound(f"no comparison {comparison_id}")
    return comparison


def comparison_list() -> QuerySet[Comparison]:
    return Comparison.objects.defer("result", "canonical")
