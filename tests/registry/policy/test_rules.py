"""The pure rules, without a database: roles, rights and the door of an operation."""

from __future__ import annotations

from types import SimpleNamespace

from django.contrib.auth.models import AnonymousUser

from registry import policy
from registry.policy import actions


def _person(*rights: str) -> policy.Principal:
    return policy.Principal(user=SimpleNamespace(is_authenticated=True, pk=7), rights=frozenset(rights))


def test_every_action_has_exactly_one_rule() -> None:
    named = {v for k, v in vars(actions).items() if k.isupper() and isinstance(v, str)}
    assert named == set(policy.RULES)


def test_an_admin_group_implies_submitter_and_viewer_and_any_group_reads() -> None:
    assert policy.roles_from_groups(["admin", "lab"]) == {"admin", "submitter", "viewer"}
    assert policy.rights_of(policy.roles_from_groups([])) == {"read"}
    assert policy.rights_of([]) == frozenset()


def test_the_door_of_an_action_decided_per_object_opens_to_any_known_caller_only() -> None:
    nobody = policy.Principal(user=AnonymousUser(), rights=frozenset())
    for action in policy.DECIDED_PER_OBJECT:
        assert policy.admits(_person(), action), action
        assert not policy.admits(nobody, action), action


def test_any_other_door_asks_the_rule_itself() -> None:
    assert policy.admits(_person("read"), policy.RUN_READ)
    assert not policy.admits(_person("read"), policy.RUN_SUBMIT)
    assert policy.admits(policy.ANONYMOUS, policy.PROTOCOL_READ)
    assert policy.open_to_anyone(policy.REPORT_VERIFY) and not policy.open_to_anyone(policy.RUN_READ)
