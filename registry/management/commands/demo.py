"""`benchreg demo`: the main job. Sets up the embedded registry, fills it with evidence, then serves it.

First run: migrations, an admin user and an API token (both printed once), the example runs. Each run
then measures this machine with the bundled runners and ends by serving the registry.
"""

from __future__ import annotations

import os
import secrets
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import psutil
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

import protocol
from registry.audit.keys import checkpoint_key
from registry.choices import Trust
from registry.exceptions import RegistryError
from registry.listening import bind_address, listen_problem
from registry.management.commands.serve import BIND_HELP, serve
from registry.models import DecisionAnswer, Submission
from registry.reports import CERTIFICATE_FILE
from registry.reports.signing import signing_identity
from registry.selectors.comparisons import comparable_runs
from registry.selectors.decisions import decision_latest_answer
from registry.services.comparisons import comparison_create
from registry.services.decisions import decision_create
from registry.services.reports import report_local_path, report_request
from registry.services.submissions import submission_create
from registry.services.tokens import token_create
from runners import interrupts
from runners.api import execute, sweep_specs

EXAMPLES_DIR = Path(protocol.__file__).parent / "examples"


class Command(BaseCommand):
    help = "Set up the embedded registry, load and measure runs, and serve it (the README's main job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", type=bind_address, default="127.0.0.1:8000", help=BIND_HELP)
        parser.add_argument("--no-serve", action="store_true", help="set up and load, then exit")
        parser.add_argument("--skip-sweep", action="store_true", help="do not measure this machine")
        parser.add_argument(
            "--verbose", action="store_true", help="when serving, print the embedded worker's and beat's log too"
        )
        parser.add_argument(
            "--backend",
            choices=["numpy", "torch"],
            default=None,
            help="runner backend for the sweep (default: torch if installed, else numpy)",
        )

    def handle(
        self,
        *args: Any,
        bind: str,
        no_serve: bool,
        skip_sweep: bool,
        backend: str | None,
        verbose: bool,
        **options: Any,
    ) -> None:
        problem = None if no_serve else listen_problem(bind)
        if problem:  # said now, not after the minute of setting up and measuring
            raise CommandError(f"{problem} (or pass --no-serve)")
        steps = Steps(self.stdout, total=2 if skip_sweep else 5)
        with steps.step(f"setting up the registry in {settings.DATA_DIR} (database, keys, admin user)"):
            call_command("migrate", interactive=False, verbosity=0)
            admin = self._admin_user()
        with steps.step("loading the example runs (shown as examples: never compared or reported on)"):
            self._load_examples(admin)
        if not skip_sweep:
            self._measure_and_decide(steps, admin, backend)
        self.stdout.write(self.style.SUCCESS(f"ready in {elapsed(steps.since_start())}"))
        if no_serve:
            return
        self._serve(bind, verbose)

    def _measure_and_decide(self, steps: Steps, admin: Any, backend: str | None) -> None:
        specs = sweep_specs(backend)
        with steps.step(
            f"measuring this machine: {len(specs)} short runs with the bundled runners ({specs[0].backend})"
        ):
            self._sweep(admin, specs)
        with steps.step("comparing 1 and 2 CPU threads like for like (up to 4 more runs), then a signed PDF report"):
            report = self._decision_report(admin, backend)
        if report is not None:
            where = report_local_path(report) or f"/api/v1/reports/{report.pk}/pdf (object storage)"
            self.stdout.write(self.style.SUCCESS(f"signed decision report: {where}"))
            self.stdout.write(f"  verify it with:  {self._verify_command(where)}")
        with steps.step("answering a capacity question from these runs (a decision: how many machines, what gaps)"):
            self._decision(admin)  # the main job ends with a decision and its gaps

    def _serve(self, bind: str, verbose: bool) -> None:
        """Serve (the server says "serving on ..." once it listens)."""
        if settings.BENCHREG_EMBEDDED_WORKER or settings.CELERY_BROKER_URL:
            serve(bind=bind, workers=2, threads=4, verbose=verbose)
            return
        # This process set up the registry with tasks in-process; the server gets a fresh process, which
        # `benchreg serve` starts with its own worker (reports and jobs never run in a web request).
        sys.stdout.flush()
        argv = [sys.executable, "-m", "registry.cli", "serve", "--bind", bind, *(["--verbose"] if verbose else [])]
        os.execv(sys.executable, argv)  # noqa: S606

    def _verify_command(self, where: Path | str) -> str:
        """`benchreg verify` with the registry's published certificate and log key, so it works with no server
        running (--no-serve); the same files as GET /api/v1/reports/certificate and /api/v1/audit/public-key."""
        cert = Path(settings.DATA_DIR) / CERTIFICATE_FILE
        cert.write_bytes(signing_identity().public_pem())
        return f"benchreg verify {where} --cert {cert} --log-key {shlex.quote(checkpoint_key().vkey)}"

    def _admin_user(self) -> Any:
        users = get_user_model().objects
        admin = users.filter(username="admin").first()
        if admin is not None:
            self.stdout.write("admin user exists (its password and token were printed on the first run)")
            return admin
        password = secrets.token_urlsafe(12)
        admin = users.create_superuser("admin", email="", password=password)
        _, token = token_create(user=admin, name="demo", scopes="submit,read", actor="benchreg demo")
        self.stdout.write(self.style.WARNING("Created once, shown once — keep them:"))
        self.stdout.write(f"  admin user:  admin / {password}")
        self.stdout.write(f"  API token:   {token}")
        return admin

    def _sweep(self, admin: Any, specs: list[Any]) -> list[Any]:
        """Measure this machine with the bundled runners (each run says what it measures and how long it took) and
        store the runs."""
        results = settings.DATA_DIR / "results"
        results.mkdir(exist_ok=True)
        runs = []
        for number, spec in enumerate(specs, start=1):
            started = time.monotonic()
            with interrupts.doing(
                f"run {number} of {len(specs)}",
                left=f"run {number} was not stored and the {number - 1} before it were; nothing is half-stored",
            ):
                run, _ = submission_create(document=execute(spec, progress=True), submitted_by=admin)
            (results / f"{run.digest.split(':')[1][:16]}.json").write_bytes(run.canonical.encode())
            self.stdout.write(
                f"  run {number} of {len(specs)}: {run.phase} {run.workload_name} {run.scenario_kind} batch "
                f"{run.batch_size}: {run.headline_value:.4g} {run.headline_unit} → run {run.pk} "
                f"({elapsed(time.monotonic() - started)})"
            )
            runs.append(run)
        return runs

    def _decision_report(self, admin: Any, backend: str | None) -> Any:
        """A real decision from this machine's own runs: how many threads to give CPU inference.

        The MLP classifier (offline, batch 32) runs with 1 and 2 threads and is compared on the software axis.
        Steady state is a controlled field, so on a busy machine a pair may be refused; each extra attempt adds
        a run, and the largest comparable group is reported (caveats say what was not steady).
        """
        group = self._thread_runs(admin, backend)
        if len(group) < 2:
            self.stdout.write(self.style.WARNING("no comparable pair of runs on this machine: no report"))
            return None
        comparison, _ = comparison_create(runs=group, axis="software", created_by=admin)
        self.stdout.write(f"  drawing and signing the report on {len(group)} runs…")
        started = time.monotonic()
        report = report_request(
            comparison=comparison,
            requested_by=admin,
            title="CPU inference threads on this machine",
            decision="How many CPU threads to give the mlp-classifier inference service "
            "(offline, fp32, batch 32) on this machine",
        )
        report.refresh_from_db()
        self.stdout.write(f"  report done in {elapsed(time.monotonic() - started)}")
        if report.status != "ready":
            self.stdout.write(self.style.ERROR(f"the report failed: {report.last_error}"))
            return None
        return report

    def _thread_runs(self, admin: Any, backend: str | None) -> list[Any]:
        """Runs with 1 and 2 threads until a comparable group holds both (at most four runs)."""
        base = sweep_specs(backend)[1]  # the sweep's mlp-classifier offline batch-32 run: the 1-thread arm
        group: list[Any] = []
        plan = (2, 1, 2, 1)
        for attempt, threads in enumerate(plan, start=1):
            self.stdout.write(
                f"  decision run {attempt} of up to {len(plan)}: mlp-classifier offline batch 32 with "
                f"{threads} thread(s)…"
            )
            started = time.monotonic()
            group = _software_group(_measured(admin, replace(base, threads=threads)))
            self.stdout.write(f"  measured in {elapsed(time.monotonic() - started)}")
            if len({_threads(r) for r in group}) > 1:
                break
            if attempt < len(plan):  # say why the same run is measured again, or it reads as a repeated line
                self.stdout.write(
                    "  no like-for-like run with the other thread count yet (comparable runs agree on "
                    "every controlled field, steady state included): measuring again"
                )
        return group

    def _decision(self, admin: Any) -> Any:
        """A procurement question answered from this machine's own runs: how many of these machines serve
        100,000 samples/s of the MLP classifier offline, at what cost, and what evidence is missing."""
        latest = _latest_measured_mlp()
        if latest is None:
            self.stdout.write(self.style.WARNING("no measured MLP classifier run: no decision"))
            return None
        decision = decision_create(
            owner=admin,
            title="CPU inference capacity from this machine's runs",
            question=_capacity_question(latest.headline_unit or "samples/s"),
        )
        # decision_create stores the first answer
        answer = cast(DecisionAnswer, decision_latest_answer(decision=decision)).answer
        self.stdout.write(self.style.SUCCESS(f"decision {decision.pk}: {answer['question']}"))
        self._print_answer(answer)
        return decision

    def _print_answer(self, answer: dict[str, Any]) -> None:
        for line in answer["summary"]:
            self.stdout.write(f"  {line}")
        for x in answer["left_out"][:5]:
            self.stdout.write(f"  left out: run {x['run']['id']}: {x['reason']}")
        self.stdout.write(
            f"  frontier over {', '.join(answer['frontier']['criteria']) or 'no criterion'}: "
            f"{'; '.join(answer['frontier']['labels']) or 'empty'}"
            + "".join(f" ({d['criterion']} left out: no candidate has it)" for d in answer["frontier"]["dropped"])
        )
        for words in answer.get("assumptions") or []:
            self.stdout.write(f"  assumed: {words}")

    def _load_examples(self, admin: Any) -> None:
        for path in sorted(EXAMPLES_DIR.glob("*.json")):
            try:
                # Loaded as examples: shown as such, refused by comparisons and reports (they measure nothing).
                run, created = submission_create(document=path.read_bytes(), submitted_by=admin, trust=Trust.EXAMPLE)
            except RegistryError as exc:
                self.stdout.write(self.style.ERROR(f"{path.name}: rejected: {exc.errors or exc.message}"))
                continue
            state = "stored" if created else "already known"
            self.stdout.write(f"  {path.name}: {state} as run {run.pk} ({run.digest[:19]}…)")


