"""Decision reports: request one (queued, rendered by a Celery task after commit), render and sign it, issue it.

Lifecycle: QUEUED -> RENDERING -> READY | FAILED. Each step is claimed with a conditional update, so running the
task twice, or late, does nothing the second time. Issuing order, and why:
  1. sign a "report" checkpoint of the audit log (it covers every run's `run.submitted` entry);
  2. build the evidence against it, render the PDF/A-3b with the evidence attached, sign it (PAdES);
  3. move the file into place, then in one transaction mark the report READY and append `report.issued` with
     the PDF's digest as subject.
A failed render leaves an unused checkpoint (harmless) and no `report.issued` entry; an issued report is itself in
the log, so later checkpoints prove that the registry issued exactly this file.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from cryptography.hazmat.primitives import hashes
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.core.files import File
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from protocol.decisions.candidate import normal_key
from protocol.decisions.evidence import configuration_key
from protocol.decisions.question import escape_pointer
from registry import dispatch
from registry.audit.keys import trusted_verifier_keys
from registry.choices import AuditKind, CheckpointReason, ReportStatus, Trust
from registry.exceptions import RegistryError
from registry.models import Checkpoint, Comparison, Report, Submission
from registry.reports import REASON_PREFIX
from registry.reports.context import report_context
from registry.reports.evidence import Evidence, evidence_build
from registry.reports.render import render_pdf
from registry.reports.signing import SigningIdentity, sign_pdf, signing_identity, trusted_certificates
from registry.selectors.reports import run_statuses
from registry.selectors.standing import comparison_members
from registry.services.audit import audit_append, checkpoint_sign
from registry.services.comparisons import comparison_create
from registry.services.witnesses import checkpoint_cosign
from registry.storage import local_path, reports_storage

if TYPE_CHECKING:
    from verifier.verdict import Verdict

log = logging.getLogger(__name__)
RENDER_TASK = "registry.tasks.reports.render_report"
MAX_TITLE = 200
MAX_DECISION = 2000


PENDING = (ReportStatus.QUEUED, ReportStatus.RENDERING)
REUSABLE = (ReportStatus.QUEUED, ReportStatus.RENDERING, ReportStatus.READY)
QUOTA_RETRY_AFTER_S = 60  # about one render: by then one of the requester's pending reports has usually finished


class TooManyPendingReports(RegistryError):
    """The requester has BENCHREG_REPORTS_PENDING_PER_PERSON reports queued or rendering already (429)."""

    status = 429
    code = "too-many-pending-reports"
    retry_after = QUOTA_RETRY_AFTER_S


def report_request(
    *,
    comparison: Comparison,
    title: str,
    decision: str,
    requested_by: User,
    prices: Mapping[str, float] | None = None,
    currency: str | None = None,
) -> Report:
    """Queue a report on `comparison`; it renders after the current transaction commits (eagerly without a broker).

    With `prices` that differ from the comparison's, the report is about the comparison of the same runs with those
    prices (stored like any comparison), so every cost it prints is in the stored, hashed result. Raises
    RegistryError for empty text, a refused comparison or a withdrawn run.

    Bounded work: a request identical to one of the requester's reports that is queued, rendering or ready (same
    comparison after pricing, title and decision) returns that report and queues nothing. Otherwise a requester
    with BENCHREG_REPORTS_PENDING_PER_PERSON reports queued or rendering is refused (TooManyPendingReports, 429
    with Retry-After). The requester's row is locked meanwhile, so concurrent requests of one person are counted
    one after the other.
    """
    title, decision = _text(title, "title", MAX_TITLE), _text(decision, "decision", MAX_DECISION)
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=requested_by.pk).exists()
        comparison = _priced(comparison, prices, currency, requested_by)
        _check_reportable(comparison, comparison_members(comparison))
        key = _dedup_key(requested_by, comparison, title, decision)
        existing = _reusable(key)
        if existing is not None:
            return existing
        _check_quota(requested_by)
        return _report_queue(comparison, title, decision, requested_by, key)


def _reusable(key: str) -> Report | None:
    """A report already issued for a decision stays that decision's own record (decisions link each report
    once), so only reports outside a decision are handed out again."""
    return (
        Report.objects.filter(dedup_key=key, status__in=REUSABLE, decision_record__isnull=True).order_by("-id").first()
    )


def report_quota_problem(requested_by: User) -> str | None:
    """Why `requested_by` may not queue another report now (BENCHREG_REPORTS_PENDING_PER_PERSON), in words; None
    when they may: the pages say it before a reader asks."""
    limit = settings.BENCHREG_REPORTS_PENDING_PER_PERSON
    pending = Report.objects.filter(requested_by=requested_by, status__in=PENDING).count()
    if pending < limit:
        return None
    return (
        f"you have {pending} reports queued or rendering; at most {limit} at once: request this one when one of "
        "them is ready or failed"
    )


def report_signing_problem() -> str | None:
    """Why the registry cannot sign a report now (its signing identity is configured but unusable), in words; None
    when it can. Loading the identity is cached, so the pages may ask before offering a report."""
    try:
        signing_identity()
    except (ImproperlyConfigured, OSError, ValueError) as exc:
        return f"the registry cannot sign reports now ({exc}): ask its administrator"
    return None


def _check_quota(requested_by: User) -> None:
    limit = settings.BENCHREG_REPORTS_PENDING_PER_PERSON
    pending = Report.objects.filter(requested_by=requested_by, status__in=PENDING).count()
    if pending >= limit:
        raise TooManyPendingReports(
            f"you have {pending} reports queued or rendering; at most {limit} at once "
            f"(BENCHREG_REPORTS_PENDING_PER_PERSON): request this one when one of them is ready or failed",
            errors=[
                {
                    "pointer": "",
                    "code": "too-many-pending-reports",
                    "message": f"{pending} pending, at most {limit}",
                }
            ],
        )


def _report_queue(comparison: Comparison, title: str, decision: str, requested_by: User, key: str) -> Report:
    """Store the queued report; its render is dispatched after the commit."""
    report = Report.objects.create(
        comparison=comparison,
        title=title,
        decision=decision,
        prices=dict(comparison.inputs.get("prices") or {}),
        currency=comparison.inputs.get("currency") or "USD",
        requested_by=requested_by,
        requested_by_name=requested_by.get_username(),
        created_at=timezone.now(),
        dedup_key=key,
    )
    # robust: with the broker down the report is still stored and answered as queued (202, never a 500
    # after the commit); reports_sweep dispatches it again once the broker is back.
    dispatch.after_commit(RENDER_TASK, report.pk)
    return report


def _dedup_key(user: User, comparison: Comparison, title: str, decision: str) -> str:
    """What makes two report requests the same request: who asked, about which stored comparison (its prices and
    currency are part of it), with which title and decision."""
    text = json.dumps([user.pk, comparison.pk, title, decision], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def report_render(*, report_id: int) -> Report | None:
    """Render, sign and issue a queued report. Safe to call twice: only the call that claims it does the work.

    Returns the report as it stands afterwards (None if it does not exist). A failure marks it FAILED with the
    reason in `last_error` and is logged; it is not raised, because the report row is where callers look.
    """
    claimed = Report.objects.filter(pk=report_id, status=ReportStatus.QUEUED).update(
        status=ReportStatus.RENDERING, started_at=timezone.now(), attempts=F("attempts") + 1
    )
    report = Report.objects.select_related("comparison", "checkpoint").filter(pk=report_id).first()
    if not claimed or report is None:
        return report
    try:
        _render_and_issue(report)
    except Exception as exc:
        log.exception("report %s failed", report_id)
        _mark_failed(report_id, exc)
    report.refresh_from_db()
    return report


def _render_and_issue(report: Report) -> None:
    runs = comparison_members(report.comparison)
    _check_reportable(report.comparison, runs)
    checkpoint = checkpoint_sign(reason=CheckpointReason.REPORT)
    _witnessed(checkpoint)
    identity = signing_identity()
    evidence = evidence_build(report=report, runs=runs, checkpoint=checkpoint, identity=identity)
    pdf = produce_pdf(evidence, identity)
    path = _store_file(report, pdf)
    _issue(report, pdf, path, evidence, checkpoint)


def _mark_failed(report_id: int, exc: Exception) -> None:
    message = exc.message if isinstance(exc, RegistryError) else f"{type(exc).__name__}: {exc}"
    Report.objects.filter(pk=report_id, status=ReportStatus.RENDERING).update(
        status=ReportStatus.FAILED, last_error=message[:2000], finished_at=timezone.now()
    )


def produce_pdf(evidence: Evidence, identity: SigningIdentity) -> bytes:
    """The signed PDF of an evidence document: render, attach, certify. Pure: no database access."""
    context = report_context(evidence.document, certificate=certificate_words(identity))
    context["evidence_digest"] = evidence.digest
    unsigned = render_pdf(context, evidence=evidence.canonical, evidence_digest=evidence.digest)
    return sign_pdf(unsigned, identity=identity, reason=REASON_PREFIX + evidence.digest)


def certificate_words(identity: SigningIdentity) -> dict[str, Any]:
    """The signing certificate as the signature page prints it."""
    cert = identity.certificate
    return {
        "subject": cert.subject.rfc4514_string(),
        "issuer": cert.issuer.rfc4514_string(),
        "fingerprint": cert.fingerprint(hashes.SHA256()).hex(":").upper(),
        "valid": f"{cert.not_valid_before_utc:%Y-%m-%d} to {cert.not_valid_after_utc:%Y-%m-%d}",
        "timestamped": identity.tsa_key is not None,
    }


def report_open(report: Report) -> File[bytes]:
    """The ready report's signed PDF, opened for reading from the reports storage (registry/storage.py).
    Raises RegistryError: 409 if it is not ready, 503 if the storage cannot give it now (nothing was lost: the
    digest of what was issued is in the audit log and on the report)."""
    if report.status != ReportStatus.READY or not report.pdf_path:
        raise RegistryError(f"report {report.pk} is {report.status}, not ready", status=409, code="report-not-ready")
    try:
        return reports_storage().open(report.pdf_path, "rb")
    except (OSError, BotoCoreError, ClientError) as exc:
        log.warning("report %s: its file %s cannot be read: %s", report.pk, report.pdf_path, exc)
        raise RegistryError(
            f"report {report.pk}'s file cannot be read from storage now; try again",
            status=503,
            code="storage-unavailable",
        ) from None


def report_bytes(report: Report) -> bytes:
    """The ready report's signed PDF."""
    with report_open(report) as fh:
        return bytes(fh.read())


