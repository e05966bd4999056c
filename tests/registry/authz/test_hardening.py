"""Content-Security-Policy, sign-in lock-out, API throttles, the verification endpoint's limits, compose secrets."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.test import Client
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from registry.services.tokens import token_create

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = ROOT / "registry" / "templates"
pytestmark = pytest.mark.django_db


# --- Content-Security-Policy --------------------------------------------------------------------------------


def _directives(header: str) -> dict[str, list[str]]:
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


def test_every_html_page_carries_a_policy_without_inline_script(world: dict[str, Any]) -> None:
    admin = next(k for k in world["knocks"] if k.name == "admin")
    pages = [
        "/",
        f"/runs/{world['run'].pk}/",
        "/compare/",
        f"/comparisons/{world['comparison'].pk}/",
        "/agents/",
        "/jobs/",
        "/tokens/",
        "/admin/",
        "/admin/registry/job/",
        "/api/docs/",
        "/api/v1/protocol?format=api",
        "/no-such-page/",
    ]
    for path in pages:
        response = admin.web.get(path)
        assert "text/html" in response["Content-Type"], path
        policy = _directives(response["Content-Security-Policy"])
        assert policy["script-src"] == ["'self'"] and policy["object-src"] == ["'none'"], path
        assert policy["frame-ancestors"] == ["'none'"], path
        html = response.content.decode()
        inline = [
            m
            for m in re.finditer(r"<script(?P<attrs>[^>]*)>", html)
            if "src=" not in m["attrs"] and "application/json" not in m["attrs"]
        ]
        assert not inline, f"{path} has inline script: {inline[0].group(0)}"
    for path in ("/accounts/login/",):
        assert "script-src 'self'" in Client().get(path)["Content-Security-Policy"]


def test_the_swagger_page_loads_its_start_up_script_as_a_file() -> None:
    html = Client().get("/api/docs/").content.decode()
    script = re.search(r'<script src="([^"]*script=[^"]*)"', html)
    assert script is not None
    response = Client().get(script.group(1).replace("&amp;", "&"))
    assert response.status_code == 200 and "SwaggerUIBundle" in response.content.decode()


def test_no_template_has_inline_script_or_event_handler_attributes() -> None:
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        for match in re.finditer(r"<script(?P<attrs>[^>]*)>", text):
            if "src=" not in match["attrs"] and "application/json" not in match["attrs"]:
                offenders.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
        offenders += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in re.finditer(r"\son[a-z]+\s*=", text)]
        offenders += [f"{path.relative_to(ROOT)}: javascript: URL" for _ in re.finditer("javascript:", text)]
    assert not offenders, offenders


# --- sign-in lock-out (django-axes) --------------------------------------------------------------------------


def _sign_in(client: Client, username: str, password: str) -> Any:
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_wrong_passwords_lock_the_account_and_the_right_one_then_fails_with_a_clear_message(
    django_user_model: Any, settings: Any
) -> None:
    django_user_model.objects.create_user("mallory-target", password="the-right-password-1")
    limit = settings.AXES_FAILURE_LIMIT
    attempts = [_sign_in(Client(REMOTE_ADDR=f"198.51.100.{i}"), "mallory-target", f"guess-{i}") for i in range(limit)]
    assert all(r.status_code == 200 for r in attempts[:-1])  # the form again, "did not match"
    locked = _sign_in(Client(REMOTE_ADDR="203.0.113.9"), "mallory-target", "the-right-password-1")
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    html = locked.content.decode()
    assert "Too many failed sign-ins" in html and "_auth_user_id" not in locked.client.session
    assert "script-src 'self'" in locked["Content-Security-Policy"]


def test_one_address_guessing_many_accounts_is_locked_out_too(django_user_model: Any, settings: Any) -> None:
    django_user_model.objects.create_user("innocent", password="the-right-password-2")
    attacker = Client(REMOTE_ADDR="192.0.2.66")
    for i in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(attacker, f"user-{i}", "guess")
    assert _sign_in(attacker, "innocent", "the-right-password-2").status_code == 429
    signed_in = _sign_in(Client(REMOTE_ADDR="192.0.2.67"), "innocent", "the-right-password-2")
    assert signed_in.status_code == 302  # the account itself is not locked; that address is


def test_a_good_sign_in_resets_the_count(django_user_model: Any, settings: Any) -> None:
    django_user_model.objects.create_user("forgetful", password="the-right-password-3")
    client = Client(REMOTE_ADDR="192.0.2.80")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _sign_in(client, "forgetful", "typo")
    assert _sign_in(client, "forgetful", "the-right-password-3").status_code == 302
    client.post("/accounts/logout/")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _sign_in(client, "forgetful", "typo")
    assert _sign_in(client, "forgetful", "the-right-password-3").status_code == 302


def test_api_tokens_keep_working_for_a_locked_out_account_and_address(django_user_model: Any, settings: Any) -> None:
    """Tokens never go through the password check, so a lock-out neither blocks nor counts them."""
    user = django_user_model.objects.create_user("scripted", password="the-right-password-4")
    plain = token_create(user=user, name="s", scopes="read")[1]
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(Client(REMOTE_ADDR="192.0.2.90"), "scripted", "typo")
    api = APIClient(REMOTE_ADDR="192.0.2.90")
    api.credentials(HTTP_AUTHORIZATION=f"Token {plain}")
    assert api.get("/api/v1/submissions").status_code == 200
    api.credentials(HTTP_AUTHORIZATION="Token brt_wrong")
    assert api.get("/api/v1/submissions").status_code == 401


# --- API throttles -------------------------------------------------------------------------------------------


@pytest.fixture
def tight_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    """DRF reads the rates once at import; the defaults come from the environment (see the settings test)."""
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "3/min", "user": "4/min", "verify": "2/min"})


def test_too_many_requests_is_429_with_retry_after_in_problem_json(tight_rates: None, user: Any) -> None:
    anonymous = APIClient(REMOTE_ADDR="192.0.2.10")
    statuses = [anonymous.get("/api/v1/protocol").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    throttled = anonymous.get("/api/v1/protocol")
    assert throttled["Content-Type"] == "application/problem+json" and int(throttled["Retry-After"]) > 0
    body = throttled.json()
    assert body["status"] == 429 and body["code"] == "throttled" and "available in" in body["detail"]
    assert APIClient(REMOTE_ADDR="192.0.2.11").get("/api/v1/protocol").status_code == 200  # per address
    api = APIClient(REMOTE_ADDR="192.0.2.10")
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user, name='t', scopes='read')[1]}")
    assert [api.get("/api/v1/protocol").status_code for _ in range(5)][-1] == 429  # per user, its own budget


def test_report_verification_is_throttled_on_its_own_scope(tight_rates: None) -> None:
    client = APIClient(REMOTE_ADDR="192.0.2.20")
    statuses = [client.post("/api/v1/reports/verify", {}).status_code for _ in range(3)]
    assert statuses == [400, 400, 429]


def test_report_verification_refuses_a_large_upload_before_parsing_it(settings: Any) -> None:
    settings.BENCHREG_MAX_VERIFY_BYTES = 10_000
    from django.core.files.uploadedfile import SimpleUploadedFile

    big = SimpleUploadedFile("r.pdf", b"%PDF-1.7\n" + b"0" * 20_000, content_type="application/pdf")
    response = APIClient().post("/api/v1/reports/verify", {"file": big})
    assert response.status_code == 413 and response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "payload-too-large" and "10000 bytes" in response.json()["detail"]


def test_rates_and_limits_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "BENCHREG_DATA_DIR": str(tmp_path),
        "BENCHREG_THROTTLE_ANON": "7/hour",
        "BENCHREG_THROTTLE_VERIFY": "2/min",
        "BENCHREG_MAX_VERIFY_BYTES": "1234",
        "DJANGO_SETTINGS_MODULE": "registry.settings",
        "BENCHREG_LOGIN_FAILURE_LIMIT": "9",
    }
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "r = s.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']; "
        "print(r['anon'], r['verify'], s.BENCHREG_MAX_VERIFY_BYTES, s.AXES_FAILURE_LIMIT)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["7/hour", "2/min", "1234", "9"]


# --- docker-compose ------------------------------------------------------------------------------------------


def test_compose_refuses_to_start_without_a_secret_key_or_a_database_password() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    compose = yaml.safe_load(text)
    env = compose["x-registry"]["environment"]
    assert re.fullmatch(r"\$\{SECRET_KEY:\?[^}]+\}", env["SECRET_KEY"])
    assert "${POSTGRES_PASSWORD:?" in env["DATABASE_URL"]
    assert re.fullmatch(
        r"\$\{POSTGRES_PASSWORD:\?[^}]+\}", compose["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"]
    )
    # no fallback value anywhere for either secret: every use must be the refusing form
    for name in ("SECRET_KEY", "POSTGRES_PASSWORD", "S3_SECRET_KEY"):
        uses = re.findall(r"\$\{" + name + r"([^}]*)\}", text)
        assert uses and all(u.startswith(":?") for u in uses), (name, uses)
    # every service that runs the registry gets both (through the shared anchor)
    for name, service in compose["services"].items():
        # the agent (a lab machine) and the one-shot bucket creation run no registry code
        if service.get("image") == "benchreg:latest" and "environment" in service and name not in ("agent", "bucket"):
            assert "SECRET_KEY" in service["environment"], name
