"""A served run's server telemetry (protocol 1.3: metrics.server_telemetry, with the energy a DCGM exporter gave) is
stored as the command wrote it and shown on the run's page, figure by figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registry.services.submissions import submission_create
from tests.registry.web.conftest import signed_in
from tests.runners.serving.test_telemetry import measured_document

pytestmark = pytest.mark.django_db


def test_a_served_run_with_telemetry_is_stored_whole_and_its_page_shows_each_figure(
    viewer: Any, submitter: Any, tmp_path: Path
) -> None:
    doc = measured_document(tmp_path)
    run, _ = submission_create(document=doc, submitted_by=submitter)
    run.refresh_from_db()
    assert run.document["metrics"]["server_telemetry"] == doc["metrics"]["server_telemetry"]
    assert run.document["metrics"]["energy"] == doc["metrics"]["energy"]
    html = signed_in(viewer).get(f"/runs/{run.pk}/").content.decode()
    for row in ("server_telemetry GPU 1 power_w_mean", "server_telemetry GPU 0 memory_used_mib_max",
                "server_telemetry engine kv_cache_usage_mean", "energy.average_power_w", "energy.joules"):  # fmt: skip
        assert row in html, row
    power = html.partition("server_telemetry GPU 1 power_w_mean")[2][:200]
    assert ">450<" in power.replace(" ", "") and "W" in power, power
    assert "dcgm http://127.0.0.1:" in html and "vllm.cache_config.num_gpu_blocks" in html
