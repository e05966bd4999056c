"""What a stored comparison concludes today: its stored conclusion, unless a run was withdrawn after it was made.

Stored comparisons are immutable (their digest covers the result), so a later withdrawal cannot change them;
every place that shows one (API detail, web page, report status) asks here instead, and shows "inconclusive"
with the withdrawal as the reason. Computed at display time from the runs' withdrawal records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from registry.models import Comparison, Submission
from registry.presentation.sentences import withdrawn_run, withdrawn_statement

INCONCLUSIVE = "inconclusive"


def comparison_members(comparison: Comparison) -> list[Submission]:
    """The comparison's runs in its order, with their withdrawal records, jobs and MLCommons' citations (two
    queries)."""
    members = (
        comparison.members.select_related("submission", "submission__withdrawal", "submission__job")
        .prefetch_related("submission__citations")
        .order_by("position")
    )
    return [m.submission for m in members]


def comparison_conclusion(comparison: Comparison, runs: Sequence[Submission] | None = None) -> dict[str, Any]:
    """The conclusion to show now: {"outcome", "statement", "reasons", "baseline", "focus", "stored_outcome"}.

    `stored_outcome` is what the stored result said; `outcome` differs from it only when a run has been withdrawn
    since (then "inconclusive", with one "withdrawn-run" reason per withdrawn run, first). A stored result from
    before conclusions existed gives outcome None unless a run was withdrawn.
    """
    runs = list(runs) if runs is not None else comparison_members(comparison)
    stored: Mapping[str, Any] = comparison.result.get("conclusion") or {}
    conclusion: dict[str, Any] = {
        "outcome": stored.get("outcome"),
        "statement": stored.get("statement"),
        "reasons": list(stored.get("reasons") or []),
        "baseline": stored.get("baseline"),
        "focus": list(stored.get("focus") or []),
        "stored_outcome": stored.get("outcome"),
    }
    withdrawn = [
        withdrawn_reason(comparison.result, i, run)
        for i, run in enumerate(runs)
        if getattr(run, "withdrawal", None) is not None
    ]
    if not withdrawn:
        return conclusion
    return {
        **conclusion,
        "outcome": INCONCLUSIVE,
        "reasons": [*withdrawn, *conclusion["reasons"]],
        "statement": withdrawn_statement([r["message"] for r in withdrawn]),
    }


def withdrawn_reason(result: Mapping[str, Any], position: int, run: Submission) -> dict[str, Any]:
    """The blocking reason a withdrawn run adds: code, message (who, when, why), run position and arm index."""
    w = run.withdrawal
    arm = next((a.get("index") for a in result.get("arms") or [] if position in (a.get("runs") or [])), None)
    return {
        "code": "withdrawn-run",
        "run": position,
        "arm": arm,
        "run_id": run.pk,
        "message": withdrawn_run(run.pk, w.withdrawn_at, w.withdrawn_by_name, w.reason),
    }
