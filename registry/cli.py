"""The `benchreg` command. Client commands (submit, run, serve-model, serve-simulated, recompute-serving, agent, verify,
witness, admin) need no database and never start Django; the rest are Django commands, run under the names below.

  benchreg demo [--no-serve]          the main job: embedded registry with runs of this machine, served
  benchreg serve [--verbose]          the registry behind gunicorn (--verbose: the worker's and beat's log too)
  benchreg submit FILE...             send documents to a registry (--server/--token or BENCHREG_SERVER/_TOKEN);
                                      several files go as NDJSON batches (--batch-size), with a progress bar
  benchreg run inference|training|serving|collectives|distributed-training|scaling   the bundled runners;
                                      serving measures an OpenAI-compatible endpoint, collectives the interconnect
                                      (docs/interconnect.md), distributed-training DDP or FSDP on several ranks and
                                      scaling one configuration at 1, 2, 4, ... devices (docs/distributed-training.md)
  benchreg serve-model [--port 8000]  the bundled decoder behind an OpenAI-compatible streaming API (docs/serving.md)
  benchreg serve-simulated ...        an OpenAI-compatible endpoint with a known latency law (tests, bench)
  benchreg recompute-serving DOC.json   a serving level's figures recomputed from its per-request export, which
                                      must be the one it names (sha256); 0 when every figure agrees
  benchreg recompute-serving --server URL --token T --run ID   the same, from a run and its export kept by a registry
  benchreg create-token --username NAME --scopes submit,read   an API token for a script (printed alone)
  benchreg audit verify|checkpoint|export|show|sequence   check the audit log, sign/export checkpoints, number
                                      queued entries
  benchreg import mlperf PATH         import a published MLPerf Inference or Training tree
  benchreg import serving FILE... --deployment FILE   import serving tools' result files (aiperf, guidellm, vLLM
                                      bench serve), one run per load level (docs/serving.md)
  benchreg import nccl-tests LOG... [--system FILE]   store nccl-tests' logs as collective runs, each refused
                                      unless it reproduces its own printed figures (docs/interconnect.md)
  benchreg sweep                      once, what beat runs every minute: stuck reports, late jobs, silent agents
  benchreg migrate                    bring the database's tables up to date (demo does it itself)
  benchreg rebuild-catalogue [--check]  recompute the catalogue's counts from the runs
  benchreg enrolment-token create --expires 1h   a single-use token for `benchreg agent enroll` (on the server)
  benchreg admin enrolment-token|agent|run|job ...  admin automation over the API with an admin-scoped token
  benchreg agent enroll|start|status  run this machine as an enrolled agent (needs no database)
  benchreg witness keygen|serve      a C2SP tlog-witness that cosigns the audit log's checkpoints (docs/audit.md)
  benchreg verify REPORT.pdf [--cert PEM --log-key VKEY] [--server URL]   check a signed decision report with the
                                      registry's published certificate and log key only (no Django, no database)
  benchreg --version                  benchreg's version

`benchreg COMMAND --help` gives each command's options. Ctrl-C (or SIGINT) stops any command: it says
"interrupted: " and what it was doing, and exits with status 130.
"""

from __future__ import annotations

import _thread
import argparse
import difflib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

from runners import interrupts
from runners.arguments import add_registry_server
from runners.terminal import wrap

# Subcommands served by a Django management command of the same purpose.
DJANGO_COMMANDS = {
    "demo": "demo",
    "serve": "serve",
    "create-token": "create_token",
    "migrate": "migrate",
    "import": "import_results",
    "enrolment-token": "enrolment_token",
    "audit": "audit",
    "sweep": "sweep",
    "rebuild-catalogue": "rebuild_catalogue",
}  # operations: the sweeps beat runs, by hand or from cron