def report_local_path(report: Report) -> Path | None:
    """Where the ready report's PDF lies on this host (None on object storage): for `benchreg demo`'s message."""
    return local_path(reports_storage(), report.pdf_path) if report.status == ReportStatus.READY else None


# ------------------------------------------------------------------------------------------ steps


def _text(value: str, name: str, limit: int) -> str:
    value = (value or "").strip()
    if not value or len(value) > limit:
        raise RegistryError(
            f"a report needs a {name} of 1 to {limit} characters",
            code=f"invalid-{name}",
            errors=[{"pointer": f"/{name}", "code": "invalid", "message": f"1 to {limit} characters"}],
        )
    return value


def report_prices(runs: Sequence[Submission], prices: Mapping[str, float]) -> dict[str, float]:
    """Hourly prices keyed as decisions key them (docs/decisions.md, `prices.system_hour`): a configuration
    '<accelerators>x <accelerator model>' ('8x H100', as the decision's candidates are keyed), or '*' for any
    system; a compared run's system name is still read, as the API keyed prices before. Returns the price per
    system-hour of each compared system (by system.name, the comparison's own key; a system's name beats its
    configuration, which beats '*').

    Every price is used or refused (DECISIONS.md, Inputs): one that matches no compared run is a 422 naming it
    and the keys that would match."""
    configurations = {normal_key(configuration_key(r.document)): configuration_key(r.document) for r in runs}
    systems = {
        str((r.document.get("system") or {}).get("name") or ""): normal_key(configuration_key(r.document)) for r in runs
    }
    refused = [k for k in prices if k != "*" and k not in systems and normal_key(k) not in configurations]
    if refused:
        would = ", ".join(repr(k) for k in sorted(set(configurations.values())))
        raise RegistryError(
            f"the price for {', '.join(repr(k) for k in refused)} matches no run of this comparison, so it cannot "
            f"be used; the runs' configuration keys are {would} (or '*' for any system)",
            code="price-matches-no-run",
            status=422,  # well formed, but it names nothing this comparison holds
            errors=[
                {"pointer": f"/prices/{escape_pointer(k)}", "code": "price-matches-no-run", "message": f"keys: {would}"}
                for k in refused
            ],
        )
    by_configuration = {normal_key(k): v for k, v in prices.items() if k != "*"}
    out = {}
    for name, key in systems.items():
        price = prices.get(name, by_configuration.get(key, prices.get("*")))
        if price is not None:
            out[name] = price
    return out


