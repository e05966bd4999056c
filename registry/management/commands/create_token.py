"""`manage.py create_token --username NAME --scopes submit,read`: prints a new token and nothing else."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry.exceptions import RegistryError
from registry.services.tokens import token_create, user_for_token


class Command(BaseCommand):
    help = "Create an API token (creating the user if needed) and print it on stdout, alone."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", required=True)
        parser.add_argument("--scopes", default="submit,read", help="comma-separated: submit, read, agent")
        parser.add_argument("--name", default="cli", help="a label to recognise the token by")

    def handle(self, *args: Any, username: str, scopes: str, name: str, **options: Any) -> None:
        try:
            user = user_for_token(username=username)
            _, plain = token_create(user=user, name=name, scopes=scopes, actor="manage.py create_token")
        except RegistryError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(plain)