def submit_main(argv: list[str]) -> int:
    """`benchreg submit FILE...`: one line per file; exit 1 if any was rejected, 2 on connection errors."""
    from runners.client import RegistryClient

    args = _submit_args(argv)
    worst = 0
    # Retries (503 while the database restarts, connection errors) are safe: a run is known by its digest.
    # Each one is said on stderr; the file's line says how many it took.
    with RegistryClient(
        args.server, args.token, on_retry=lambda words: print(f"retrying: {words}", file=sys.stderr, flush=True)
    ) as client:
        if len(args.files) > 1:  # several files go as NDJSON batches
            return _submit_batches(client, args.files, args.batch_size)
        for path in args.files:
            worst = max(worst, _submit_one(client, path))
    return worst


def _submit_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchreg submit", description="Submit run documents to a registry.")
    parser.add_argument("files", nargs="+", type=Path, help="run documents (JSON), one or more")
    add_registry_server(parser)
    parser.add_argument(
        "--token", default=os.environ.get("BENCHREG_TOKEN"), help="API token with the submit scope (BENCHREG_TOKEN)"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=SUBMIT_BATCH,
        help=f"documents per request when several files are given (default {SUBMIT_BATCH})",
    )
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("no token: pass --token or set BENCHREG_TOKEN")
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    return args


def _submit_one(client: Any, path: Path) -> int:
    """Submit one file and print its line; returns its exit status."""
    try:
        outcome = client.submit_file(path)
    except OSError as exc:
        print(f"{path}: error: cannot read: {exc.strerror}")
        return 2
    print(outcome.line(str(path)))
    return {"stored": 0, "known": 0, "rejected": 1}.get(outcome.status, 2)


# --- `benchreg submit` of many files: NDJSON batches, a progress bar on a terminal ----------------------

SUBMIT_BATCH = 500  # documents per request (the registry's default limit is 2000 lines and 32 MiB)
SUBMIT_BATCH_BYTES = 16 * 1024 * 1024


def _submit_batches(client: Any, files: list[Path], batch_size: int) -> int:
    """Send `files` in batches, printing one line per file in order; exit status as for single files."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    worst = 0
    progress = Progress(
        TextColumn("submitting"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=len(files) <= batch_size,
    )
    with progress:
        task = progress.add_task("submit", total=len(files))
        for batch in _batches(files, batch_size):
            worst = max(worst, _submit_batch(client, batch))
            progress.advance(task, len(batch))
    return worst


def _submit_batch(client: Any, batch: list[tuple[Path, bytes | OSError]]) -> int:
    """Send one batch and print one line per file, in the order given; returns the worst exit status."""
    worst = 0
    bodies = [body for _, body in batch if isinstance(body, bytes)]
    outcomes = iter(client.submit_batch(bodies) if bodies else [])
    for path, body in batch:  # in the order given
        if isinstance(body, OSError):
            print(f"{path}: error: cannot read: {body.strerror}")
            worst = max(worst, 2)
            continue
        outcome = next(outcomes)
        print(outcome.line(str(path)))
        worst = max(worst, {"stored": 0, "known": 0, "rejected": 1}.get(outcome.status, 2))
    return worst


def _batches(files: list[Path], batch_size: int) -> Iterator[list[tuple[Path, bytes | OSError]]]:
    batch: list[tuple[Path, bytes | OSError]] = []
    size = 0
    for path in files:
        try:
            body: bytes | OSError = path.read_bytes()
        except OSError as exc:
            body = exc
        length = len(body) if isinstance(body, bytes) else 0
        if batch and (len(batch) >= batch_size or size + length > SUBMIT_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append((path, body))
        size += length
    if batch:
        yield batch


def django_main(command: str, argv: list[str]) -> int:
    """Run the Django command behind `benchreg COMMAND` under its user-facing name (usage lines and errors say
    `benchreg import`, never `import_results`); `--version` prints benchreg's version, not Django's. A command's
    refusal (CommandError) is printed as `benchreg COMMAND: error: ...`, wrapped to the terminal."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings")
    if command == "serve":  # the embedded default's worker process (registry.settings, docs/operations.md)
        os.environ.setdefault("BENCHREG_EMBEDDED_WORKER", "1")
    import django
    from django.core.management import get_commands, load_command_class
    from django.core.management.base import CommandError
    from django.db import DatabaseError, connections

    django.setup()
    name = DJANGO_COMMANDS[command]
    handler = load_command_class(get_commands()[name], name)
    handler.get_version = lambda: f"benchreg {version()}"  # type: ignore[method-assign]  # not Django's
    handler._called_from_command_line = True  # type: ignore[attr-defined]  # usage errors: usage, exit 2
    options = vars(handler.create_parser("benchreg", command).parse_args(argv))
    args = options.pop("args", ())
    try:
        handler.execute(*args, **options)
    except (CommandError, DatabaseError) as exc:
        if options.get("traceback"):
            raise
        unset = None if command == "migrate" or not _from_database(exc) else _unmigrated()
        if unset is None and isinstance(exc, DatabaseError):  # down, or refusing: its own words, no traceback
            unset = f"the database failed: {type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
        print(wrap(f"benchreg {command}: error: {unset or exc}"), file=sys.stderr)
        return exc.returncode if isinstance(exc, CommandError) and unset is None else 1
    finally:
        connections.close_all()
    return 0


