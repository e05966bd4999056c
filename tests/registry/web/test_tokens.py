"""The tokens page: a user mints only the scopes they may use, and revokes only their own tokens."""

from __future__ import annotations

from typing import Any

import pytest

from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_a_viewers_tokens_page_offers_read_only_and_refuses_submit(viewer: Any) -> None:
    client = signed_in(viewer)
    html = client.get("/tokens/").content.decode()
    assert 'value="read"' in html and 'value="submit"' not in html and 'value="admin"' not in html
    response = client.post("/tokens/", {"name": "sneaky", "scopes": ["submit"]})
    assert response.status_code == 200 and "brt_" not in response.content.decode()
    assert not viewer.api_tokens.exists()


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
