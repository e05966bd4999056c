"""The `benchreg` command as a user meets it: its version, its names, its typos, its errors and Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import pytest

import protocol
from registry import cli
from registry.management.commands.demo import Steps, elapsed
from registry.worker import heartbeats
from runners import interrupts
from runners.client import RegistryError, SubmitOutcome
from runners.terminal import problem_lines, wrap
from tests.conftest import ROOT
from tests.registry.ops.services import free_port
from tests.runners.serving.test_cli import DEPLOYMENT as SERVING_DEPLOYMENT


def _env(data: Path, **more: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "BENCHREG_EMBEDDED_WORKER", "DJANGO_SETTINGS_MODULE")
    }
    # unbuffered: a line the test waits for is in the file when it is said, not when the process ends
    return {**env, "BENCHREG_DATA_DIR": str(data), "COLUMNS": "1000", "PYTHONUNBUFFERED": "1", **more}


def benchreg(
    *args: str, data: Path, timeout: float = 120, cwd: Path = ROOT, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "registry.cli", *args],
        cwd=cwd,
        env=_env(data, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# --- names and versions -----------------------------------------------------------------------------------------


def test_benchreg_version_prints_benchregs_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"benchreg {cli.version()}"
    assert cli.version()[0].isdigit()


def test_a_django_subcommand_prints_benchregs_version_not_djangos(tmp_path):
    done = benchreg("serve", "--version", data=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == f"benchreg {cli.version()}", done


@pytest.mark.parametrize(
    ("command", "internal"),
    [("import", "import_results"), ("create-token", "create_token"), ("enrolment-token", "enrolment_token")],
)
def test_usage_lines_name_the_command_as_the_user_types_it(tmp_path, command, internal):
    done = benchreg(command, "--help", data=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith(f"usage: benchreg {command} ")
    assert internal not in done.stdout


def test_a_usage_error_names_the_command_as_the_user_types_it(tmp_path):
    done = benchreg("import", "mlpref", "somewhere", data=tmp_path)
    assert done.returncode == 2
    assert "benchreg import: error: argument kind: invalid choice: 'mlpref'" in done.stderr
    assert "import_results" not in done.stderr


def test_a_typo_gets_a_did_you_mean(capsys):
    assert cli.main(["imprt", "mlperf", "x"]) == 2
    said = capsys.readouterr().err
    assert "unknown command 'imprt'" in said and "Did you mean `benchreg import`?" in said
    assert "benchreg --help" in said


def test_a_command_far_from_every_other_gets_no_guess(capsys):
    assert cli.main(["frobnicate"]) == 2
    said = capsys.readouterr().err
    assert "unknown command 'frobnicate'" in said and "Did you mean" not in said


def test_a_commands_refusal_is_one_wrapped_error_named_after_the_command(tmp_path):
    done = benchreg("import", "mlperf", str(tmp_path / "no-such-folder"), data=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("benchreg import: error:") and "is not a directory" in done.stderr
    assert "CommandError" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("import", "serving", "results.json", "--deployment", "deployment.json"),
        ("import", "nccl-tests", "nccl.log"),
        ("create-token", "--username", "lab", "--scopes", "submit"),
        ("audit", "verify"),
        ("import", "mlperf", "."),  # its retries on a database gone away do not wait on a missing table
    ],
)
def test_a_database_never_migrated_is_named_with_what_to_run_not_a_traceback(tmp_path, args):
    """A data dir `benchreg migrate` never ran in: SQLite answered "no such table: auth_user" with a traceback, and
    an MLPerf import retried for 30 s first, calling the database unavailable."""
    for name in ("results.json", "deployment.json", "nccl.log"):
        (tmp_path / name).write_text("{}")
    done = benchreg(*args, data=tmp_path / "data", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "is not set up for this benchreg" in done.stderr, done.stderr
    assert "run `benchreg migrate` first" in " ".join(done.stderr.split())
    assert "retrying" not in done.stdout + done.stderr  # a missing table is not a database gone away


def test_a_database_that_cannot_be_reached_is_one_error_line_not_a_traceback(tmp_path):
    unreachable = f"postgres://nobody@127.0.0.1:{free_port()}/none"
    done = benchreg("create-token", "--username", "lab", "--scopes", "submit", data=tmp_path, DATABASE_URL=unreachable)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("benchreg create-token: error: the database failed: OperationalError"), done.stderr


def test_an_enrolment_token_s_lifetime_past_any_date_is_refused_in_words(tmp_path):
    done = benchreg("enrolment-token", "create", "--expires", "99999999999d", data=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--expires 99999999999d is longer than any date can be" in done.stderr


# --- the help lists every command ----------------------------------------------------------------------------


def _listed(help_text: str) -> dict[str, set[str]]:
    """Each command `benchreg --help` lists, with the words that follow it on its lines (`a|b` split)."""
    listed: dict[str, set[str]] = {}
    for line in help_text.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] == "benchreg" and line.startswith("  benchreg"):
            listed.setdefault(words[1], set()).update(words[2].split("|") if len(words) > 2 else ())
    return listed


def _subcommands(command: str, capsys: pytest.CaptureFixture[str]) -> set[str]:
    """The choices of `benchreg COMMAND`'s positional arguments, as its own usage line states them (`{a,b}` not
    after an option: an option's choices are not subcommands)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    usage = capsys.readouterr().out.split("\n\n")[0]
    return {
        choice
        for found in re.finditer(r"(\S+)\s+\{([^}]+)\}", usage)
        if not _takes(found.group(1))
        for choice in found.group(2).split(",")
    }


