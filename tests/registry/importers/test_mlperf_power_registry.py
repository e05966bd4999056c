"""Imported MLPerf Power and inferred results in the registry: a decision whose energy per output (and its cost) comes
from the imported measurement and says how it was measured; inferred runs labelled and linked to their measured run,
and counted as no independent evidence in a comparison."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from registry.models import Submission
from registry.reports.context import decision_answer
from registry.services.comparisons import comparison_create
from registry.services.imports import mlperf_import
from tests.registry.importers.mlperf.power_tree import (
    AVERAGE_W,
    SINGLE_STREAM,
    SUBMITTER,
    WINDOW_S,
    edge_submission,
    result_folder,
    system,
)
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db
SAMPLES_PER_SECOND = 688.623
OFFLINE = {
    "result_query_count": 1,
    "generated_samples_per_query": 24576,
    "result_samples_per_second": SAMPLES_PER_SECOND,
    "result_min_latency_ns": 1000000,
    "result_max_latency_ns": 9000000,
    "result_mean_latency_ns": 5000000,
    "result_90.00_percentile_latency_ns": 8000000,
    "power_begin": SINGLE_STREAM["power_begin"],
    "power_end": SINGLE_STREAM["power_end"],
}
QUESTION = {
    "workload": "resnet50",
    "scenario": "offline",
    "objectives": [],
    "quality": {"target_ratio": 0.99},
    "demand": {"value": 5000, "unit": "samples/s"},
    "prices": {"system_hour": {"*": 12.0}, "energy_per_kwh": 0.2},
}


def _admin() -> Any:
    user = get_user_model().objects.create_user(f"admin-{time.monotonic_ns()}", password="x")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    return user


def _datacenter_power_result(tmp_path: Path) -> Path:
    root = tmp_path / "round" / "closed" / SUBMITTER
    system(root, system_type="datacenter")
    result_folder(root, "Offline", "Offline", OFFLINE, power=True)
    return tmp_path / "round"


def test_a_decision_takes_energy_per_output_and_its_cost_from_imported_mlperf_power(tmp_path: Path) -> None:
    admin = _admin()
    assert mlperf_import(root=_datacenter_power_result(tmp_path), submitted_by=admin, round_name="v5.1").counts == {
        "stored": 1
    }
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(admin)
    response = client.post("/api/v1/decisions", {"title": "resnet50 at 5000/s", "question": QUESTION}, format="json")
    assert response.status_code == 201, response.content
    (candidate,) = response.json()["answer"]["candidates"]
    energy = candidate["energy_per_output"]
    expected = AVERAGE_W / SAMPLES_PER_SECOND  # MLPerf's average power (W) ÷ samples/s: J per sample
    assert energy["value"] == pytest.approx(expected, rel=1e-6) and energy["unit"] == "J/sample"
    cost = candidate["energy_cost_per_million"]["value"]
    assert cost == pytest.approx(expected * 0.2 * 1e6 / 3.6e6, rel=1e-6)  # J -> kWh at 0.2 per kWh, per million
    (measured,) = candidate["energy_measured"]
    assert measured["source"] == "spec-ptd" and measured["window_s"] == WINDOW_S
    assert "SPEC PTDaemon" in measured["method"] and "power_begin and power_end" in measured["method"]
    assert not any(g["code"] == "no-energy" for g in candidate["gaps"])
    # shown with its source on the decision page and in the report's answer table
    page = signed_in(admin).get(f"/decisions/{response.json()['id']}/").content.decode()
    assert f"spec-ptd over {WINDOW_S:g} s: SPEC PTDaemon" in page
    section = {"canonical": json.dumps(response.json()["answer"]), "id": 1, "answer": 1, "digest": "d"}
    (row,) = decision_answer(section)["rows"]  # type: ignore[index]
    assert row["energy_measured"] == [measured["words"]] and row["energy"] != "—"


def test_inferred_runs_are_labelled_and_linked_to_their_measured_run(tmp_path: Path) -> None:
    admin = _admin()
    edge_submission(tmp_path / "round")
    result = mlperf_import(root=tmp_path / "round", submitted_by=admin, round_name="v5.1")
    assert result.counts == {"stored": 3}
    measured = Submission.objects.get(scenario_kind="single-stream")
    inferred = Submission.objects.get(scenario_kind="offline")
    client = signed_in(admin)
    page = client.get(f"/runs/{inferred.pk}/").content.decode()
    assert f'Inferred from <a href="/runs/{measured.pk}/">run {measured.pk}</a>, not measured' in page
    assert "result_qps_without_loadgen_overhead" in page
    assert "Inferred from" not in client.get(f"/runs/{measured.pk}/").content.decode()
    catalogue = client.get("/").content.decode()
    assert catalogue.count(f'inferred from <a href="/runs/{measured.pk}/">run {measured.pk}</a>') == 2


def test_a_comparison_names_an_inferred_run_and_counts_it_as_no_evidence(tmp_path: Path) -> None:
    admin = _admin()
    edge_submission(tmp_path / "edge")
    mlperf_import(root=tmp_path / "edge", submitted_by=admin, round_name="v5.1")
    mlperf_import(root=_datacenter_power_result(tmp_path / "dc"), submitted_by=admin, round_name="v5.1")
    runs = list(Submission.objects.filter(scenario_kind="offline").order_by("pk"))
    assert len(runs) == 2
    comparison, _ = comparison_create(runs=runs, axis="system", created_by=admin)
    derived = [c for c in comparison.result["caveats"] if c["code"] == "derived-results"]
    assert derived and derived[0]["runs"] == [0]
