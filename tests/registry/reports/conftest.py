"""Report fixtures. Keys are generated once per session (an RSA TSA key takes a moment); one small report is
rendered once per session inside a transaction that is rolled back, and its bytes are shared by the tests that only
read or tamper with the file."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings

from devtools import documents
from registry.audit.keys import checkpoint_key
from registry.reports.signing import signing_identity
from tests.conftest import load_example
from verifier.report import load_certificates, verify_report
from verifier.verdict import Verdict

DECISION = "inference hardware for decoder-small, bf16, p99 TTFT under 500 ms at 200 requests/s"
PRICES = {"lab-h100-01": 3.0, "lab-h200-02": 4.5, "lab-mi300-01": 4.0}
SIZING = {
    "target_load": 200,
    "load_unit": "requests/s",
    "latency_objectives": [{"metric": "ttft_ms", "percentile": "p99", "max_ms": 500}],
}


def variant(system: str, throughput: float, seed: int | None = None, **edits: Any) -> dict[str, Any]:
    """The server example on another system; with `seed`, raw TTFT and throughput samples (so intervals exist)."""
    doc = documents.variant(load_example("inference-server-h100-bf16"), system, throughput, **edits)
    if seed is not None:
        rng = random.Random(seed)
        scale = 1260.8 / throughput
        doc["samples"] = {
            "ttft_ms": {
                "unit": "ms",
                "repetitions": [
                    [round(rng.lognormvariate(4.1, 0.25) * scale, 3) for _ in range(240)] for _ in range(3)
                ],
            },
            "throughput": {
                "unit": "tokens/s",
                "repetitions": [
                    [round(rng.gauss(throughput, throughput * 0.02), 2) for _ in range(20)] for _ in range(3)
                ],
            },
        }
        pooled = sorted(v for rep in doc["samples"]["ttft_ms"]["repetitions"] for v in rep)
        rank = {
            p: pooled[max(0, -(-q * len(pooled) // 100) - 1)]
            for p, q in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99))
        }
        doc["metrics"]["ttft_ms"].update(
            count=len(pooled), min=pooled[0], max=pooled[-1], mean=round(sum(pooled) / len(pooled), 3), **rank
        )
    return doc


def fleet_documents(n: int = 3) -> list[dict[str, Any]]:
    """`n` comparable runs on three systems (repetitions beyond three repeat a system)."""
    systems = [("lab-h100-01", 1260.8), ("lab-h200-02", 1530.0), ("lab-mi300-01", 1400.0)]
    docs = []
    for i in range(n):
        name, tput = systems[i % 3]
        docs.append(variant(name, tput * (1 + 0.01 * (i // 3)), seed=i, **{"software.driver.version": f"580.{i % 3}"}))
    return docs


def make_report(
    user: Any, n: int = 3, *, title: str = "Inference hardware for decoder-small", decision: str = DECISION
) -> Any:
    """Store `n` runs, compare them and render a report synchronously. Returns the report."""
    from registry.services.comparisons import comparison_create
    from registry.services.reports import report_render, report_request
    from registry.services.submissions import submission_create

    runs = [submission_create(document=d, submitted_by=user)[0] for d in fleet_documents(n)]
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=user, prices=PRICES, sizing=SIZING)
    report = report_request(comparison=comparison, title=title, decision=decision, requested_by=user)
    return report_render(report_id=report.pk)


@dataclass(frozen=True)
class Rendered:
    """A rendered report's bytes with what a verifier needs, and what the report should say."""

    pdf: bytes
    certificates: list[Any]
    log_keys: list[str]
    digests: list[str]
    evidence_digest: str
    decision: str

    def verify(self, pdf: bytes | None = None, **kwargs: Any) -> Verdict:
        options = {"certificates": self.certificates, "log_keys": self.log_keys, **kwargs}
        return verify_report(self.pdf if pdf is None else pdf, **options)


@pytest.fixture(scope="session")
def report_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("report-data")


@pytest.fixture(autouse=True)
def _report_settings(settings: Any, report_data_dir: Path) -> Path:
    """Every test signs with keys generated once for the session, in a temporary data dir (never the developer's)."""
    settings.DATA_DIR = report_data_dir
    settings.BENCHREG_CHECKPOINT_KEY = ""
    settings.BENCHREG_LOG_ORIGIN = "benchreg.test/audit"
    return report_data_dir


@pytest.fixture(scope="session")
def rendered(django_db_setup: Any, django_db_blocker: Any, report_data_dir: Path) -> Rendered:
    from django.contrib.auth import get_user_model

    from registry.models import AuditHead
    from registry.services.reports import report_bytes

    with (
        django_db_blocker.unblock(),
        override_settings(
            DATA_DIR=report_data_dir, BENCHREG_CHECKPOINT_KEY="", BENCHREG_LOG_ORIGIN="benchreg.test/audit"
        ),
    ):
        with transaction.atomic():
            AuditHead.objects.get_or_create(id=1)
            user = get_user_model().objects.create_user("report-fixture", password="pw-for-tests-only")
            report = make_report(user)
            assert report.status == "ready", report.last_error
            pdf = report_bytes(report)
            digests = [m.submission.digest for m in report.comparison.members.order_by("position")]
            evidence_digest = report.evidence_digest
            transaction.set_rollback(True)
        certificates = load_certificates(signing_identity().public_pem())
        log_keys = [checkpoint_key().vkey]
    return Rendered(pdf, certificates, log_keys, digests, evidence_digest, DECISION)


def copy_doc(doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(doc)