def _from_database(exc: BaseException) -> bool:
    """Whether the database raised `exc` or what it was raised from (a command's refusal that wraps it)."""
    from django.db import DatabaseError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, DatabaseError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _unmigrated() -> str | None:
    """Why a command failed, when the database lacks this benchreg's tables (never migrated, or migrated by an older
    benchreg): a missing table reads as "no such table: auth_user", or as a database that stays unavailable.
    Asked only after a failure (reading the migrations costs ~50 ms); None when none is pending or the database
    cannot even say."""
    from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

    from registry.migration_state import pending_migrations

    try:
        pending = pending_migrations()
    except DatabaseError:
        return None
    if not pending:
        return None
    name = connections[DEFAULT_DB_ALIAS].settings_dict["NAME"]
    return (
        f"the database {name} is not set up for this benchreg ({len(pending)} migration(s) to apply, the first "
        f"{pending[0]}): run `benchreg migrate` first (`benchreg demo` does it itself)"
    )


def version() -> str:
    """benchreg's installed version (the package's metadata)."""
    try:
        return metadata.version("benchreg")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown (not installed)"


# Every command `benchreg` runs (the typo hints offer them; `benchreg --help` lists each, a test holds it to that).
COMMANDS = [
    "submit",
    "run",
    "serve-model",
    "serve-simulated",
    "recompute-serving",
    "witness",
    "admin",
    "agent",
    "verify",
    *DJANGO_COMMANDS,
]
# Django commands that are not `benchreg` commands, with the reason: the test of the help above reads it.
OPERATOR_ONLY = {"verify_report": "`manage.py verify_report` checks against the registry's own keys and database"}


