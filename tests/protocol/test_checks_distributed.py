"""Protocol 1.3's distributed training fields: a run the runner wrote passes; each disagreement inside the world's
layout, its batch or its per-rank figures is refused at its pointer with its code; 1.2 documents may not use them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import protocol
from tests.protocol.test_protocol_versions import declaring, put

RUN = json.loads((Path(__file__).parent / "data" / "distributed_training_ddp_2.json").read_text())


def _found(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.pointer, e.code) for e in protocol.errors(doc)]


def test_a_run_the_runner_wrote_passes() -> None:
    assert RUN["protocol"] == "benchreg.submission/1.3"
    assert protocol.errors(RUN) == []


@pytest.mark.parametrize("version", ["1.0", "1.2"])
def test_an_earlier_minor_may_not_use_the_distributed_fields(version: str) -> None:
    found = _found(declaring(RUN, version))
    assert ("/scenario/distributed", "needs-newer-minor") in found
    assert ("/metrics/distributed", "needs-newer-minor") in found


def test_a_global_batch_that_is_not_per_device_times_world_times_accumulation_is_refused() -> None:
    doc = put(RUN, "/scenario/distributed/global_batch", 48)
    doc = put(doc, "/workload/shape/batch_size", 48)
    found = protocol.errors(doc)
    assert [(e.pointer, e.code) for e in found] == [
        ("/scenario/distributed/global_batch", "inconsistent-distributed-batch")
    ]
    assert "16 × 2 × 1 = 32" in found[0].message


def test_the_world_is_its_nodes_times_their_processes() -> None:
    doc = put(put(RUN, "/scenario/distributed/nodes", 2), "/system/nodes", 2)
    assert _found(doc) == [("/scenario/distributed/world_size", "inconsistent-world-size")]


def test_the_worlds_nodes_are_the_systems() -> None:
    doc = put(put(RUN, "/scenario/distributed/processes_per_node", 1), "/scenario/distributed/nodes", 2)
    assert _found(doc) == [("/scenario/distributed/nodes", "distributed-nodes-mismatch")]
    assert _found(put(doc, "/system/nodes", 2)) == []


def test_the_shape_states_the_same_batch() -> None:
    doc = put(RUN, "/workload/shape/micro_batch_size", 8)
    doc = put(doc, "/workload/shape/gradient_accumulation_steps", 2)
    assert _found(doc) == [
        ("/workload/shape/gradient_accumulation_steps", "inconsistent-distributed-shape"),
        ("/workload/shape/micro_batch_size", "inconsistent-distributed-shape"),
    ]


def test_every_rank_of_the_world_is_listed_once() -> None:
    doc = copy.deepcopy(RUN)
    doc["metrics"]["distributed"]["ranks"][1]["rank"] = 0
    assert _found(doc) == [("/metrics/distributed/ranks", "ranks-not-the-world")]
    doc = put(RUN, "/metrics/distributed/slowest_rank", 2)
    assert ("/metrics/distributed/slowest_rank", "ranks-not-the-world") in _found(doc)


def test_the_slowest_rank_is_the_busiest() -> None:
    doc = put(RUN, "/metrics/distributed/slowest_rank", 0)
    found = protocol.errors(doc)
    assert [(e.pointer, e.code) for e in found] == [("/metrics/distributed/slowest_rank", "slowest-rank-disagrees")]
    assert "the slowest is 1" in found[0].message


def test_per_device_samples_are_the_throughput_over_the_world() -> None:
    doc = put(RUN, "/metrics/distributed/samples_per_second_per_device", RUN["metrics"]["throughput"]["value"])
    assert _found(doc) == [("/metrics/distributed/samples_per_second_per_device", "inconsistent-derived-value")]


def test_distributed_figures_need_their_layout_and_a_training_run() -> None:
    doc = copy.deepcopy(RUN)
    del doc["scenario"]["distributed"]
    assert ("/metrics/distributed", "distributed-layout-missing") in _found(doc)
    assert ("/scenario/distributed", "distributed-needs-training") in _found(put(RUN, "/phase", "inference"))


@pytest.mark.parametrize(
    ("scaling", "expected"),
    [
        ({"id": "p", "mode": "weak", "index": 1, "devices": [1, 2]}, []),
        (
            {"id": "p", "mode": "weak", "index": 2, "devices": [1, 2]},
            [("/scenario/distributed/scaling/index", "scaling-index-out-of-range")],
        ),
        (
            {"id": "p", "mode": "strong", "index": 0, "devices": [1, 2]},
            [("/scenario/distributed/scaling/devices/0", "scaling-size-mismatch")],
        ),
        (
            {"id": "p", "mode": "linear", "index": 0, "devices": [2]},
            [("/scenario/distributed/scaling/mode", "not-allowed-value")],
        ),
    ],
)
def test_a_size_of_a_scaling_plan_is_this_runs_world(scaling: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert _found(put(RUN, "/scenario/distributed/scaling", scaling)) == expected


def test_a_refused_document_is_not_stored_partially_and_says_every_problem() -> None:
    doc = put(RUN, "/scenario/distributed/global_batch", 48)
    doc = put(doc, "/metrics/distributed/slowest_rank", 0)
    with pytest.raises(protocol.Invalid) as caught:
        protocol.check(json.dumps(doc))
    assert {e.code for e in caught.value.errors} >= {"inconsistent-distributed-batch", "slowest-rank-disagrees"}
