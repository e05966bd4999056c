"""One agent's rank of a job group (docs/agents.md, "Job groups"): arrive, wait for the group, run this node's
ranks of `benchreg run collectives` or `benchreg run distributed-training` on the group's rendezvous, and (rank 0)
submit the group's one run.

    look up the rank -> arrive (rank 0 with the endpoint it will host) -> wait until the group started (or failed,
    or the deadline passed: then nothing runs) -> run `runners.cli run <runner> --nnodes N --node-rank R
    --rdzv-endpoint E --rdzv-id I` in a child process, the lease renewed meanwhile -> rank 0 submits the document

A rank whose command exits non-zero reports the failure, which fails the group and every other member (the registry's
rule); the others' launchers fail too, as their peer is gone.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from .. import collectives_spec
from ..collectives_spec import CollectiveJobSpec
from ..distributed import job as distributed_job
from ..distributed.job import DistributedJobSpec
from .jobs import JobGone, JobOutcome, JobRegistry, LeaseKeeper, upload_words, with_provenance

POLL_SECONDS = 0.5
FORM_SLACK_S = 30.0  # waited past the group's deadline for the registry to say it failed (its clock decides)
OUTPUT_TAIL = 2000  # characters of a failed command's output reported as the job's error


class GroupRegistry(JobRegistry, Protocol):
    def arrive(self, job_id: int, *, claimant: str, lease_seconds: int, endpoint: str | None) -> dict[str, Any]: ...
    def group(self, job_id: int) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Member:
    """This agent's place: its job, its claimant name, the endpoint it hosts if it is rank 0, where it writes."""

    job_id: int
    agent: str
    claimant: str
    endpoint: str
    workdir: Path
    lease_seconds: int = 60


def wait_for_start(registry: GroupRegistry, member: Member, deadline_s: float) -> dict[str, Any]:
    """Poll the group until it started; JobGone with the registry's reason if it failed or never formed."""
    limit = time.monotonic() + deadline_s
    while True:
        view = registry.group(member.job_id)
        if view["status"] in ("started", "submitted"):
            return view
        if view["status"] == "failed":
            raise JobGone(f"the group failed: {view['error']}")
        if time.monotonic() > limit:
            raise JobGone("the group did not start in time")
        time.sleep(POLL_SECONDS)


GroupSpec = CollectiveJobSpec | DistributedJobSpec
SPECS: dict[str, Callable[[Mapping[str, Any]], GroupSpec]] = {
    collectives_spec.PHASE: collectives_spec.from_fields,
    distributed_job.PHASE: distributed_job.from_fields,
}
ENTRY = "import sys; from runners.cli import main; raise SystemExit(main(sys.argv[1:]))"


def group_spec(spec_fields: dict[str, Any]) -> GroupSpec:
    """The member job's spec, by its phase; ValueError for a phase no group runs."""
    phase = spec_fields.get("phase")
    if phase not in SPECS:
        raise ValueError(f"a job group runs {' or '.join(sorted(SPECS))}, not {phase!r}")
    return SPECS[str(phase)]({k: v for k, v in spec_fields.items() if k != "phase"})


def rendezvous_arguments(view: dict[str, Any]) -> list[str]:
    return [
        "--nnodes", str(view["nnodes"]), "--node-rank", str(view["rank"]),
        "--rdzv-endpoint", str(view["endpoint"]), "--rdzv-id", str(view["rendezvous_id"]),
    ]  # fmt: skip


def command(spec: GroupSpec, view: dict[str, Any], out: Path) -> list[str]:
    """This node's `run collectives` or `run distributed-training`, on the group's rendezvous."""
    if isinstance(spec, DistributedJobSpec):
        return training_command(spec, view, out)
    return [
        sys.executable, "-c", ENTRY, "run", "collectives", "--collectives", spec.collective,
        *rendezvous_arguments(view),
        "--nproc-per-node", str(spec.nproc_per_node), "--min-bytes", str(spec.min_bytes),
        "--max-bytes", str(spec.max_bytes), "--step-factor", str(spec.step_factor),
        "--warmup-iters", str(spec.warmup), "--iters", str(spec.iters), "--dtype", spec.dtype,
        "--device", spec.device, "--submitter", spec.submitter, "--out", str(out),
    ]  # fmt: skip