def _takes(token: str) -> bool:
    """Whether a usage token is an option that takes the value after it (`[--suite`, `-v`; not `[--skip-checks]`)."""
    return token.lstrip("[").startswith("-") and not token.endswith("]")


def test_the_help_lists_every_command_and_each_of_its_subcommands(capsys):
    assert cli.main(["--help"]) == 0
    listed = _listed(capsys.readouterr().out)
    assert set(cli.COMMANDS) <= set(listed), set(cli.COMMANDS) - set(listed)
    missing = {
        f"benchreg {command} {choice}"
        for command in cli.COMMANDS
        for choice in _subcommands(command, capsys)
        if choice not in listed[command]
    }
    assert not missing, missing
    assert {"mlperf", "serving"} <= listed["import"]  # what users asked for: `import serving` was not listed


def test_every_management_command_is_a_benchreg_command_or_says_why_not():
    commands = {p.stem for p in (ROOT / "registry" / "management" / "commands").glob("[a-z]*.py")}
    assert commands - set(cli.DJANGO_COMMANDS.values()) == set(cli.OPERATOR_ONLY)


def test_every_listed_command_is_one_benchreg_runs(capsys):
    """A name in the list that `benchreg` does not run would be offered by the typo hints."""
    for command in cli.COMMANDS:
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        assert "unknown command" not in capsys.readouterr().err


# --- errors for a terminal --------------------------------------------------------------------------------------


def test_a_rejected_document_lists_each_problem_on_its_own_lines_pointer_first(monkeypatch):
    monkeypatch.setattr("runners.terminal.width", lambda: 100)  # as on a terminal 100 columns wide
    outcome = SubmitOutcome(
        "rejected",
        errors=[
            {
                "pointer": "/phase",
                "code": "not-allowed-value",
                "message": "'serving' is not one of: training, inference",
            },
            {"pointer": "/metrics/throughput/value", "code": "non-finite-number", "message": "NaN " + "is long " * 20},
        ],
    )
    lines = outcome.line("run.json").splitlines()
    assert lines[0] == "run.json: rejected (2 problems):"
    assert lines[1] == "  /phase: 'serving' is not one of: training, inference [not-allowed-value]"
    assert lines[2].startswith("  /metrics/throughput/value: NaN is long")
    assert len(lines) > 3 and all(line.startswith("    ") for line in lines[3:])  # wrapped under its own words
    assert all(len(line) <= 100 for line in lines)
    monkeypatch.setattr("runners.terminal.width", lambda: None)  # a log or a pipe: one line per problem
    assert len(outcome.line("run.json").splitlines()) == 3


def test_wrapping_keeps_paths_and_commands_whole():
    text = "verify it with: benchreg verify /a/very/long/path/" + "x" * 90 + ".pdf --cert c.pem"
    wrapped = wrap(text, columns=60)
    assert "/a/very/long/path/" + "x" * 90 + ".pdf" in wrapped.split("\n")[1]
    assert problem_lines([{"pointer": "", "message": "not JSON"}]) == "  /: not JSON"


