"""Protocol 1.3 collective sweeps: a document's bandwidths must follow from its sizes and times by nccl-tests'
formulas (hand-computed here), within the rounding of what it was read from, and be refused at the figure otherwise."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import protocol
from devtools.documents import COLLECTIVE_SIZES as SIZES
from devtools.documents import collective_document
from protocol.summary import summarize


def codes(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(protocol.Invalid) as refused:
        protocol.check(doc)
    return {e.pointer: e.code for e in refused.value.errors}


def test_a_sweep_whose_figures_follow_from_its_times_is_accepted_and_headlined_by_its_largest_busbw() -> None:
    checked = protocol.check(collective_document())
    headline = summarize(checked.document).headline
    assert (headline.metric, headline.value, headline.unit, headline.lower_is_better) == (
        "collectives",
        18.35008,
        "GB/s",
        False,
    )


def test_a_busbw_that_is_not_algbw_times_the_all_reduce_factor_is_refused_at_the_figure() -> None:
    doc = collective_document()
    doc["metrics"]["collectives"]["sizes"][1]["busbw_gbs"] = 10.48576  # algbw x 1: the broadcast factor, not 2(n-1)/n
    assert codes(doc) == {"/metrics/collectives/sizes/1/busbw_gbs": "collective-bandwidth-mismatch"}
    with pytest.raises(protocol.Invalid, match=r"busbw = algbw x 1\.75, src/all_reduce.cu AllReduceGetBw"):
        protocol.check(doc)


def test_the_same_figures_as_a_gather_follow_the_gather_factor() -> None:
    # all_gather over 8 ranks: the printed size is count x 4 B x 8; busbw = algbw x 7/8
    sizes = [{"size_bytes": 1048576, "count": 32768, "side": "out-of-place", "time_us": 100.0}]
    sizes[0] |= {"algbw_gbs": 10.48576, "busbw_gbs": 9.17504}
    doc = collective_document(collective="all_gather", sizes=sizes)
    doc["workload"]["name"] = "all_gather"
    protocol.check(doc)
    doc["metrics"]["collectives"]["sizes"][0]["count"] = 262144  # the all-reduce's count: 8 times the bytes
    assert codes(doc) == {"/metrics/collectives/sizes/0/size_bytes": "collective-size-mismatch"}


def test_printed_figures_are_checked_within_their_last_printed_place() -> None:
    # as nccl-tests prints them: "100.0" us, "10.49" and "18.35" GB/s; 18.36 is beyond half a unit of what
    # 100.05 us .. 99.95 us give (18.3409 .. 18.3593) plus 0.005
    sizes = copy.deepcopy(SIZES[1:])
    sizes[0] |= {"algbw_gbs": 10.49, "busbw_gbs": 18.35}
    sizes[0]["printed"] = {"time_us": "100.0", "algbw_gbs": "10.49", "busbw_gbs": "18.35"}
    protocol.check(collective_document(sizes=sizes))
    sizes[0]["busbw_gbs"], sizes[0]["printed"]["busbw_gbs"] = 18.37, "18.37"
    assert codes(collective_document(sizes=sizes)) == {
        "/metrics/collectives/sizes/0/busbw_gbs": "collective-bandwidth-mismatch"
    }
    sizes[0]["printed"]["busbw_gbs"] = "18.35"  # the text and the number disagree
    assert codes(collective_document(sizes=sizes)) == {
        "/metrics/collectives/sizes/0/printed/busbw_gbs": "collective-printed-mismatch"
    }


def test_summaries_must_follow_from_the_sizes() -> None:
    doc = collective_document(small_message_latency_us=100.0, avg_busbw_gbs=1.0)
    doc["metrics"]["collectives"]["sizes"][1]["rank_times_us"] = [100.0, 99.0, 98.0, 97.0, 96.0, 95.0, 94.0, 93.0]
    doc["metrics"]["collectives"]["sizes"][0]["rank_times_us"] = [20.0, 21.0]
    assert codes(doc) == {
        "/metrics/collectives/small_message_latency_us": "collective-summary-mismatch",
        "/metrics/collectives/avg_busbw_gbs": "collective-summary-mismatch",
        "/metrics/collectives/sizes/0/rank_times_us": "collective-ranks-mismatch",
    }
    doc["metrics"]["collectives"] |= {"small_message_latency_us": 20.0, "avg_busbw_gbs": (0.0007 + 18.35008) / 2}
    doc["metrics"]["collectives"]["sizes"][0]["rank_times_us"] = None
    protocol.check(doc)
    doc["metrics"]["collectives"]["time_statistic"] = "mean-over-ranks"  # 100 is their max, not their mean
    assert codes(doc) == {"/metrics/collectives/sizes/1/time_us": "collective-summary-mismatch"}


def test_the_phase_needs_its_scenario_its_metric_and_its_collective_as_workload() -> None:
    doc = collective_document()
    doc["workload"]["name"] = "broadcast"
    doc["scenario"]["kind"] = "offline"
    del doc["metrics"]["collectives"]
    doc["metrics"]["primary"] = "throughput"
    found = codes(doc)
    assert found["/scenario/kind"] == "scenario-phase-mismatch"
    assert found["/metrics/collectives"] == "missing-required-metric"
    doc = collective_document()
    doc["workload"]["name"] = "broadcast"
    assert codes(doc) == {"/workload/name": "collective-workload-mismatch"}


def test_a_1_2_document_may_not_use_the_collective_phase() -> None:
    doc = collective_document()
    doc["protocol"] = "benchreg.submission/1.2"
    assert codes(doc)["/phase"] == "needs-newer-minor"


def test_a_topology_must_describe_its_nodes_and_a_square_matrix() -> None:
    doc = collective_document()
    matrix = {"labels": ["GPU0", "GPU1"], "cells": [["X", "NV18"], ["NV18"]]}
    host = {"host": "a", "device_matrix": matrix, "nics": [{"name": "mlx5_0/1", "kind": "infiniband"}]}
    doc["system"]["topology"] = {"nodes": 2, "hosts": [host]}
    assert codes(doc) == {
        "/system/topology/nodes": "topology-nodes-mismatch",
        "/system/topology/hosts/0/device_matrix/cells": "topology-matrix-not-square",
    }
    matrix["cells"][1].append("X")
    doc["system"]["topology"]["nodes"] = 1
    protocol.check(doc)
    matrix["cells"][1][0] = "NVLINK"  # not a link nvidia-smi names
    assert codes(doc) == {"/system/topology/hosts/0/device_matrix/cells/1/0": "bad-format"}
