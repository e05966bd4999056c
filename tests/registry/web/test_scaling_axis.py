"""The scaling axis of comparisons (comparability contract 1.3, issue 43 item 5), through the doors users take: the
submission and comparison APIs, the comparison page, a run's page and its /runs/<id>/sizes/ page.

Distributed runs are the sizes of a weak scaling plan built from a real 2-rank run (devtools.documents). MLPerf
Training results are an authored derivative, not published results: Quanta's dlrm_dcnv2 on one D54U-3U (4
H100-PCIe) from the shared, trimmed training_results_v4.0, rewritten at test time as the same system on 1, 2 and 4
nodes with times to train the tests choose (devtools.mlperf_sizes), imported by `benchreg import mlperf`."""

from __future__ import annotations

import copy
import html
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from devtools.documents import scaling_plan_documents
from devtools.mlperf_sizes import copy_of_one_size, sized_training_round
from protocol import scaling
from protocol.numbers import Style, number
from registry.models import Submission
from tests.conftest import SHARED
from tests.registry.web.conftest import signed_in
from tests.registry.web.conftest import store_through_api as _store

pytestmark = pytest.mark.django_db

ROUND = Path(os.environ.get("BENCHREG_MLPERF_ROUNDS") or SHARED / "data" / "mlperf-rounds") / "training_v4.0"
SUBMITTER, SYSTEM, BENCHMARK = "Quanta_Cloud_Technology", "D54U-3U", "dlrm_dcnv2"  # 1 node × 4 H100-PCIe-80GB


def _api(user: Any) -> APIClient:
    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(user)
    return api


def _compare(user: Any, ids: list[int], axis: str) -> Any:
    return _api(user).post("/api/v1/comparisons", {"runs": ids, "axis": axis}, format="json")


# --------------------------------------------------------------------- world size is controlled on the other axes


@pytest.mark.parametrize("axis", ["system", "software", "precision"])
def test_two_runs_differing_only_in_world_size_are_refused_naming_the_field(user: Any, axis: str) -> None:
    one, two = (copy.deepcopy(d) for d in scaling_plan_documents("world", [1, 2], repeats=1))
    for doc in (one, two):  # runs of no plan: only the size differs
        doc["scenario"]["distributed"].pop("scaling")
    ids = _store(user, [one, two])
    response = _compare(user, ids, axis)
    assert response.status_code == 422, response.content
    fields = {e["pointer"]: e for e in response.json()["errors"]}
    assert "/scenario/distributed/world_size" in fields and "/scenario/distributed/global_batch" in fields
    assert "scenario.distributed.world_size: 1 vs 2" in fields["/scenario/distributed/world_size"]["message"]
    assert _compare(user, ids, "scaling").status_code == 201


