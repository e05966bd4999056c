"""Migration 0008_authz: script accounts that submitted before the policy keep submitting; nobody else gains."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Group

from registry import policy
from registry.services.tokens import token_create, token_revoke

pytestmark = pytest.mark.django_db
migration = importlib.import_module("registry.migrations.0008_authz")


def test_only_group_less_script_accounts_with_live_submit_tokens_become_submitters(
    django_user_model: Any, world: dict[str, Any]
) -> None:
    script = django_user_model.objects.create_user("old-lab-script")
    token_create(user=script, name="ci", scopes="submit,read")
    reader = django_user_model.objects.create_user("old-reader")
    token_create(user=reader, name="r", scopes="read")
    retired = django_user_model.objects.create_user("retired-script")
    token_revoke(token=token_create(user=retired, name="old", scopes="submit")[0], actor="test")
    viewer = world["viewer"]
    token_create(user=viewer, name="minted-through-the-hole", scopes="submit")

    migration.keep_script_accounts_submitting(apps, None)

    def roles(user: Any) -> set[str]:
        return set(django_user_model.objects.get(pk=user.pk).groups.values_list("name", flat=True))

    assert roles(script) == {"submitter"}
    assert roles(reader) == set() and roles(retired) == set()
    assert roles(viewer) == {"viewer"}  # a viewer gains nothing from a token minted through the old hole
    assert not Group.objects.get(name="submitter").user_set.filter(username__startswith="agent-").exists()
    assert policy.SUBMIT in policy.user_rights(django_user_model.objects.get(pk=script.pk))
