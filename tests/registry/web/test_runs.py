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