def main(argv: list[str] | None = None) -> int:
    """`benchreg ...`; Ctrl-C anywhere (a sweep, an import, the server) ends it with one line and status 130: the
    line says what was interrupted and what of it is kept (runners.interrupts)."""
    sys.unraisablehook = _interrupt_again
    _take_sigint()
    try:
        status = _dispatch(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        return _stopped()
    except Exception:
        if not interrupts.received():
            raise
        return _stopped()  # the Ctrl-C came back as another error (runners.interrupts says how): it is the cause
    # A Ctrl-C whose exception was lost on the way up (runners.interrupts) still stops the command as one.
    return _stopped() if interrupts.received() else status


def _stopped() -> int:
    """Say what the Ctrl-C interrupted and what is kept; the status is 130."""
    INTERRUPTED.set()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while we say so changes nothing
    print(f"\n{interrupts.interrupted_line()}", file=sys.stderr, flush=True)
    return 130


def _take_sigint() -> None:
    """SIGINT stops every command, however benchreg was started. A shell without job control (a script, CI, a test
    runner that starts its passes with `&`) starts its background commands with SIGINT ignored, and Python then
    installs no handler: a Ctrl-C or `kill -INT` did nothing and the demo ran to its end with status 0. gunicorn
    (serve) and Celery (agent) already install theirs whatever they inherit; the other commands now do too, as Go's
    signal.Notify does. A parent can also hand down SIGINT blocked (the mask survives exec: a test runner's thread
    that had it blocked while it started us): the signal then stays pending and the command ran to its end with
    status 0, so it is unblocked too. Only from the main thread, where Python allows it (main() called from a
    thread: a test)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None, signal.default_int_handler):
        signal.signal(signal.SIGINT, interrupts.on_sigint)  # Python's own, and it remembers (runners.interrupts)
    if hasattr(signal, "pthread_sigmask"):  # POSIX only
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


INTERRUPTED = threading.Event()  # set once main() has caught the Ctrl-C


def _interrupt_again(unraisable: Any) -> None:
    """A Ctrl-C that lands in a finalizer is printed as "Exception ignored in ..." and dropped by Python, and the
    command went on: deliver it again to the main thread, where it stops the command. Anything else as Python says.

    From a thread of its own, until it lands: raised here, or while the finalizer is still running, it would be
    dropped again."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        threading.Thread(target=_deliver_interrupt, name="interrupt-again", daemon=True).start()
        return
    sys.__unraisablehook__(unraisable)


def _deliver_interrupt() -> None:
    while not INTERRUPTED.wait(0.05):
        _thread.interrupt_main()


def _dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    if argv[0] in ("--version", "-V", "version"):
        print(f"benchreg {version()}")
        return 0
    command, rest = argv[0], argv[1:]
    if command == "submit":
        return submit_main(rest)
    if command == "run":
        from runners.cli import main as runners_main

        return runners_main(argv)
    if command in ("serve-model", "serve-simulated"):  # plain Python endpoints: no Django, no database
        from runners.serving import reference, simulated

        return (reference.main if command == "serve-model" else simulated.main)(rest)
    if command == "recompute-serving":  # plain Python: a document and its export, no Django, no database
        from runners.serving import export

        return export.main(rest)
    if command == "witness":  # a C2SP tlog-witness for the audit log: plain Python, no database
        from verifier.witness import main as witness_main

        return witness_main(rest)
    if command == "admin":  # automation: an admin-scoped token over the API, no database
        from registry.admin_cli import admin_main

        return admin_main(rest)
    if command == "agent":  # runs on lab machines: plain Python, no Django, no database
        from runners.agent.cli import main as agent_main

        return agent_main(rest)
    if command == "verify":  # third parties run it: plain Python, the report and published public material only
        from verifier.cli import main as verify_main

        return verify_main(rest)
    if command in DJANGO_COMMANDS:
        return django_main(command, rest)
    print(unknown_command(command), file=sys.stderr)
    return 2


def unknown_command(command: str) -> str:
    """What `benchreg TYPO` says: the closest commands, if any, and where the list is."""
    close = difflib.get_close_matches(command, COMMANDS, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(f'`benchreg {c}`' for c in close)}?" if close else ""
    return f"benchreg: unknown command {command!r}.{hint} `benchreg --help` lists every command."


def entry() -> NoReturn:
    """The `benchreg` program: `main()`, then exit with its status.

    After a Ctrl-C the process ends at once with 130 (os._exit, past the interpreter's shutdown): a second
    KeyboardInterrupt raised there (a library's thread or finalizer re-raising the first) would escape every
    handler, and Python then kills itself with SIGINT, so the shell saw "interrupted" and yet a death by signal.
    Everything the command opened was already closed by its own `finally` blocks before `main()` returned."""
    code = main()
    if INTERRUPTED.is_set():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