def _latest_measured_mlp() -> Submission | None:
    """The newest MLP classifier offline inference run measured by the runners (not an example or import)."""
    return (
        Submission.objects.filter(
            workload_name="mlp-classifier", scenario_kind="offline", phase="inference", source="runner"
        )
        .order_by("-id")
        .first()
    )


def _measured(admin: Any, spec: Any) -> Any:
    """Run `spec` on this machine and store the run."""
    run, _ = submission_create(document=execute(spec, progress=True), submitted_by=admin)
    return run


def _capacity_question(unit: str) -> dict[str, Any]:
    """How many of these machines serve 100,000 samples/s of the MLP classifier offline, by energy. No price is
    invented: the demo knows none, so the answer has no cost and says so."""
    return {
        "workload": "mlp-classifier",
        "scenario": "offline",
        "objectives": [],
        "demand": {"value": 100000, "unit": unit},
        "criteria": ["cost", "energy"],
    }


def _software_group(run: Any) -> list[Any]:
    """The run and the runs comparable with it on the software axis, the newest six."""
    return sorted([run, *comparable_runs(run=run, axis="software", include_examples=False)], key=lambda r: r.pk)[-6:]


def _threads(run: Any) -> Any:
    settings_ = run.document["software"]["settings"]
    return settings_.get("torch.num_threads", settings_.get("numpy.blas_threads"))


