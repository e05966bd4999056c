"""The job spec of distributed training through the agents (runners/distributed/job.py): a group's member jobs hold
the command's options, refused by field when the command would refuse them, and the run they must produce is stated
by pointer (what the registry holds the group's one run to)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import value_at  # as the registry reads a run against its job
from runners import api
from runners.backends import UnsupportedRun
from runners.distributed import job

RUN = json.loads((Path(__file__).parents[1] / "protocol" / "data" / "distributed_training_ddp_2.json").read_text())


def test_a_run_of_the_spec_states_every_expected_field() -> None:
    spec = api.job_spec(
        {"phase": "distributed-training", "workload": "mlp-tiny", "nproc_per_node": 2, "batch_size": 16}
    )
    assert isinstance(spec, job.DistributedJobSpec)
    expected = api.expected_fields(spec)
    assert {pointer: value_at(RUN, pointer) for pointer in expected} == expected


def test_a_run_on_other_nodes_or_ranks_is_not_the_job() -> None:
    spec = job.from_fields({"workload": "mlp-tiny", "nnodes": 2, "nproc_per_node": 1, "batch_size": 16})
    expected = job.expected_fields(spec)
    differ = sorted(p for p, want in expected.items() if value_at(RUN, p) != want)
    assert differ == ["/scenario/distributed/nodes", "/scenario/distributed/processes_per_node", "/system/nodes"]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"workload": "mlp-tiny", "nnodes": True}, "nnodes must be an integer"),
        ({"workload": "mlp-tiny", "batch_size": "8"}, "batch_size must be an integer or null"),
        ({"workload": "mlp-tiny", "learning_rate": "fast"}, "learning_rate must be a number"),
        ({"workload": "mlp-tiny", "pipeline": 2}, "has no field pipeline"),
        ({"nproc_per_node": 2}, "names its workload"),
        ({"workload": "mlp-tiny", "device": "tpu"}, "device is cpu"),
        ({"workload": "mlp-tiny", "precision": "int8"}, "fp32 or bf16"),
        ({"workload": "mlp-tiny", "nproc_per_node": 2048}, "--nproc-per-node must be between 1 and 1024"),
    ],
)
def test_what_the_command_would_refuse_is_refused_by_field(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        job.from_fields(fields)


def test_it_runs_through_a_group_not_execute() -> None:
    with pytest.raises(UnsupportedRun, match="through its job group"):
        api.execute(job.from_fields({"workload": "mlp-tiny"}))
