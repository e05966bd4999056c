"""`benchreg create-token --username NAME --scopes submit,read`: prints a new token and nothing else.

A token never carries more than its owner may do (registry.policy), so the account must hold a role that covers
the scopes. Run at the shell (which already has the database), the command sets up script accounts: a user it
creates gets the weakest role that covers the scopes; an existing user whose roles fall short is refused unless
`--grant-role` says to add that role. `admin` tokens need an admin account.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry import policy
from registry.exceptions import RegistryError
from registry.services.tokens import parse_scopes, token_create, user_for_token


class Command(BaseCommand):
    help = "Create an API token (creating the user if needed) and print it on stdout, alone."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", required=True, help="the account the token belongs to, created if missing")
        parser.add_argument("--scopes", default="submit,read", help="comma-separated: read, submit, admin")
        parser.add_argument("--name", default="cli", help="a label to recognise the token by")
        parser.add_argument(
            "--grant-role",
            action="store_true",
            help="add the user to the weakest role that covers the scopes if they lack it",
        )

    def handle(self, *args: Any, username: str, scopes: str, name: str, grant_role: bool, **options: Any) -> None:
        limit = get_user_model()._meta.get_field("username").max_length or 150
        if not username.strip() or "\x00" in username or len(username) > limit:
            raise CommandError(f"--username must name someone: 1 to {limit} characters, not blank, no NUL")
        try:
            wanted = set(parse_scopes(scopes))
            if policy.AGENT in wanted:
                raise CommandError("`agent` tokens come from enrolment: `benchreg enrolment-token create`")
            role = policy.least_role_for(wanted)
            is_new = not get_user_model().objects.filter(username=username).exists()
            user = user_for_token(username=username)
            self._grant_role_if_needed(user, username, wanted, role, may_grant=is_new or grant_role)
            _, plain = token_create(user=user, name=name, scopes=sorted(wanted), actor="benchreg create-token")
        except RegistryError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(plain)

    def _grant_role_if_needed(self, user: Any, username: str, wanted: set[str], role: str, *, may_grant: bool) -> None:
        """Give the user `role` when the scopes need rights they lack: always for a new user, else with
        --grant-role (else refuse)."""
        missing = wanted - policy.user_rights(user)
        if missing:
            if not may_grant:
                held = ", ".join(sorted(policy.user_roles(user))) or "none"
                raise CommandError(
                    f"user {username} (roles: {held}) may not use {sorted(missing)}; pass "
                    f"--grant-role to make them a {role}, or ask for fewer scopes"
                )
            user.groups.add(Group.objects.get_or_create(name=role)[0])
            self.stderr.write(f"user {username} now has the role {role}")