def training_command(spec: DistributedJobSpec, view: dict[str, Any], out: Path) -> list[str]:
    """This node's `run distributed-training`: its ranks of the group's one world."""
    optional = {"--batch": spec.batch_size, "--threads": spec.threads, "--sequence-length": spec.sequence_length}
    return [
        sys.executable, "-c", ENTRY, "run", "distributed-training", "--workload", spec.workload,
        *rendezvous_arguments(view), "--nproc-per-node", str(spec.nproc_per_node),
        "--parallelism", spec.parallelism, "--precision", spec.precision, "--device", spec.device,
        "--accumulation", str(spec.accumulation), "--steps", str(spec.steps),
        "--warmup-steps", str(spec.warmup_steps), "--repetitions", str(spec.repetitions), "--seed", str(spec.seed),
        "--learning-rate", repr(spec.learning_rate), "--submitter", spec.submitter, "--out", str(out),
        "--no-progress",
        *(part for flag, value in optional.items() if value is not None for part in (flag, str(value))),
    ]  # fmt: skip


def written(spec: GroupSpec, out: Path) -> Path:
    """The run document rank 0's command wrote: the collective's, or the one training document in `out`."""
    if isinstance(spec, CollectiveJobSpec):
        return out / f"{spec.collective}.run.json"
    (path,) = out.glob("*.json")
    return path


def run_member(registry: GroupRegistry, member: Member, spec_fields: dict[str, Any], form_s: float) -> JobOutcome:
    """Arrive, wait, run this node's ranks, and submit from rank 0; the outcome for this agent's job."""
    spec = group_spec(spec_fields)
    rank = registry.group(member.job_id)["rank"]
    endpoint = member.endpoint if rank == 0 else None
    registry.arrive(member.job_id, claimant=member.claimant, lease_seconds=member.lease_seconds, endpoint=endpoint)
    keeper = LeaseKeeper(registry, member.job_id, member.claimant, member.lease_seconds, member.lease_seconds / 3)
    keeper.start()
    try:
        view = wait_for_start(registry, member, form_s)
        out = member.workdir / f"job-{member.job_id}"
        done = subprocess.run(command(spec, view, out), capture_output=True, text=True, check=False)
    except JobGone as exc:
        return JobOutcome(member.job_id, "skipped", detail=str(exc))
    finally:
        keeper.stopped.set()
    if done.returncode != 0:
        runner = "distributed-training" if isinstance(spec, DistributedJobSpec) else "collectives"
        error = f"rank {rank}: run {runner} exited {done.returncode}: {(done.stdout + done.stderr)[-OUTPUT_TAIL:]}"
        try:
            registry.fail(member.job_id, claimant=member.claimant, error=error)
        except JobGone as exc:  # the group already failed (another rank first)
            return JobOutcome(member.job_id, "skipped", detail=f"{error}; and then: {exc}")
        return JobOutcome(member.job_id, "failed", detail=error)
    if rank != 0:
        return JobOutcome(member.job_id, "submitted", detail="rank 0 submits the group's run")
    path = written(spec, out)
    document = with_provenance(json.loads(path.read_text()), job=member.job_id, agent=member.agent)
    submitted = registry.submit(document)
    detail = submitted.message
    if submitted.status in ("stored", "known") and submitted.run_id is not None:  # any file it names, as a job's
        detail = upload_words(registry, member.job_id, document, path.parent, submitted.run_id)[0] or detail
    return JobOutcome(member.job_id, submitted.status, submitted.run_id, submitted.digest, detail)


def run_group_job(
    registry: GroupRegistry, job_id: int, *, agent: str, claimant: str, host: str, workdir: Path, lease_seconds: int
) -> JobOutcome:
    """What an agent's worker does with a group member job it is sent: learn its rank and spec from the registry,
    host the rendezvous on `host` (a free port there) if it is rank 0, and run its member's loop until the group's
    deadline (plus slack). A job that is no longer waiting for this agent is skipped, as a single job is."""
    try:
        view = registry.group(job_id)
    except JobGone as exc:
        return JobOutcome(job_id, "skipped", detail=str(exc))
    endpoint = f"{host}:{free_port(host)}" if view["rank"] == 0 else ""
    member = Member(job_id, agent, claimant, endpoint, workdir, lease_seconds)
    deadline = datetime.fromisoformat(view["form_deadline_at"])
    form_s = max(0.0, (deadline - datetime.now(deadline.tzinfo)).total_seconds()) + FORM_SLACK_S
    try:
        return run_member(registry, member, view["spec"], form_s)
    except JobGone as exc:  # the arrival was refused: the group failed or is no longer forming
        return JobOutcome(job_id, "skipped", detail=str(exc))


def free_port(host: str) -> int:
    """A port free on `host` now, for rank 0's c10d store (the launcher binds it moments later)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host.strip("[]"), 0))
        return int(probe.getsockname()[1])