def _priced(comparison: Comparison, prices: Mapping[str, float] | None, currency: str | None, user: User) -> Comparison:
    inputs = comparison.inputs
    wanted_currency = currency or inputs.get("currency") or "USD"
    runs = comparison_members(comparison)
    if prices is not None:
        prices = report_prices(runs, prices)
    if (prices is None or dict(prices) == (inputs.get("prices") or {})) and wanted_currency == inputs.get("currency"):
        return comparison
    # The requester's baseline carries over to the re-priced comparison (absent: the first run's configuration).
    baseline = next((r for r in runs if r.digest == inputs.get("baseline")), None)
    priced, _ = comparison_create(
        runs=runs,
        axis=comparison.axis,
        created_by=user,
        currency=wanted_currency,
        prices=dict(prices if prices is not None else inputs.get("prices") or {}),
        sizing=inputs.get("sizing"),
        baseline=baseline,
    )
    return priced


def _check_reportable(comparison: Comparison, members: Sequence[Submission]) -> None:
    if not comparison.result.get("comparable"):
        raise RegistryError(
            f"comparison {comparison.pk} was refused: nothing to report", code="not-comparable", status=422
        )
    examples = [r for r in members if r.trust == Trust.EXAMPLE]
    # comparisons refuse them already; a report never rests on one, however it was stored
    _refuse_members(
        "a report cannot rest on example documents",
        "example-run",
        [f"run {r.pk} is an example document" for r in examples],
    )
    withdrawn = [r for r in members if getattr(r, "withdrawal", None) is not None]
    _refuse_members(
        "a report cannot rest on withdrawn runs",
        "withdrawn-run",
        [f"run {r.pk} was withdrawn: {r.withdrawal.reason}" for r in withdrawn],
    )


