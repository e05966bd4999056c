"""A published MLPerf Server result is the capacity its submitter found within the benchmark's latency bounds
(DECISIONS.md, Inference): a decision on it says so and never calls it a lower bound to be re-measured."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.conftest import SHARED

SAMPLE = SHARED / "data" / "mlperf" / "inference_sample1_AMD_v5.1"

pytestmark = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"no MLPerf sample at {SAMPLE}")


@pytest.mark.django_db
def test_a_decision_on_a_published_server_result_reads_it_as_published_capacity(user, tmp_path: Path) -> None:
    from django.contrib.auth.models import Group

    root = tmp_path / "inference_results_v5.1"
    shutil.copytree(SAMPLE, root / "closed" / "AMD")
    call_command("import_results", "mlperf", str(root), "--no-progress", "--published", "none")
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    question = {
        "workload": "llama2-70b-99",
        "scenario": "server",
        "objectives": [],
        "demand": {"value": 100000, "unit": "tokens/s"},
    }
    created = client.post("/api/v1/decisions", {"title": "published", "question": question}, format="json")
    assert created.status_code == 201, created.content
    answer = created.json()["answer"]
    (candidate,) = answer["candidates"]
    assert candidate["capacity_basis"].startswith("the published MLPerf Inference v5.1 result: the highest load")
    assert "no-load-sweep" not in [g["code"] for g in candidate["gaps"]]
    words = " ".join(answer["summary"])
    assert "lower bound" not in words and "capacity is the published MLPerf Inference v5.1 result" in words