def _strong(doc: dict[str, Any], global_batch: int = 64) -> dict[str, Any]:
    """The weak plan's size as a size of strong scaling plan `strong-…`: the global batch fixed, split over the
    devices, the throughputs recomputed from the same step times."""
    doc = copy.deepcopy(doc)
    layout = doc["scenario"]["distributed"]
    n = layout["world_size"]
    layout.update(per_device_batch=global_batch // n, global_batch=global_batch)
    layout["scaling"].update(id=f"strong-{layout['scaling']['id']}", mode="strong")
    doc["workload"]["shape"].update(batch_size=global_batch, micro_batch_size=global_batch // n)
    times = [t for rep in doc["samples"]["step_time_ms"]["repetitions"] for t in rep]
    throughput = global_batch * 1000 * len(times) / sum(times)
    doc["metrics"]["throughput"]["value"] = throughput
    figures = doc["metrics"]["distributed"]
    figures["samples_per_second_per_device"] = throughput / n
    for rank in figures["ranks"]:
        rank["samples_per_second"] = throughput / n
    return doc


def test_a_strong_scaling_plans_sizes_compare_and_never_beside_a_weak_plans(user: Any) -> None:
    weak = scaling_plan_documents("split", [1, 2, 4], repeats=1)
    strong = [_strong(doc) for doc in weak]
    ids = _store(user, strong + weak[1:2])
    response = _compare(user, ids[:3], "scaling")
    assert response.status_code == 201, response.content  # the per-device batch (64, 32, 16) is part of the size
    assert [s["devices"] for s in response.json()["result"]["scaling"]["sizes"]] == [1, 2, 4]
    mixed = _compare(user, [ids[0], ids[3]], "scaling")  # strong at 1 device, weak at 2
    assert mixed.status_code == 422
    assert "/scenario/distributed/scaling/mode" in {e["pointer"] for e in mixed.json()["errors"]}


def test_the_scaling_axis_refuses_another_parallelism(user: Any) -> None:
    one, two = scaling_plan_documents("kind", [1, 2], repeats=1)
    fsdp = copy.deepcopy(two)
    fsdp["scenario"]["distributed"]["parallelism"] = "fsdp"
    ids = _store(user, [one, fsdp])
    response = _compare(user, ids, "scaling")
    assert response.status_code == 422
    assert "/scenario/distributed/parallelism" in {e["pointer"] for e in response.json()["errors"]}


# ------------------------------------------------------------------------------ a plan's sizes on the scaling axis


def test_a_plans_sizes_compare_on_the_scaling_axis_with_protocol_scalings_efficiency(user: Any) -> None:
    docs = scaling_plan_documents("axis-1-2-4", [1, 2, 4])
    ids = _store(user, docs)
    response = _compare(user, ids, "scaling")
    assert response.status_code == 201, response.content
    result = response.json()["result"]
    curve = result["scaling"]
    assert result["axis"] == "scaling" and result["contract"]["version"] == "1.3"
    assert [s["devices"] for s in curve["sizes"]] == [1, 2, 4] and curve["base"]["devices"] == 1
    assert curve["label"] is None  # measured here, not an MLPerf result
    (plan,) = scaling.points(docs)
    for row, expected in zip(curve["sizes"], scaling.efficiency(plan), strict=True):
        assert row["efficiency"] == pytest.approx(expected.efficiency, rel=1e-5)
        assert (row["ci_low"] is None) == (expected.low is None)
        if expected.low is not None:
            assert row["ci_low"] == pytest.approx(expected.low, rel=1e-5)
            assert row["ci_high"] == pytest.approx(expected.high, rel=1e-5)
    assert [sorted(ids[i] for i in s["runs"]) for s in curve["sizes"]] == [
        sorted([ids[0], ids[3]]),
        sorted([ids[1], ids[4]]),
        sorted([ids[2], ids[5]]),
    ]
    page = html.unescape(signed_in(user).get(f"/comparisons/{response.json()['id']}/").content.decode())
    four = scaling.efficiency(plan)[2]
    assert "Scaling: this configuration by size" in page and f"{number(four.efficiency, Style.RATIO)}</td>" in page
    assert f"95% CI {number(four.low, Style.RATIO)}–{number(four.high, Style.RATIO)}" in page


def test_sizes_without_one_device_are_set_against_the_smallest_present(user: Any) -> None:
    """E(n) = S(n) × n_base ÷ n: from 2 devices, the 4-device efficiency is the plan's E(4) ÷ E(2)."""
    docs = scaling_plan_documents("from-two", [1, 2, 4])
    ids = _store(user, [d for d in docs if d["scenario"]["distributed"]["world_size"] > 1])
    curve = _compare(user, ids, "scaling").json()["result"]["scaling"]
    (plan,) = scaling.points(docs)
    by_size = {e.devices: e.efficiency for e in scaling.efficiency(plan)}
    assert curve["base"] == {"devices": 2, "words": "the smallest size present, 2 device(s)"}
    assert curve["sizes"][1]["efficiency"] == pytest.approx(by_size[4] / by_size[2], rel=1e-5)


# ------------------------------------------------------------------- MLPerf Training: one submitter at three sizes


# The times to train we chose for the authored sizes, in minutes, by number of nodes (4 accelerators each). By hand:
# E(n) = T(4) × 4 ÷ (T(n) × n), so E(8) = 36 × 4 ÷ (20 × 8) = 0.9 and E(16) = 36 × 4 ÷ (11.25 × 16) = 0.8.
CHOSEN_MINUTES = {1: 36, 2: 20, 4: 11.25}
MINUTES = {4 * nodes: minutes for nodes, minutes in CHOSEN_MINUTES.items()}  # by accelerators
HAND = {8: 0.9, 16: 0.8}


def shared_training_round() -> Path:
    if not (ROUND / SUBMITTER / "results" / SYSTEM / BENCHMARK).is_dir():
        pytest.skip(f"the shared trimmed MLPerf Training v4.0 round is not at {ROUND}")
    return ROUND


@pytest.fixture
def sized_dlrm(user: Any, tmp_path: Path) -> dict[int, Submission]:
    """The three imported results of the authored tree, by accelerator count."""
    tree = sized_training_round(shared_training_round(), SUBMITTER, SYSTEM, BENCHMARK, CHOSEN_MINUTES, tmp_path)
    call_command("import_results", "mlperf", str(tree), "--no-progress")
    runs = list(Submission.objects.filter(workload_name=BENCHMARK))
    assert len(runs) == 3
    return {scaling.size_of(r.document): r for r in runs}


def test_the_imported_times_are_the_chosen_ones(sized_dlrm: dict[int, Submission]) -> None:
    assert sorted(sized_dlrm) == [4, 8, 16]
    for devices, minutes in MINUTES.items():
        document = sized_dlrm[devices].document
        assert document["metrics"]["time_to_quality"]["seconds"] == minutes * 60  # whole ms: exact
        assert document["system"]["nodes"] == devices // 4 and document["provenance"]["submitter"] == SUBMITTER
        assert "AUTHORED TEST DERIVATIVE" in document["system"]["notes"]["hw_notes"]
        assert document["metrics"]["quality"]["passed"] is True


def test_an_imported_training_result_links_to_its_configuration_at_other_sizes(
    user: Any, sized_dlrm: dict[int, Submission]
) -> None:
    hand = (MINUTES[4] * 4) / (MINUTES[8] * 8)
    assert hand == pytest.approx(HAND[8])
    run = sized_dlrm[8]
    run_page = html.unescape(signed_in(user).get(f"/runs/{run.pk}/").content.decode())
    assert f'href="/runs/{run.pk}/sizes/"' in run_page and "This configuration at other sizes" in run_page
    assert "sizes 4, 8, 16 devices" in run_page
    page = html.unescape(signed_in(user).get(f"/runs/{run.pk}/sizes/").content.decode())
    assert "derived, not an MLPerf metric" in page and "the smallest size present, 4 device(s)" in page
    row_8 = page.split('<th scope="row" class="num">8</th>', 1)[1].split("</tr>", 1)[0]
    row_16 = page.split('<th scope="row" class="num">16</th>', 1)[1].split("</tr>", 1)[0]
    assert f">{hand:.3f}</td>" in row_8 and ">0.900</td>" in row_8 and ">0.800</td>" in row_16
    assert "Time to train (s)" in page
    assert "no interval, one result per size" in page.lower()
    assert "the base: 1 by definition" in page
    assert "?axis=scaling&amp;run=" in signed_in(user).get(f"/runs/{run.pk}/sizes/").content.decode()


def test_the_api_gives_the_curve_with_its_label_and_the_hand_computed_efficiency(
    user: Any, sized_dlrm: dict[int, Submission]
) -> None:
    run = sized_dlrm[4]
    response = _api(user).get(f"/api/v1/submissions/{run.pk}/sizes")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["axis"] == "scaling" and body["sizes"] == [4, 8, 16] and body["gap"] is None
    assert sorted(body["run_ids"]) == sorted(r.pk for r in sized_dlrm.values())
    curve = body["curve"]
    assert curve["label"] == "derived, not an MLPerf metric" and curve["metric"] == "time_to_quality"
    assert curve["interval"] == "no interval, one result per size"
    assert curve["base"]["devices"] == 4 and curve["sizes"][0]["efficiency"] == pytest.approx(1.0)
    hand = {n: (MINUTES[4] * 4) / (MINUTES[n] * n) for n in (8, 16)}
    assert hand == pytest.approx(HAND)
    assert [row["devices"] for row in curve["sizes"]] == [4, 8, 16]
    for row in curve["sizes"][1:]:
        assert row["efficiency"] == pytest.approx(hand[row["devices"]], rel=1e-9)  # the times are exact
        assert row["ci_low"] is None and row["values"] == 1
    stored = _compare(user, body["run_ids"], "scaling")
    assert stored.status_code == 201, stored.content
    result = stored.json()["result"]
    assert result["scaling"]["sizes"] == curve["sizes"] and result["scaling"]["base"] == curve["base"]
    assert result["scaling"]["base"]["words"] == "the smallest size present, 4 device(s)"
    page = html.unescape(signed_in(user).get(f"/comparisons/{stored.json()['id']}/").content.decode())
    assert "derived, not an MLPerf metric" in page and ">0.800</td>" in page


def test_a_result_stored_at_one_size_has_no_link_and_its_sizes_say_so(user: Any, tmp_path: Path) -> None:
    tree = copy_of_one_size(shared_training_round(), SUBMITTER, SYSTEM, tmp_path)
    call_command("import_results", "mlperf", str(tree), "--no-progress")
    (run,) = Submission.objects.filter(workload_name=BENCHMARK)
    assert "This configuration at other sizes" not in signed_in(user).get(f"/runs/{run.pk}/").content.decode()
    body = _api(user).get(f"/api/v1/submissions/{run.pk}/sizes").json()
    assert body["sizes"] == [4] and body["gap"] == "This configuration is stored at one size only: no curve."
