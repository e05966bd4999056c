"""The Python API of the runners: `execute(spec)` for one run, `quick_sweep()` for the main-job demo.

    from runners.api import RunSpec, execute
    doc = execute(RunSpec(phase="inference", workload="mlp-classifier", batch_size=8, quick=True))

Every returned document has passed `protocol.check`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import collectives_spec, inference, training
from .backends import UnsupportedRun, default_backend, get_backend
from .collectives_spec import CollectiveJobSpec
from .distributed import job as distributed_job
from .distributed.job import DistributedJobSpec
from .progress import Reporter, RichReporter, Silent
from .serving import spec as serving
from .serving.spec import ServingSpec
from .spec import RunSpec
from .spec import expected_fields as run_expected_fields

__all__ = [
    "JobSpec",
    "RunSpec",
    "ServingSpec",
    "execute",
    "execute_job",
    "expected_fields",
    "job_spec",
    "quick_sweep",
    "sweep_specs",
]

# What an agent job runs: a bundled runner's RunSpec, one level of a serving sweep (phase "serving"), a collective
# sweep (phase "collectives") or distributed training (phase "distributed-training"): one node of a job group.
JobSpec = RunSpec | ServingSpec | CollectiveJobSpec | DistributedJobSpec


@dataclass(frozen=True)
class JobKind:
    """An agent job's phase other than the bundled runners': its spec type, how its fields become that spec, and
    what a run of it must state (by JSON pointer)."""

    spec_type: type[Any]
    from_fields: Callable[[Mapping[str, Any]], JobSpec]
    expected: Callable[[Any], dict[str, Any]]


# Every agent-job phase that is not a bundled runner (those are a RunSpec): adding one is a row here
# (docs/architecture.md, "Adding a runner").
JOB_KINDS: dict[str, JobKind] = {
    "serving": JobKind(ServingSpec, serving.from_fields, serving.expected_fields),
    collectives_spec.PHASE: JobKind(CollectiveJobSpec, collectives_spec.from_fields, collectives_spec.expected_fields),
    distributed_job.PHASE: JobKind(DistributedJobSpec, distributed_job.from_fields, distributed_job.expected_fields),
}


def job_spec(fields: Mapping[str, Any]) -> JobSpec:
    """The spec an agent job's fields describe: a phase of JOB_KINDS is its spec (from the rest of the fields), any
    other phase a RunSpec. Raises TypeError or ValueError (SpecInvalid names the field)."""
    kind = JOB_KINDS.get(str(fields.get("phase")))
    if kind is not None:
        return kind.from_fields({k: v for k, v in fields.items() if k != "phase"})
    return RunSpec(**fields)


def expected_fields(job: JobSpec) -> dict[str, Any]:
    """What the document of a run of `job` must state, by JSON pointer (the registry checks an agent's run)."""
    for kind in JOB_KINDS.values():
        if isinstance(job, kind.spec_type):
            return kind.expected(job)
    assert isinstance(job, RunSpec)
    return run_expected_fields(job)


def execute(
    spec: JobSpec, progress: bool = False, reporter: Reporter | None = None, folder: Path | None = None
) -> dict[str, Any]:
    """Run `spec` and return ONE validated protocol document (a ServingSpec: the one level it names; with `folder`,
    its per-request export is written there and the document names it in provenance.artifacts).

    Raises backends.UnsupportedRun when the backend cannot run the combination, serving.runner.Refused when an
    endpoint cannot be measured (nothing sent), and protocol.Invalid if the document fails validation (a bug:
    the runner never writes an invalid document).
    """
    if isinstance(spec, ServingSpec):
        return serving.measure_level(spec, folder)
    if isinstance(spec, CollectiveJobSpec | DistributedJobSpec):
        # a node of a job group meets its peers at the group's rendezvous, which the agent's group loop gives it
        raise UnsupportedRun("a collectives or distributed-training job runs through its job group, not execute()")
    backend = get_backend(spec.backend, spec.device)
    runner = training.run if spec.phase == "training" else inference.run
    if reporter is not None:
        return runner(spec, backend, reporter)
    if not progress:
        return runner(spec, backend, Silent())
    with RichReporter() as rich:
        rich.note(
            f"[bold]{spec.phase} {spec.workload} {spec.precision} batch {spec.batch_size or 'default'} "
            f"({backend.name}, {backend.device})"
        )
        return runner(spec, backend, rich)


def execute_job(spec: JobSpec, folder: Path) -> dict[str, Any]:
    """An agent job's run: `execute(spec)`, each file its document names written in `folder` (the job's own),
    from which the agent uploads it once the run is stored."""
    return execute(spec, folder=folder)


def sweep_specs(backend: str | None = None, threads: int | None = 1) -> list[RunSpec]:
    """The quick sweep: a few short, comparable runs that fit in a minute or two on a laptop CPU.

    Shapes are reduced from the workload defaults (recorded in each document, so they compare only with
    runs of the same shape). One thread by default: single-thread runs compare across any two machines,
    and on a machine shared with other work, multi-threaded BLAS oversubscribes the cores and measures
    the contention instead (5-10x slower here, on 2 shared cores). Pass threads=None for all CPUs.
    """
    name = backend or default_backend()
    common: dict[str, Any] = {"backend": name, "quick": True, "threads": threads}
    specs = [
        RunSpec(phase="inference", workload="mlp-classifier", scenario="offline", batch_size=1, **common),
        RunSpec(phase="inference", workload="mlp-classifier", scenario="offline", batch_size=32, **common),
        RunSpec(
            phase="inference",
            workload="decoder-small",
            scenario="single-stream",
            batch_size=1,
            sequence_length=32,
            output_tokens=8,
            **common,
        ),
    ]
    if name == "torch":
        specs.append(
            RunSpec(phase="training", workload="encoder-small", batch_size=8, sequence_length=64, steps=20, **common)
        )
    else:  # the NumPy backend trains the MLP only
        specs.append(RunSpec(phase="training", workload="mlp-classifier", batch_size=32, steps=30, **common))
    return specs


def quick_sweep(backend: str | None = None, progress: bool = False, threads: int | None = 1) -> list[dict[str, Any]]:
    """Run `sweep_specs(backend, threads)` and return their validated documents, in order."""
    context = RichReporter() if progress else nullcontext(Silent())
    with context as reporter:
        return [execute(spec, reporter=reporter) for spec in sweep_specs(backend, threads)]
