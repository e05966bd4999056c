"""The OpenAPI contract check, shared by tests/registry/api/test_openapi_contract.py (time-boxed, in CI) and
bench/openapi_contract.py (longer): seed a registry with one of everything, then run Schemathesis with every check
against the served description (docs/api.md, "The contract test")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "protocol" / "examples"
CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"
UNGUESSABLE_TOKEN_ID = 7_301_946_515_338_127_451
# The operations only an agent's token may call, fuzzed in a second pass with the seeded agent's token (`agent_pass`);
# devtools/schemathesis.toml points their {job_id} at the seeded job, named by JOB_ENV.
AGENT_OPERATIONS = (
    r"^/api/v1/(agents/(me|heartbeat)|jobs/\{job_id\}/(claim|arrive|start|heartbeat|complete|fail|group))$"
)
JOB_ENV = "BENCHREG_CONTRACT_JOB"


def seed() -> dict[str, Any]:
    """An admin with an all-scopes token, comparable runs, a comparison, a report, an agent, a plan and a job.

    Needs a Django database connection (a test's, or a scratch database's). Returns the plain tokens (the admin's
    and the agent's) and ids.
    """
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.utils import timezone

    from devtools.documents import variant
    from registry.models import ApiToken, Job, Plan, Report
    from registry.services.agents import agent_enroll, enrolment_token_create
    from registry.services.comparisons import comparison_create
    from registry.services.submissions import submission_create
    from registry.services.tokens import token_create

    admin = get_user_model().objects.create_user("contract-admin", password="pw-for-contract-tests-only")
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    token, plain = token_create(user=admin, name="contract", scopes="submit,read,admin")
    # DELETE /api/v1/tokens/{id} is fuzzed too: the token the run itself uses gets an id no generator guesses.
    ApiToken.objects.filter(pk=token.pk).update(id=UNGUESSABLE_TOKEN_ID)
    server = json.loads((EXAMPLES / "inference-server-h100-bf16.json").read_text())
    a, _ = submission_create(document=server, submitted_by=admin)
    b, _ = submission_create(document=variant(server, "lab-h200-02", 1500.0), submitted_by=admin)
    comparison, _ = comparison_create(runs=[a, b], axis="system", created_by=admin)
    report = Report.objects.create(
        comparison=comparison,
        title="contract",
        decision="d",
        requested_by=admin,
        requested_by_name=admin.get_username(),
        created_at=timezone.now(),
    )
    _, secret = enrolment_token_create(created_by=None, expires_in=timedelta(hours=1), actor="contract")
    agent, agent_token = agent_enroll(
        enrolment_token=secret, name="rig-contract", inventory={"host": {"address": "10.0.0.7"}}
    )
    plan = Plan.objects.create(
        runner="inference",
        workload="mlp-classifier",
        precisions=["fp32"],
        batch_sizes=[1],
        soft_time_limit=600,
        time_limit=900,
        created_by=admin,
        created_by_name=admin.get_username(),
    )
    job = Job.objects.create(
        plan=plan,
        agent=agent,
        agent_name=agent.name,
        spec={"phase": "inference", "workload": "mlp-classifier", "precision": "fp32"},
        soft_time_limit=600,
        time_limit=900,
    )
    return {
        "token": plain,
        "agent_token": agent_token,
        "runs": [a.pk, b.pk],
        "comparison": comparison.pk,
        "report": report.pk,
        "plan": plan.pk,
        "job": job.pk,
    }


def fetch_schema(base_url: str, into: Path) -> Path:
    """The description as the server serves it, saved to a file (generating it can take longer than st waits)."""
    import httpx

    response = httpx.get(f"{base_url}/api/schema/", params={"format": "json"}, timeout=180)
    response.raise_for_status()
    path = into / "openapi.json"
    path.write_bytes(response.content)
    return path


def schemathesis_command(
    base_url: str,
    token: str,
    *,
    schema: Path,
    max_examples: int,
    seed_value: int = 1,
    workers: int = 1,
    report_dir: Path | None = None,
    extra: list[str] | None = None,
) -> list[str]:
    """`st run` with every check on the served schema; a fixed seed makes a failing run reproducible."""
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(CONFIG),
        "--no-color",
        "run",
        str(schema),
        "--url",
        base_url,
        "--checks",
        "all",
        "--header",
        f"Authorization: Token {token}",
        "--max-examples",
        str(max_examples),
        "--seed",
        str(seed_value),
        "--workers",
        str(workers),
        "--suppress-health-check",
        "all",
        "--request-timeout",
        "30",
    ]
    if report_dir is not None:
        command += ["--report", "junit", "--report-dir", str(report_dir)]
    return command + list(extra or [])


def agent_pass(command: list[str], seeded: dict[str, Any]) -> list[str]:
    """`command` (schemathesis_command's, made with the admin's token) as the agent pass: the seeded agent's token
    instead, on AGENT_OPERATIONS only. The admin's token exercises their refusals (403); this, their success paths on
    the seeded job (run it with `schemathesis_run(..., job=seeded["job"])`), before the admin's pass, which revokes
    agents and cancels jobs.

    Valid data only (`--mode positive`): the configured {job_id} replaces the wrong-typed ids a negative case would
    send, so such a case would reach the job and be reported as invalid input accepted. Invalid input to these
    operations is left to the admin's pass, which is refused before any body is read (403)."""
    header = command.index("--header") + 1
    agent = [*command[:header], f"Authorization: Token {seeded['agent_token']}", *command[header + 1 :]]
    if "--report-dir" in agent:  # its own junit file beside the first pass's (a bare name lands in the cwd)
        report_dir = Path(agent[agent.index("--report-dir") + 1])
        agent += ["--report-junit-path", str(report_dir / "junit-agent.xml")]
    return [*agent, "--include-path-regex", AGENT_OPERATIONS, "--mode", "positive"]


def schemathesis_run(command: list[str], *, timeout: float, job: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run `command`; `job` is the seeded job's id, where devtools/schemathesis.toml's {job_id} reads it."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160", JOB_ENV: str(job or 0)}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def failure_report(output: str) -> str:
    """The part of Schemathesis' output a reader needs: each failing operation, the check, the curl to replay."""
    starts = [i for i in (output.find(" ERRORS "), output.find(" FAILURES ")) if i >= 0]  # section headers
    if not starts:
        return output[-20_000:]
    start = min(starts)
    return output[output.rfind("\n", 0, start) + 1 :][:60_000]