def _refuse_members(message: str, code: str, offending: list[str]) -> None:
    """A 422 naming each offending run of the comparison, when there is any."""
    if offending:
        raise RegistryError(
            message,
            code=code,
            status=422,
            errors=[{"pointer": "/comparison", "code": code, "message": words} for words in offending],
        )


def _store_file(report: Report, pdf: bytes) -> str:
    """Save the PDF in the reports storage; returns its name there (Report.pdf_path).

    The report is marked READY only after this returns, so a half-written file is never served; a name already
    taken (a render retried after its worker died) gets the storage's next free name, never overwrites."""
    name = f"report-{report.pk}-{hashlib.sha256(pdf).hexdigest()[:16]}.pdf"
    return reports_storage().save(name, ContentFile(pdf, name=name))


def _witnessed(checkpoint: Checkpoint) -> None:
    """With witnesses configured, a report is issued under a checkpoint they cosigned: at least
    BENCHREG_WITNESS_QUORUM of them, else the report fails naming what each witness answered."""
    if not settings.BENCHREG_WITNESSES:
        return
    cosigned, problems = checkpoint_cosign(checkpoint=checkpoint)
    if cosigned < settings.BENCHREG_WITNESS_QUORUM:
        raise RegistryError(
            f"checkpoint {checkpoint.pk} has {cosigned} witness cosignature(s), the quorum is "
            f"{settings.BENCHREG_WITNESS_QUORUM}: {'; '.join(problems) or 'no answer'}",
            code="witness-quorum",
        )


@transaction.atomic
def _issue(report: Report, pdf: bytes, path: str, evidence: Evidence, checkpoint: Checkpoint) -> None:
    digest = "sha256:" + hashlib.sha256(pdf).hexdigest()
    updated = Report.objects.filter(pk=report.pk, status=ReportStatus.RENDERING).update(
        status=ReportStatus.READY,
        pdf_path=path,
        pdf_digest=digest,
        pdf_bytes=len(pdf),
        evidence_digest=evidence.digest,
        checkpoint=checkpoint,
        checkpoint_size=checkpoint.size,
        finished_at=timezone.now(),
        last_error="",
    )
    if updated != 1:
        raise RegistryError(f"report {report.pk} changed state while rendering", code="report-race", status=409)
    _audit_issued(report, digest, evidence, checkpoint)


