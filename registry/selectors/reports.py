"""Reading reports, and the registry's word on the runs a report names (what a verifier asks of it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from registry.exceptions import NotFound
from registry.models import Report, Submission


def report_get(*, report_id: int) -> Report:
    report = Report.objects.select_related("comparison", "checkpoint").filter(pk=report_id).first()
    if report is None:
        raise NotFound(f"no report {report_id}")
    return report


def run_statuses(digests: Sequence[str], *, with_reasons: bool = True) -> dict[str, dict[str, Any]]:
    """For each digest this registry holds: {"exists": True, "id", "withdrawn": None | {"at", "by", "reason"}}.

    Digests it does not hold are absent. One query. `with_reasons=False` leaves out who withdrew and why (callers
    without the read scope learn only that, and when, a run was withdrawn).
    """
    out: dict[str, dict[str, Any]] = {}
    runs = Submission.objects.select_related("withdrawal").filter(digest__in=list(digests))
    for run in runs.only("id", "digest", "withdrawal"):  # the documents are not needed: never loaded or parsed
        withdrawal = getattr(run, "withdrawal", None)
        withdrawn = None
        if withdrawal is not None:
            withdrawn = {"at": withdrawal.withdrawn_at.isoformat()}
            if with_reasons:
                withdrawn.update(by=withdrawal.withdrawn_by_name, reason=withdrawal.reason)
        out[run.digest] = {"exists": True, "id": run.pk, "withdrawn": withdrawn}
    return out
