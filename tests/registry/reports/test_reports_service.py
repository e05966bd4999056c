"""Report lifecycle: queued, rendered after commit, ready with its digest and audit entry, or failed with a reason."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from weasyprint.urls import FatalURLFetchingError

from registry.choices import ReportStatus
from registry.models import AuditEntry, Report
from registry.reports import ATTACHMENT_NAME
from registry.reports.context import report_context
from registry.reports.render import offline_fetcher, render_html
from registry.services.reports import report_bytes, report_render, report_request, report_verify
from registry.services.submissions import submission_withdraw
from verifier.evidence import attachment

from .conftest import make_report

pytestmark = pytest.mark.django_db


def evidence_of(pdf: bytes) -> dict:
    import io

    from pyhanko.pdf_utils.reader import PdfFileReader

    return json.loads(attachment(PdfFileReader(io.BytesIO(pdf), strict=False), ATTACHMENT_NAME))


def test_a_requested_report_renders_after_commit_and_is_issued(user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        report = make_report(user, 2)  # make_report renders too; the on-commit task then finds nothing to do
    report.refresh_from_db()
    assert report.status == ReportStatus.READY and report.attempts == 1
    pdf = report_bytes(report)
    assert report.pdf_digest == "sha256:" + hashlib.sha256(pdf).hexdigest()
    issued = AuditEntry.objects.get(kind="report.issued")
    assert issued.subject == report.pdf_digest
    assert json.loads(issued.entry)["payload"]["evidence"] == report.evidence_digest
    assert report.checkpoint.reason == "report" and report.checkpoint_size <= issued.seq
    assert report_verify(pdf=pdf).valid


def test_the_task_enqueued_on_commit_renders_it(user, django_capture_on_commit_callbacks):
    from registry.services.comparisons import comparison_create
    from registry.services.submissions import submission_create

    from .conftest import fleet_documents

    runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(2)]
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        report = report_request(comparison=comparison, title="t", decision="d", requested_by=user)
    assert len(callbacks) == 1
    report.refresh_from_db()
    assert report.status == ReportStatus.READY, report.last_error


def test_rendering_twice_does_the_work_once(user):
    report = make_report(user, 2)
    again = report_render(report_id=report.pk)
    assert again.status == ReportStatus.READY and again.attempts == 1 and again.pdf_digest == report.pdf_digest
    assert AuditEntry.objects.filter(kind="report.issued").count() == 1
    assert report_render(report_id=999_999) is None


def test_a_failed_render_records_the_reason_and_issues_nothing(user, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the renderer ran out of ink")

    monkeypatch.setattr("registry.services.reports.produce_pdf", broken)
    report = make_report(user, 2)
    assert report.status == ReportStatus.FAILED
    assert "ran out of ink" in report.last_error and report.finished_at is not None
    assert not AuditEntry.objects.filter(kind="report.issued").exists()


def test_a_withdrawn_run_is_reported_by_verification(user):
    report = make_report(user, 2)
    pdf = report_bytes(report)
    run = report.comparison.members.order_by("position").first().submission
    submission_withdraw(submission=run, reason="power meter was miscalibrated", actor=user)
    verdict = report_verify(pdf=pdf)
    assert not verdict.valid
    reason = next(c for c in verdict.reasons if c.code == "runs-not-withdrawn")
    assert "power meter was miscalibrated" in reason.message and f"run {run.pk} " in reason.message  # by run id
    assert [r["withdrawn"] is not None for r in verdict.runs] == [True, False]
    hidden = report_verify(pdf=pdf, with_reasons=False)
    assert "miscalibrated" not in json.dumps(hidden.as_dict()) and not hidden.valid


def test_a_report_on_withdrawn_runs_is_refused(user):
    report = make_report(user, 2)
    run = report.comparison.members.first().submission
    submission_withdraw(submission=run, reason="wrong firmware", actor=user)
    with pytest.raises(Exception, match="withdrawn"):
        report_request(comparison=report.comparison, title="again", decision="d", requested_by=user)


def test_other_prices_make_a_priced_comparison_of_the_same_runs(user):
    report = make_report(user, 2)
    priced = report_request(
        comparison=report.comparison,
        title="t",
        decision="d",
        requested_by=user,
        prices={"lab-h100-01": 1.0, "lab-h200-02": 9.0},
    )
    assert priced.comparison_id != report.comparison_id
    assert priced.prices == {"lab-h100-01": 1.0, "lab-h200-02": 9.0}
    assert priced.comparison.inputs["runs"] == report.comparison.inputs["runs"]


def test_user_text_is_escaped(rendered):
    evidence = evidence_of(rendered.pdf)
    evidence["report"]["title"] = "<script>alert('t')</script>"
    evidence["report"]["decision"] = "<img src=x onerror=alert(1)> & more"
    context = report_context(evidence, certificate={"subject": "<b>x</b>"})
    html = render_html({**context, "evidence_digest": "sha256:0"})
    assert "<script>" not in html and "<img src=x" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt; &amp; more" in html


def test_rendering_refuses_every_network_fetch():
    import weasyprint

    fetcher = offline_fetcher(fail_on_errors=True)
    for url in ("http://example.com/x.png", "https://example.com/f.css", "file:///etc/passwd"):
        with pytest.raises(FatalURLFetchingError):
            fetcher.fetch(url)
    html = weasyprint.HTML(string='<img src="http://example.com/x.png">', url_fetcher=fetcher, base_url="data:,")
    with pytest.raises(FatalURLFetchingError):
        html.write_pdf()


def test_the_report_row_keeps_its_lifecycle_fields(user):
    report = make_report(user, 2)
    row = Report.objects.get(pk=report.pk)
    assert row.started_at <= row.finished_at and row.last_error == "" and row.pdf_bytes > 10_000


def test_the_verify_command_says_valid_or_invalid(user, tmp_path, capsys):
    from django.core.management import call_command

    from registry.audit.keys import checkpoint_key
    from registry.reports.signing import signing_identity

    report = make_report(user, 2)
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(report_bytes(report))
    call_command("verify_report", str(pdf))
    assert capsys.readouterr().out.splitlines()[1] == "VALID"
    cert = tmp_path / "cert.pem"
    cert.write_bytes(signing_identity().public_pem())
    call_command("verify_report", str(pdf), "--offline", "--cert", str(cert), "--log-key", checkpoint_key().vkey)
    out = capsys.readouterr().out
    assert "VALID" in out and "no registry consulted" in out
    pdf.write_bytes(pdf.read_bytes() + b"\n%%EOF\n")
    with pytest.raises(SystemExit) as exit_:
        call_command("verify_report", str(pdf), "--json")
    assert exit_.value.code == 1
    assert json.loads(capsys.readouterr().out)["verdict"] == "INVALID"


def test_the_verify_command_refuses_a_malformed_log_key_before_reading_the_report(tmp_path):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=r"'benchreg\.test/audit' is not an audit-log verifier key"):
        call_command("verify_report", str(tmp_path / "absent.pdf"), "--offline", "--log-key", "benchreg.test/audit")


def test_a_repriced_report_keeps_the_requesters_baseline(user):
    from registry.services.comparisons import comparison_create

    report = make_report(user, 2)
    runs = [m.submission for m in report.comparison.members.order_by("position")]
    chosen, _ = comparison_create(runs=runs, axis="system", created_by=user, baseline=runs[1])
    priced = report_request(
        comparison=chosen, title="t", decision="d", requested_by=user, prices={"lab-h100-01": 1.0, "lab-h200-02": 9.0}
    )
    assert priced.comparison.inputs["baseline"] == runs[1].digest
    assert priced.comparison.result["conclusion"]["baseline"] == chosen.result["conclusion"]["baseline"]


def test_the_demos_verify_command_needs_no_server(user, tmp_path):
    """`benchreg demo --no-serve` prints how to check its report; with no registry running, that must be enough."""
    import shlex
    import subprocess
    import sys

    from registry.management.commands.demo import Command

    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(report_bytes(make_report(user, 2)))
    command = shlex.split(Command()._verify_command(str(pdf)))
    assert command[:3] == ["benchreg", "verify", str(pdf)] and "--cert" in command and "--log-key" in command
    env = {k: v for k, v in os.environ.items() if k != "BENCHREG_SERVER"}
    # No server: the verifier would fail to reach 127.0.0.1:8000 if it needed one.
    done = subprocess.run(
        [sys.executable, "-m", "registry.cli", *command[1:]], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and "VALID" in done.stdout, done.stdout + done.stderr
