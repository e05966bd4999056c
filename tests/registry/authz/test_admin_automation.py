"""What an admin does in the browser, done by a lab's automation: `benchreg admin ...` with an admin-scoped token,
over the registry's real WSGI application (httpx's WSGI transport: the same Django, database and policy)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import httpx
import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import CommandError, call_command
from django.db import close_old_connections

from registry import policy
from registry.admin_cli import admin_main
from registry.choices import JobStatus
from registry.models import Agent, Withdrawal
from registry.services.agents import agent_enroll

pytestmark = pytest.mark.django_db


def benchreg_admin(token: str, *argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    # As Django's own test client does: the request must not close the test's database connection.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        code = admin_main(
            ["--server", "http://testserver", "--token", token, *argv], transport=httpx.WSGITransport(app=WSGIHandler())
        )
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
    out, err = capsys.readouterr()
    return code, out.strip(), err.strip()


def create_token(**options: Any) -> str:
    out, err = StringIO(), StringIO()
    call_command("create_token", stdout=out, stderr=err, **options)
    return out.getvalue().strip()


@pytest.fixture
def admin_token(world: dict[str, Any]) -> str:
    return create_token(username="ada-admin", scopes="admin", name="automation")


def test_automation_enrols_revokes_withdraws_and_cancels(
    world: dict[str, Any], admin_token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, secret, _ = benchreg_admin(
        admin_token, "enrolment-token", "create", "--expires", "30m", "--note", "rack 4", capsys=capsys
    )
    assert code == 0 and secret.startswith("bre_")
    agent_enroll(enrolment_token=secret, name="rig-c", inventory={})  # the token it printed enrols a machine

    code, out, _ = benchreg_admin(admin_token, "agent", "list", capsys=capsys)
    assert code == 0 and "rig-c\toffline" in out

    code, out, _ = benchreg_admin(admin_token, "agent", "revoke", "rig-a", capsys=capsys)
    assert code == 0 and out.startswith("agent rig-a revoked")
    assert Agent.objects.get(name="rig-a").revoked_at is not None
    world["job"].refresh_from_db()
    assert world["job"].status == JobStatus.CANCELLED  # its unfinished jobs went with it

    code, out, _ = benchreg_admin(
        admin_token, "run", "withdraw", str(world["run"].pk), "--reason", "bad driver", capsys=capsys
    )
    assert code == 0 and Withdrawal.objects.get(submission=world["run"]).reason == "bad driver"

    code, _, err = benchreg_admin(admin_token, "job", "cancel", str(world["job"].pk), capsys=capsys)
    assert code == 1 and "409" in err  # already cancelled with its agent: refused, and says why


def test_automation_with_a_submitters_token_is_refused_with_the_reason(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    token = create_token(username="sam-submitter", scopes="read,submit")
    code, out, err = benchreg_admin(token, "enrolment-token", "create", capsys=capsys)
    assert code == 1 and out == "" and "refused (403" in err
    code, _, err = benchreg_admin(token, "agent", "revoke", str(world["agent"].pk), capsys=capsys)
    assert code == 1 and "refused (403" in err
    assert Agent.objects.get(name="rig-a").revoked_at is None


def test_an_unreachable_registry_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = admin_main(["--server", "http://127.0.0.1:9", "--token", "brt_x", "agent", "list"])
    assert code == 2 and "cannot reach" in capsys.readouterr().err


def test_create_token_sets_up_a_new_script_account_with_the_weakest_role_that_covers_it(world: dict[str, Any]) -> None:
    from django.contrib.auth import get_user_model

    create_token(username="lab-script", scopes="submit,read")
    assert policy.user_roles(get_user_model().objects.get(username="lab-script")) == {"viewer", "submitter"}


def test_create_token_never_raises_an_existing_account_unasked(world: dict[str, Any]) -> None:
    with pytest.raises(CommandError, match="may not use \\['admin'\\]; pass --grant-role"):
        create_token(username="vera-viewer", scopes="admin")
    with pytest.raises(CommandError, match="enrolment"):
        create_token(username="vera-viewer", scopes="agent")
    assert create_token(username="vera-viewer", scopes="read").startswith("brt_")