def test_giving_up_after_retries_is_said_once():
    """It used to say "(gave up after 5 retries) (after 5 retries)"."""
    error = RegistryError("POST /api/v1/submissions: registry answered 503", 5)
    assert str(error).count("retries") == 1
    line = SubmitOutcome("error", message=error.reason, retries=error.retries).line("run.json")
    assert line == "run.json: error: POST /api/v1/submissions: registry answered 503 (gave up after 5 retries)"
    assert SubmitOutcome("known", run_id=3, digest="sha256:ab", retries=1).line("f").endswith("(after 1 retry)")


# --- the demo says where its time goes ------------------------------------------------------------------------


def test_each_demo_step_says_what_it_does_and_how_long_it_took():
    said: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            said.append(text)

    steps = Steps(Out(), total=2)
    with steps.step("loading the examples"):
        pass
    assert said[0] == "[1/2] loading the examples…" and said[1].startswith("[1/2] done in ")
    assert (elapsed(4.21), elapsed(65.4), elapsed(600)) == ("4.2 s", "1 min 05 s", "10 min 00 s")


def test_the_demo_without_the_sweep_numbers_its_steps_and_times_them(tmp_path):
    done = benchreg("demo", "--no-serve", "--skip-sweep", data=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"[1/2] setting up the registry in {tmp_path}")
    assert sum(line.startswith("[1/2] done in ") or line.startswith("[2/2] done in ") for line in lines) == 2
    assert lines[-1].startswith("ready in ")


# --- Ctrl-C: one line, status 130, for every command ----------------------------------------------------------
#
# These hold on a busy host: each waits for a line the command prints once it is doing the thing to interrupt (not
# a fixed sleep), gives it generous deadlines to start, and bounds only the product's own stop. Run them beside a
# CPU hog (`python -c 'while 1: pass' &` once per core) to see them hold.

STOP_WITHIN_S = 60.0  # the command's own stop after SIGINT; on an idle machine a second or two (serve: a few)