# What a Ctrl-C leaves of the demo: every run, answer and report is stored by one service in one transaction.
KEPT = (
    "nothing is half-stored (each run, decision and report is stored whole or not at all); what was done before stays"
)


class Steps:
    """The demo's numbered steps: each says what it does when it starts and how long it took when it ends, so a
    slow machine shows where the time goes."""

    def __init__(self, out: Any, *, total: int) -> None:
        self.out, self.total, self.number = out, total, 0
        # The whole is counted from the process's start: loading Python, Django and the runners is part of the wait.
        self.started: float = time.monotonic() - max(time.time() - float(psutil.Process().create_time()), 0.0)

    @contextmanager
    def step(self, words: str) -> Iterator[None]:
        self.number += 1
        started = time.monotonic()
        with interrupts.doing(f"step {self.number} of {self.total} ({words})", left=KEPT):
            # said inside the step: a Ctrl-C once the line is out names the step it says
            self.say(f"[{self.number}/{self.total}] {words}…")
            yield
        self.say(f"[{self.number}/{self.total}] done in {elapsed(time.monotonic() - started)}")

    def say(self, line: str) -> None:
        """A line, flushed at once: piped to a file or `tee`, it is not held back until the buffer fills."""
        self.out.write(line)
        getattr(self.out, "flush", lambda: None)()

    def since_start(self) -> float:
        return time.monotonic() - self.started


def elapsed(seconds: float) -> str:
    """'4.2 s', '1 min 05 s'."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"
