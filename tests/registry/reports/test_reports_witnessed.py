"""With witnesses configured, a report is issued under a checkpoint they cosigned, and its evidence carries that
cosigned note; without the quorum it is not issued."""

from __future__ import annotations

import pytest

from devtools.witnesses import new_key, witness
from protocol.cosignature import verify_cosignatures
from registry.audit.keys import checkpoint_key
from registry.choices import ReportStatus
from registry.services.reports import report_bytes, report_verify

from .conftest import make_report
from .test_reports_service import evidence_of

pytestmark = pytest.mark.django_db


def test_a_report_names_the_cosigned_checkpoint_it_was_issued_under(user, settings, tmp_path):
    with witness(tmp_path / "w", "witness.test/reports", checkpoint_key().vkey) as w:
        settings.BENCHREG_WITNESSES = [w.setting]
        settings.BENCHREG_WITNESS_QUORUM = 1
        report = make_report(user, 2)
        assert report.status == ReportStatus.READY, report.last_error
        pdf = report_bytes(report)
        evidence = evidence_of(pdf)
        assert evidence["checkpoint"]["id"] == report.checkpoint_id
        assert verify_cosignatures(evidence["checkpoint"]["note"].encode(), [w.vkey])
        assert report_verify(pdf=pdf).valid  # verifiers that know only the log key ignore the cosignature


def test_without_the_witness_quorum_no_report_is_issued(user, settings, tmp_path):
    _, stranger = new_key(tmp_path, "witness.test/gone")
    settings.BENCHREG_WITNESSES = [f"http://127.0.0.1:9 {stranger}"]  # nobody listens on the discard port
    settings.BENCHREG_WITNESS_TIMEOUT_S = 2
    settings.BENCHREG_WITNESS_QUORUM = 1
    report = make_report(user, 2)
    assert report.status == ReportStatus.FAILED
    assert "0 witness cosignature(s), the quorum is 1" in report.last_error