# Wrappers that start the command as a script or a test runner's `cmd &` does: with SIGINT ignored, which Python
# then keeps ignored unless the program installs a handler itself; or from a thread that had SIGINT blocked, a mask
# that survives exec (the signal then stays pending for good).
SIGINT_IGNORED = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"
)
SIGINT_BLOCKED = (
    "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)
STARTED_WITH = {"ignored": SIGINT_IGNORED, "blocked": SIGINT_BLOCKED}


GROUP_EXIT_S = 10.0


def _interrupt(
    argv: list[str],
    data: Path,
    *,
    when: str,
    within: float,
    settle: float = 0.0,
    started_with: str = "",
    also: Callable[[], bool] = lambda: True,
) -> tuple[int, str, str, float]:
    """Start `benchreg argv` in a session of its own, wait (up to `within` seconds) until its output holds `when`
    and `also()` holds, and `settle` seconds more, then send SIGINT to its whole process group, as a terminal's
    Ctrl-C does. Returns (status, stdout, stderr, seconds it took to stop). Fails if anything of its group is still
    running then."""
    out, err = data / "out.txt", data / "err.txt"
    command = [sys.executable, "-m", "registry.cli", *argv]
    if started_with:
        command = [sys.executable, "-c", STARTED_WITH[started_with], *command]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen(
            command, cwd=ROOT, env=_env(data), stdout=stdout, stderr=stderr, start_new_session=True
        )
        try:
            _wait_for(child, lambda: when in _said(out, err) and also(), out, err, within)
            time.sleep(settle)
            os.killpg(child.pid, signal.SIGINT)
            sent = time.monotonic()
            try:
                status = child.wait(timeout=STOP_WITHIN_S * 2)
            except subprocess.TimeoutExpired:
                raise AssertionError(
                    f"still running {STOP_WITHIN_S * 2:.0f} s after Ctrl-C: {err.read_text()[-3000:]}"
                ) from None
            took = time.monotonic() - sent
            # the same Ctrl-C reached every process of the group: one still finishing its own exit a moment after
            # the command's is not an orphan; one alive GROUP_EXIT_S later is
            gone_by = time.monotonic() + GROUP_EXIT_S
            while _group_alive(child.pid) and time.monotonic() < gone_by:
                time.sleep(0.1)
            assert not _group_alive(child.pid), f"a process of its group outlived it by {GROUP_EXIT_S:.0f} s"
        finally:
            if child.poll() is None or _group_alive(child.pid):
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
    print(f"{' '.join(argv[:2])}: stopped {took:.1f} s after SIGINT (load {os.getloadavg()[0]:.1f})")
    return status, out.read_text(errors="replace"), err.read_text(errors="replace"), took


def _said(out: Path, err: Path) -> str:
    return out.read_text(errors="replace") + err.read_text(errors="replace")


def _wait_for(child: subprocess.Popen[bytes], ready: Callable[[], bool], out: Path, err: Path, within: float) -> None:
    deadline = time.monotonic() + within
    while not ready():
        assert child.poll() is None, f"it ended first: {err.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not ready in {within:.0f} s: {_said(out, err)[-3000:]}"
        time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _migrated(data: Path) -> None:
    done = benchreg("migrate", "-v0", data=data, timeout=300)
    assert done.returncode == 0, done.stderr


def _last_line(err: str) -> str:
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    return err.rstrip().splitlines()[-1]


@pytest.mark.slow
def test_ctrl_c_stops_serve_with_one_line_and_status_130_and_serve_is_quiet(tmp_path):
    """`benchreg serve` says where it serves and then only what is wrong: not the embedded beat's line a second,
    nor Celery's banners and superuser warning. Ctrl-C stops it, the supervisor, worker and beat with it, in one
    line that says so."""
    _migrated(tmp_path)
    port = free_port()
    argv = ["serve", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    # once the worker and beat run (beat sends a task about every second), 3 s is time enough to say so, were it to
    status, out, err, took = _interrupt(
        argv, tmp_path, when="serving on", within=300, settle=3.0, also=lambda: _parts_running(tmp_path)
    )
    assert status == 130, err
    assert _last_line(err) == (
        f"interrupted: serving on 127.0.0.1:{port}; the server stopped, and its worker and beat with it; nothing is "
        "half-stored"
    )
    assert f"serving on http://127.0.0.1:{port}/" in err
    quiet = out + err
    for noise in ("Sending due task", "superuser privileges", "celery beat v", "[tasks]", "Warm shutdown", "[INFO]"):
        assert noise not in quiet, quiet[-3000:]
    for part in (*heartbeats.PARTS, heartbeats.SUPERVISOR):  # in a session of their own: not in serve's group
        beat = heartbeats.read(tmp_path, part)
        assert beat is not None and not beat.process_alive(), f"the embedded {part} outlived serve"
    assert took < STOP_WITHIN_S


def _parts_running(data: Path) -> bool:
    """The supervisor, worker and beat each wrote a heartbeat from a live process."""
    beats = [heartbeats.read(data, part) for part in (*heartbeats.PARTS, heartbeats.SUPERVISOR)]
    return all(beat is not None and beat.process_alive() for beat in beats)


def test_a_ctrl_c_that_lands_in_a_finalizer_still_stops_the_command():
    """Python drops an exception raised in a finalizer ("Exception ignored in ..."): a Ctrl-C landing there let the
    demo run on to the end. It is delivered again to the main thread."""
    probe = """
import sys, time, weakref
from registry import cli

class Thing:
    pass

def dispatch(argv):
    thing = Thing()
    weakref.finalize(thing, lambda: (_ for _ in ()).throw(KeyboardInterrupt()))
    del thing
    time.sleep(5)
    print("went on")
    return 0

cli._dispatch = dispatch
sys.exit(cli.main([]))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 130 and "went on" not in done.stdout, done
    assert done.stderr.strip() == "interrupted"


@pytest.mark.slow
def test_ctrl_c_stops_the_demo_with_one_line_and_status_130_and_nothing_half_stored(tmp_path):
    """Interrupted while it measures this machine (step 3 of 5), the demo says which step and run, and that nothing
    is half-stored; the audit log then verifies (every run stored has its entry, none without)."""
    status, _out, err, took = _interrupt(["demo", "--no-serve"], tmp_path, when="[3/5] measuring", within=300)
    assert status == 130, err
    line = _last_line(err)
    assert line.startswith("interrupted: step 3 of 5 (measuring this machine"), line
    assert "nothing is half-stored" in line, line
    assert took < STOP_WITHIN_S
    verified = benchreg("audit", "verify", data=tmp_path, timeout=300)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
def test_ctrl_c_stops_a_runner_with_one_line_and_status_130_and_writes_nothing(tmp_path):
    out = tmp_path / "r"
    argv = ["run", "inference", "--workload", "mlp-classifier", "--backend", "numpy", "--batch", "8", "--out", str(out)]
    status, _out, err, took = _interrupt(argv, tmp_path, when="measuring inference mlp-classifier batch 8", within=300)
    assert status == 130, err
    assert _last_line(err) == (
        "interrupted: measuring inference mlp-classifier batch 8; its document was not written (a document is "
        f"written whole, once measured); those before stay in {out}"
    )
    assert not out.exists() or list(out.iterdir()) == []  # no document, no half-written .tmp
    assert took < STOP_WITHIN_S


def test_ctrl_c_stops_a_serving_sweep_between_levels_and_keeps_the_levels_before(tmp_path, endpoint):
    """The Ctrl-C lands once a level is written (in the next: a busy host may let one more finish first): 130, the
    sweep named, every level said to be written kept whole, nothing of the interrupted one, no .tmp."""
    url = endpoint("--ttft-ms", "20", "--itl-ms", "5", "--capacity", "64")
    out = tmp_path / "levels"
    argv = ["run", "serving", "--endpoint", url, "--model", "simulated", "--input-tokens", "16", "--output-tokens",
            "6", "--request-rates", "4,8,16", "--duration", "2", "--min-requests", "12", "--out", str(out),
            *SERVING_DEPLOYMENT]  # fmt: skip
    status, said, err, took = _interrupt(argv, tmp_path, when="wrote ", within=300)
    assert status == 130, err
    assert _last_line(err) == (
        f"interrupted: the serving sweep against {url}; the level under way was not written (a level is written "
        f"whole, once measured); those before stay in {out}"
    )
    written = {line.split(":")[0].removeprefix("wrote ") for line in said.splitlines() if line.startswith("wrote ")}
    documents = {str(path) for path in out.glob("*.json")}
    assert 1 <= len(written) < 3 and documents == written, (written, documents)
    assert not list(out.glob("*.tmp")), sorted(out.iterdir())
    for document in documents:
        protocol.check(json.loads(Path(document).read_text()))  # each kept level whole
    assert took < STOP_WITHIN_S


@pytest.mark.slow
@pytest.mark.parametrize("started_with", ["ignored", "blocked"])
def test_ctrl_c_stops_a_command_started_with_sigint_ignored_or_blocked(tmp_path, started_with):
    """A shell without job control (a script, CI, a test runner's `cmd &`) starts background commands with SIGINT
    ignored: Python then installs no handler, and the demo ran to its end with status 0 after a Ctrl-C. A parent
    thread with SIGINT blocked hands the mask down through exec: the same, seen in CI."""
    argv = ["run", "inference", "--workload", "mlp-classifier", "--backend", "numpy", "--out", str(tmp_path / "r")]
    status, _out, err, took = _interrupt(
        argv, tmp_path, when="measuring inference", within=300, started_with=started_with
    )
    assert status == 130, err
    assert _last_line(err).startswith("interrupted: measuring inference mlp-classifier")
    assert took < STOP_WITHIN_S


def test_a_ctrl_c_whose_exception_a_library_lost_still_ends_the_command_with_130(monkeypatch, capsys):
    """The command itself returned 0 (a library swallowed the KeyboardInterrupt: tests/runners/test_interrupts.py
    shows how Python loses it) or failed with the error the interrupt became: either way it was a Ctrl-C, said as
    one, with the step it interrupted where one was named."""
    from tests.runners.test_interrupts import import_that_swallows

    def command(in_a_step: bool, raises: bool) -> Callable[[list[str]], int]:
        def dispatch(argv: list[str]) -> int:
            with interrupts.doing("importing", left="nothing was stored") if in_a_step else nullcontext():
                import_that_swallows()
            if raises:
                raise RuntimeError("what the interrupt became")
            return 0

        return dispatch

    before = signal.getsignal(signal.SIGINT)
    try:
        for in_a_step in (True, False):
            for raises in (False, True):
                interrupts.forget()
                monkeypatch.setattr(cli, "_dispatch", command(in_a_step, raises))
                monkeypatch.setattr(cli, "INTERRUPTED", threading.Event())
                assert cli.main(["import"]) == 130, (in_a_step, raises)
                said = _last_line(capsys.readouterr().err)
                assert said == ("interrupted: importing; nothing was stored" if in_a_step else "interrupted")
    finally:
        signal.signal(signal.SIGINT, before)
        interrupts.forget()
        monkeypatch.undo()
    assert cli.main(["--version"]) == 0  # without a Ctrl-C, the command's own status
