"""The scaling axis of comparisons (comparability contract 1.3, issue 43 item 5), through the doors users take: the
submission and comparison APIs, the comparison page, a run's page and its /runs/<id>/sizes/ page.

Distributed runs are the sizes of a weak scaling plan built from a real 2-rank run (devtools.documents); MLPerf
Training results are NVIDIA's dlrm_dcnv2 on 1, 8 and 16 nodes of 8 H100s (NGC 24.04 HugeCTR) from the published
training_results_v4.0 (tests/fixtures/mlperf_training_scaling/PROVENANCE.md), imported by `benchreg import`."""

from __future__ import annotations

import copy
import html
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from devtools.documents import scaling_plan_documents
from protocol import scaling
from protocol.numbers import Style, number
from registry.models import Submission
from tests.registry.web.conftest import signed_in
from tests.registry.web.conftest import store_through_api as _store

pytestmark = pytest.mark.django_db

ROUND = Path(__file__).parents[2] / "fixtures" / "mlperf_training_scaling" / "training_results_v4.0"


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


def test_the_scaling_axis_refuses_another_parallelism_or_per_device_batch(user: Any) -> None:
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


@pytest.fixture
def nvidia_dlrm(user: Any) -> dict[int, Submission]:
    """The three imported results, by accelerator count."""
    call_command("import_results", "mlperf", str(ROUND), "--no-progress")
    runs = list(Submission.objects.filter(workload_name="dlrm_dcnv2"))
    assert len(runs) == 3
    return {scaling.size_of(r.document): r for r in runs}


# The times to train of NVIDIA dlrm_dcnv2 on 8, 64 and 128 H100-SXM5-80GB (eos, NGC 24.04 HugeCTR), in minutes as
# MLCommons' results table prints them: the olympic mean of the result files' run_start..run_stop times × the folder's
# scaling.json factor, as MLCommons' summarizer computes the published score (the round's table itself is not in the
# fixture, so these three numbers are not checked against it here).
PUBLISHED_MINUTES = {8: 3.871, 64: 1.352, 128: 0.990}


def test_the_imported_times_are_the_published_ones(nvidia_dlrm: dict[int, Submission]) -> None:
    for devices, minutes in PUBLISHED_MINUTES.items():
        seconds = nvidia_dlrm[devices].document["metrics"]["time_to_quality"]["seconds"]
        assert round(seconds / 60, 3) == minutes


def test_an_imported_training_result_links_to_its_configuration_at_other_sizes(
    user: Any, nvidia_dlrm: dict[int, Submission]
) -> None:
    # by hand, from the published times: E(64) = (T(8) × 8) ÷ (T(64) × 64)
    hand = (PUBLISHED_MINUTES[8] * 8) / (PUBLISHED_MINUTES[64] * 64)
    assert f"{hand:.3f}" == "0.358"
    run = nvidia_dlrm[64]
    run_page = html.unescape(signed_in(user).get(f"/runs/{run.pk}/").content.decode())
    assert f'href="/runs/{run.pk}/sizes/"' in run_page and "This configuration at other sizes" in run_page
    assert "sizes 8, 64, 128 devices" in run_page
    page = html.unescape(signed_in(user).get(f"/runs/{run.pk}/sizes/").content.decode())
    assert "derived, not an MLPerf metric" in page and "the smallest size present, 8 device(s)" in page
    row_64 = page.split('<th scope="row" class="num">64</th>', 1)[1].split("</tr>", 1)[0]
    assert ">0.358</td>" in row_64 and "Time to train (s)" in page
    assert "no interval, one result per size" in html.unescape(page).lower()
    assert "the base: 1 by definition" in page
    assert "?axis=scaling&amp;run=" in signed_in(user).get(f"/runs/{run.pk}/sizes/").content.decode()


def test_the_api_gives_the_curve_with_its_label_and_the_hand_computed_efficiency(
    user: Any, nvidia_dlrm: dict[int, Submission]
) -> None:
    run = nvidia_dlrm[8]
    response = _api(user).get(f"/api/v1/submissions/{run.pk}/sizes")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["axis"] == "scaling" and body["sizes"] == [8, 64, 128] and body["gap"] is None
    assert sorted(body["run_ids"]) == sorted(r.pk for r in nvidia_dlrm.values())
    curve = body["curve"]
    assert curve["label"] == "derived, not an MLPerf metric" and curve["metric"] == "time_to_quality"
    assert curve["interval"] == "no interval, one result per size"
    hand = {n: (PUBLISHED_MINUTES[8] * 8) / (PUBLISHED_MINUTES[n] * n) for n in (64, 128)}
    for row in curve["sizes"][1:]:
        assert row["efficiency"] == pytest.approx(hand[row["devices"]], abs=5e-4)  # minutes rounded to 3 places
        assert row["ci_low"] is None and row["values"] == 1
    stored = _compare(user, body["run_ids"], "scaling")
    assert stored.status_code == 201, stored.content
    assert stored.json()["result"]["scaling"]["sizes"] == curve["sizes"]


def test_a_result_stored_at_one_size_has_no_link_and_its_sizes_say_so(user: Any, tmp_path: Path) -> None:
    system = "eos_ngc24.04_merlin_hugectr"
    root = tmp_path / "training_results_v4.0" / "NVIDIA"
    shutil.copytree(ROUND / "NVIDIA" / "results" / system, root / "results" / system)
    (root / "systems").mkdir()
    shutil.copy(ROUND / "NVIDIA" / "systems" / f"{system}.json", root / "systems")
    call_command("import_results", "mlperf", str(root.parent), "--no-progress")
    (run,) = Submission.objects.filter(workload_name="dlrm_dcnv2")
    assert "This configuration at other sizes" not in signed_in(user).get(f"/runs/{run.pk}/").content.decode()
    body = _api(user).get(f"/api/v1/submissions/{run.pk}/sizes").json()
    assert body["sizes"] == [8] and body["gap"] == "This configuration is stored at one size only: no curve."