def _audit_issued(report: Report, digest: str, evidence: Evidence, checkpoint: Checkpoint) -> None:
    audit_append(
        kind=AuditKind.REPORT_ISSUED,
        actor=report.requested_by_name,
        subject=digest,
        payload={
            "report": report.pk,
            "comparison": report.comparison.digest,
            "evidence": evidence.digest,
            "checkpoint_size": checkpoint.size,
            "title": report.title,
        },
    )


# ------------------------------------------------------------------------------------------ sweep


def reports_sweep(*, stale_after: timedelta | None = None, max_attempts: int | None = None) -> dict[str, int]:
    """Nothing stays stuck: re-queue reports whose renderer died, give up on those that keep dying.

    A report RENDERING for longer than `stale_after` (default: the task's hard time limit plus a minute, so a
    live render is never taken away) lost its worker, e.g. to SIGKILL or OOM: it goes back to QUEUED and is
    dispatched again, until it has been claimed `max_attempts` times; then it is FAILED with the reason. A
    report QUEUED for longer than `stale_after` lost its task (the broker was down when it was requested) and
    is dispatched again. Safe to run concurrently and often: every change is a conditional update.
    Celery beat runs it (registry.tasks.reports.reports_sweep); `benchreg sweep` runs it by hand.
    """
    stale_after = stale_after if stale_after is not None else timedelta(seconds=settings.BENCHREG_REPORT_STALE_AFTER_S)
    max_attempts = max_attempts if max_attempts is not None else settings.BENCHREG_REPORT_MAX_ATTEMPTS
    cutoff = timezone.now() - stale_after
    stale = Report.objects.filter(status=ReportStatus.RENDERING, started_at__lt=cutoff)
    failed = _fail_stale(stale.filter(attempts__gte=max_attempts), cutoff)
    requeued = _requeue_stale(stale.filter(attempts__lt=max_attempts), cutoff)
    lost = list(
        Report.objects.filter(status=ReportStatus.QUEUED, created_at__lt=cutoff)
        .exclude(pk__in=requeued)
        .values_list("pk", flat=True)
    )
    _redispatch([*requeued, *lost])
    if failed or requeued or lost:
        log.warning(
            "reports sweep: %d failed for good, %d re-queued, %d re-dispatched", failed, len(requeued), len(lost)
        )
    return {"failed": failed, "requeued": len(requeued), "redispatched": len(lost)}


def _fail_stale(reports: QuerySet[Report], cutoff: datetime) -> int:
    """Reports whose renderer was lost too often are FAILED for good; returns how many."""
    failed = 0
    for report in reports:
        failed += Report.objects.filter(pk=report.pk, status=ReportStatus.RENDERING, started_at__lt=cutoff).update(
            status=ReportStatus.FAILED,
            finished_at=timezone.now(),
            last_error=f"rendering stopped without an answer {report.attempts} times (the worker was lost each "
            f"time, e.g. killed or out of memory); not retried again",
        )
    return failed


def _requeue_stale(reports: QuerySet[Report], cutoff: datetime) -> list[int]:
    """Reports whose renderer was lost go back to QUEUED; returns their ids."""
    requeued = []
    for pk in reports.values_list("pk", flat=True):
        if Report.objects.filter(pk=pk, status=ReportStatus.RENDERING, started_at__lt=cutoff).update(
            status=ReportStatus.QUEUED, last_error="re-queued: the previous renderer was lost"
        ):
            requeued.append(pk)
    return requeued


def _redispatch(pks: list[int]) -> None:
    for pk in pks:
        try:
            dispatch.send(RENDER_TASK, pk)
        except Exception as exc:  # the broker is down: the next sweep tries again
            log.warning("report %s: cannot dispatch (%s); the next sweep retries", pk, exc)


# --- verification ---------------------------------------------------------------------------------------------


def report_verify(*, pdf: bytes, with_reasons: bool = True) -> Verdict:
    """Verify a report PDF against this registry: its certificates, its audit-log keys and its runs."""
    from verifier.report import verify_report  # pyHanko's validation stack (~0.7 s) only when a report is verified

    return verify_report(
        pdf,
        certificates=trusted_certificates(),
        log_keys=list(trusted_verifier_keys()),
        registry=lambda digests: run_statuses(digests, with_reasons=with_reasons),
        max_stream_bytes=settings.BENCHREG_VERIFY_MAX_STREAM_BYTES,
        max_inflated_bytes=settings.BENCHREG_VERIFY_MAX_INFLATED_BYTES,
    )
