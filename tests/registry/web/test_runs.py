"""A run's page: its document, statistics and distribution, and its withdrawal by an admin only."""

from __future__ import annotations

from typing import Any

import pytest

from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_the_run_page_shows_digest_audit_entry_comparable_runs_and_raw_json(viewer: Any, fleet: dict[str, Any]) -> None:
    html = signed_in(viewer).get(f"/runs/{fleet['a'].pk}/").content.decode()
    assert fleet["a"].digest in html
    assert "run.submitted" in html
    assert f'href="/runs/{fleet["b"].pk}/"' in html and f'href="/runs/{fleet["c"].pk}/"' in html
    assert "&quot;protocol&quot;: &quot;benchreg.submission/1.0&quot;" in html
    for section in ("Workload", "Scenario", "Precision", "System", "Software", "Conditions", "Metrics"):
        assert f">{section}</h2>" in html


def test_the_run_page_draws_the_latency_distribution_when_the_run_has_samples(
    viewer: Any, submitter: Any, server_example: dict[str, Any]
) -> None:
    from registry.services.submissions import submission_create

    count = server_example["metrics"]["latency_ms"]["count"]
    server_example["samples"] = {"latency_ms": {"unit": "ms", "repetitions": [[700.0 + i % 500 for i in range(count)]]}}
    run, _ = submission_create(document=server_example, submitted_by=submitter)
    html = signed_in(viewer).get(f"/runs/{run.pk}/").content.decode()
    assert "<svg" in html and "Latency distribution of the raw samples" in html


def test_a_viewer_cannot_withdraw_a_run(viewer: Any, fleet: dict[str, Any]) -> None:
    response = signed_in(viewer).post(f"/runs/{fleet['a'].pk}/withdraw", {"reason": "I do not like it"})
    assert response.status_code == 404
    from registry.models import Withdrawal

    assert not Withdrawal.objects.exists()


def test_an_admin_withdraws_a_run_and_the_catalogue_hides_it(admin_user: Any, fleet: dict[str, Any]) -> None:
    client = signed_in(admin_user)
    response = client.post(f"/runs/{fleet['a'].pk}/withdraw", {"reason": "driver bug"})
    assert response.status_code == 302
    assert "driver bug" in client.get(f"/runs/{fleet['a'].pk}/").content.decode()
    assert f'href="/runs/{fleet["a"].pk}/"' not in client.get("/").content.decode()
    assert f'href="/runs/{fleet["a"].pk}/"' in client.get("/?withdrawn=1").content.decode()


def test_the_figures_an_importer_traced_are_listed_with_their_source_fields(viewer: Any, submitter: Any) -> None:
    from registry.services.submissions import submission_create
    from tests.protocol.serving_law import sweep_docs

    doc = sweep_docs((1,))[0]
    fields = {"/metrics/throughput/value": "profile_export_aiperf.json: output_token_throughput.avg (tokens/sec)",
              "/metrics/ttft_ms/p99": "profile_export_aiperf.json: time_to_first_token.p99 (ms)"}  # fmt: skip
    doc["provenance"]["origin"] = {"kind": "serving-benchmark", "fields": fields}
    run, _ = submission_create(document=doc, submitted_by=submitter)
    html = signed_in(viewer).get(f"/runs/{run.pk}/").content.decode()
    assert "2 figures of this run traced to the field of the file they were read from" in html
    assert "<code>/metrics/ttft_ms/p99</code></th><td>profile_export_aiperf.json: time_to_first_token.p99 (ms)" in html
    assert "origin.fields" not in html.split('id="raw"')[0]  # not folded into the provenance facts as well


def _imported_run_page(viewer: Any, tree: Any) -> str:
    """Import an authored MLPerf tree through the command and return the stored run's page."""
    from django.core.management import call_command

    from registry.models import Submission

    call_command("import_results", "mlperf", str(tree), "--no-progress")
    run = Submission.objects.order_by("-pk").first()
    return signed_in(viewer).get(f"/runs/{run.pk}/").content.decode()


def test_the_run_page_says_an_mlperf_result_passed_its_audit_tests(viewer: Any, tmp_path: Any) -> None:
    from tests.registry.importers.mlperf.audit_tree import passing, resnet_result

    html = _imported_run_page(viewer, resnet_result(tmp_path, audits=passing()))
    assert "Passed its audit tests (TEST01, TEST04)." in html
    assert "TEST01: passed (accuracy, performance)" in html and "callout--danger" not in html


def test_the_run_page_names_the_failed_and_the_missing_audit_tests(viewer: Any, tmp_path: Any) -> None:
    from tests.registry.importers.mlperf.audit_tree import PERFORMANCE_FAIL, resnet_result

    tree = resnet_result(tmp_path, audits={"TEST04": {"verify_performance.txt": PERFORMANCE_FAIL}})
    html = _imported_run_page(viewer, tree)
    assert "Failed its audit test TEST04. Missing the audit test the round requires: TEST01." in html
    assert "TEST04: failed (performance)" in html
    assert "TEST01: missing (required by the round&#x27;s rules" in html
    assert 'id="audit-tests" class="callout callout--danger"' in html


def test_the_run_page_says_which_audit_verdict_it_does_not_judge(viewer: Any, tmp_path: Any) -> None:
    from tests.registry.importers.mlperf.audit_tree import TEST01_ACCURACY_FAIL, passing, resnet_result

    audits = passing()
    audits["TEST01"]["verify_accuracy.txt"] = TEST01_ACCURACY_FAIL
    html = _imported_run_page(viewer, resnet_result(tmp_path, audits=audits))
    assert "Audit test TEST01 not judged here. Passed TEST04." in html
    assert "TEST01: not judged (its deterministic-mode accuracy check did not pass" in html


def test_the_run_page_says_which_part_of_an_incomplete_audit_test_it_read(viewer: Any, tmp_path: Any) -> None:
    from tests.registry.importers.mlperf.audit_tree import passing, resnet_result

    audits = passing()
    del audits["TEST01"]["verify_performance.txt"]
    html = _imported_run_page(viewer, resnet_result(tmp_path, audits=audits))
    assert "Missing the audit test the round requires: TEST01. Passed TEST04." in html
    assert (
        "TEST01: incomplete (required by the round&#x27;s rules; a verdict file is missing; read: accuracy passed)"
        in html
    )


def test_a_run_with_no_audit_tests_shows_no_audit_section(viewer: Any, fleet: dict[str, Any]) -> None:
    assert 'id="audit-tests"' not in signed_in(viewer).get(f"/runs/{fleet['a'].pk}/").content.decode()
