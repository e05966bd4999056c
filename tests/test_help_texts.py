"""`benchreg COMMAND --help` says what every option does: an option listed bare (no help text) leaves its reader to
guess, or to read the code. Every command `benchreg` runs is held to it, its subcommands too; Django's own options
(--settings, --traceback, ...), which Django describes, and Django's own `migrate` are not ours to word.

The parsers are the ones `benchreg` builds: each command is run in this process as `benchreg COMMAND`, and stopped
at the moment it would parse its arguments, with the parser it built in hand (no subprocess, no command runs)."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Iterator

import pytest
from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand

from registry import cli

DJANGO_OWN = {"migrate"}  # Django's command under benchreg's name: Django words its options


class Built(BaseException):
    """Raised where a command would parse its arguments, holding the parser it built: a BaseException, so that no
    command takes it for one of its own errors."""


def client_parser(command: str) -> argparse.ArgumentParser:
    """The parser `benchreg COMMAND` builds, taken as it starts to parse."""

    def stop(parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise Built(parser)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_known_args", stop)
        patch.setattr(sys, "unraisablehook", sys.unraisablehook)  # main() installs its own: put back after
        before = signal.getsignal(signal.SIGINT)
        try:
            with pytest.raises(Built) as built:
                cli.main([command])
        finally:
            signal.signal(signal.SIGINT, before)  # main() takes SIGINT: put back after
    parser = built.value.args[0]
    assert isinstance(parser, argparse.ArgumentParser)
    return parser


def django_parser(command: str) -> argparse.ArgumentParser:
    """The parser of the Django command behind `benchreg COMMAND`, made as `benchreg` makes it (cli.django_main)."""
    name = cli.DJANGO_COMMANDS[command]
    return load_command_class(get_commands()[name], name).create_parser("benchreg", command)


def options(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    """(the command's name, as its usage line says it, and the option) for every option of `parser` and of each of
    its subcommands, however deep."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            worded = {choice.dest: choice for choice in action._choices_actions}  # each subcommand's help line
            for name, sub in action.choices.items():
                yield parser.prog, worded.get(name) or argparse.Action([name], name, help=None)
                yield from options(sub)
        else:  # an option, or a positional argument (named by its dest)
            yield parser.prog, action


def every_option() -> Iterator[tuple[str, argparse.Action]]:
    """Every option of every `benchreg` command but Django's own (-h and --help included: argparse words them)."""
    standard = {o for a in BaseCommand().create_parser("benchreg", "any")._actions for o in a.option_strings}
    for command in cli.COMMANDS:
        if command in DJANGO_OWN:
            continue
        if command not in cli.DJANGO_COMMANDS:
            yield from options(client_parser(command))
            continue
        for prog, action in options(django_parser(command)):
            if not standard & set(action.option_strings):
                yield prog, action


def test_every_option_argument_and_subcommand_of_every_command_says_what_it_does():
    found = {f"{prog} {'/'.join(action.option_strings) or action.dest}": action for prog, action in every_option()}
    # The walk reaches the options of subcommands, of both kinds of command, and of options given in a loop.
    assert {
        "benchreg submit --token",
        "benchreg run serving --kv-cache",
        "benchreg run serving --output-max",
        "benchreg agent start --loglevel",
        "benchreg admin run withdraw --reason",
        "benchreg witness keygen --out",
        "benchreg audit export --out",
        "benchreg create-token --username",
        "benchreg submit files",  # a positional argument
        "benchreg admin run",  # a subcommand's own help line
        "benchreg admin run withdraw run",
    } <= set(found)
    bare = sorted(name for name, action in found.items() if not (action.help or "").strip())
    assert not bare, "options, arguments or subcommands listed with no help text:\n" + "\n".join(bare)
