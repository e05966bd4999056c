"""`benchreg enrolment-token create --expires 1h [--note TEXT]`: prints a single-use enrolment token, alone."""

from __future__ import annotations

import getpass
import re
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from registry.exceptions import RegistryError
from registry.services.agents import enrolment_token_create

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> timedelta:
    """'90s', '15m', '1h', '2d' (or plain seconds)."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhd]?)\s*", text)
    if match is None:
        raise CommandError(f"--expires takes a duration like 30m, 1h or 2d, not {text!r}")
    try:
        return timedelta(seconds=int(match.group(1)) * UNITS[match.group(2) or "s"])
    except OverflowError:  # past what a date can hold; the service words the bound on a lifetime it can read
        raise CommandError(f"--expires {text.strip()} is longer than any date can be") from None


class Command(BaseCommand):
    help = "Create a single-use, expiring enrolment token for `benchreg agent enroll` and print it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["create"], help="create: make one and print it")
        parser.add_argument("--expires", default="1h", help="lifetime: 30m, 1h, 2d (default 1h)")
        parser.add_argument("--note", default="", help="what it is for, e.g. the machine's name")

    def handle(self, *args: Any, action: str, expires: str, note: str, **options: Any) -> None:
        try:
            _, plain = enrolment_token_create(
                created_by=None, expires_in=parse_duration(expires), note=note, actor=f"cli:{getpass.getuser()}"
            )
        except RegistryError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(plain)
