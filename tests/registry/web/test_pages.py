"""Every page renders for the roles that may see it, and answers 404 to those that may not."""

from __future__ import annotations

from typing import Any

import pytest

from registry.services.comparisons import comparison_create
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_sign_in(client: Any, fleet: dict[str, Any]) -> None:
    for url in ("/", f"/runs/{fleet['a'].pk}/", "/compare/", "/agents/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_the_sign_in_page_has_labelled_inputs(client: Any) -> None:
    html = client.get("/accounts/login/").content.decode()
    assert '<label for="id_username">Username</label>' in html
    assert '<label for="id_password">Password</label>' in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_a_viewer_sees_the_catalogue_a_run_the_builder_and_a_comparison(viewer: Any, fleet: dict[str, Any]) -> None:
    client = signed_in(viewer)
    comparison, _ = comparison_create(runs=[fleet["a"], fleet["b"]], axis="system", created_by=viewer)
    pages = {
        "/": "Benchmark catalogue",
        f"/runs/{fleet['a'].pk}/": "Steady state",
        "/compare/": "Build a comparison",
        f"/comparisons/{comparison.pk}/": "Request decision report",
    }
    for url, text in pages.items():
        response = client.get(url)
        assert response.status_code == 200, url
        assert text in response.content.decode(), url


def test_pages_use_one_h1_and_a_skip_link(viewer: Any, fleet: dict[str, Any]) -> None:
    html = signed_in(viewer).get(f"/runs/{fleet['a'].pk}/").content.decode()
    assert html.count("<h1") == 1
    assert 'href="#main"' in html and 'id="main"' in html


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


def test_admins_see_agents_and_jobs(admin_user: Any, operations: dict[str, Any]) -> None:
    client = signed_in(admin_user)
    agents = client.get("/agents/").content.decode()
    assert "gpu-01" in agents and "online" in agents
    jobs = client.get("/jobs/").content.decode()
    assert "Running" in jobs or "running" in jobs
    assert "CUDA out of memory &lt;b&gt;boom&lt;/b&gt;" in jobs
    assert "failed" in client.get("/jobs/?status=failed").content.decode()


@pytest.mark.parametrize("url", ["/agents/", "/jobs/"])
def test_a_viewer_gets_404_for_pages_of_other_roles(viewer: Any, url: str) -> None:
    assert signed_in(viewer).get(url).status_code == 404


def test_a_viewers_tokens_page_offers_read_only_and_refuses_submit(viewer: Any) -> None:
    client = signed_in(viewer)
    html = client.get("/tokens/").content.decode()
    assert 'value="read"' in html and 'value="submit"' not in html and 'value="admin"' not in html
    response = client.post("/tokens/", {"name": "sneaky", "scopes": ["submit"]})
    assert response.status_code == 200 and "brt_" not in response.content.decode()
    assert not viewer.api_tokens.exists()


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


def test_a_submitter_creates_and_revokes_a_token(submitter: Any) -> None:
    client = signed_in(submitter)
    html = client.post("/tokens/", {"name": "lab-h100-01", "scopes": ["submit"]}).content.decode()
    assert "brt_" in html and "cannot be shown again" in html
    token = submitter.api_tokens.get()
    assert client.post(f"/tokens/{token.pk}/revoke").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_another_users_token_is_not_found(submitter: Any, django_user_model: Any) -> None:
    from registry.services.tokens import token_create

    other = django_user_model.objects.create_user("other-lab", password="x-long-password")
    token, _ = token_create(user=other, name="theirs", scopes="submit")
    assert signed_in(submitter).post(f"/tokens/{token.pk}/revoke").status_code == 404


def test_unknown_objects_are_404(viewer: Any) -> None:
    client = signed_in(viewer)
    for url in ("/runs/999999/", "/comparisons/999999/", "/reports/999999/status", "/reports/999999/pdf"):
        assert client.get(url).status_code == 404, url
