"""Imported results as a reader sees them in Chromium at 1,280 px: a history placed by when each run was measured,
with the run that states no measured time listed apart, and a matrix of a real MLPerf round whose cells tell
configurations apart by settings in words (screenshots history-measured-1280.png, matrix-settings-1280.png)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from devtools.documents import variant
from registry.services.imports import mlperf_import
from registry.services.submissions import submission_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-browser-test-password"
WIDE = 1280
ROUNDS = Path(
    os.environ.get("BENCHREG_MLPERF_ROUNDS") or Path(__file__).resolve().parents[3] / "shared/data/mlperf-rounds"
)
# Three submitters of 8× MI325X: their results of one set differ in LoadGen settings, so the matrix splits them.
SUBMITTERS = ("closed/GigaComputing", "closed/MiTAC", "closed/Vultr")
MEASURED = ["2025-03-01T09:00:00Z", "2024-01-10T09:00:00Z", "2024-06-20T09:00:00Z"]  # stored in this order


def _sign_in(page: Any, base: str, name: str) -> None:
    page.goto(base + "/accounts/login/")
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(base + "/")


def test_an_imported_history_reads_by_measured_time_with_the_undated_run_apart(
    live_server: Any, page: Any, shoot: Any, django_user_model: Any, offline_example: dict[str, Any]
) -> None:
    user = django_user_model.objects.create_superuser("ada", "ada@example.org", PASSWORD)
    runs = [
        submission_create(
            document=variant(offline_example, "lab-cpu-07", 100.0 + i, **{"provenance.started_at": when}),
            submitted_by=user,
        )[0]
        for i, when in enumerate(MEASURED)
    ]
    undated = variant(offline_example, "lab-cpu-07", 120.0, **{"provenance.started_at": None})
    undated["provenance"]["finished_at"] = None
    runs.append(submission_create(document=undated, submitted_by=user)[0])
    page.set_viewport_size({"width": WIDE, "height": 900})
    _sign_in(page, live_server.url, "ada")
    page.goto(f"{live_server.url}/runs/{runs[0].pk}/history/")
    caption = page.locator(".chart--history figcaption").first.inner_text()
    assert "by the date each result was measured" in caption and "not when it was imported" in caption
    apart = page.locator("#unplaced-heading ~ ul").inner_text()
    assert f"Run {runs[-1].pk}" in apart and "no time of measurement stated" in apart
    rows = page.locator("#runs-heading ~ .table-wrap tbody tr")
    dates = [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())]
    assert dates == ["2025-03-01 09:00", "2024-06-20 09:00", "2024-01-10 09:00"]  # newest measured first
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDE
    shoot(page, "history-measured-1280")


def test_the_matrix_of_a_real_round_tells_configurations_apart_in_words(
    live_server: Any, page: Any, shoot: Any, django_user_model: Any, tmp_path: Path
) -> None:
    round_folder = ROUNDS / "inference_v5.1"
    if not round_folder.is_dir():
        pytest.skip(f"needs the trimmed MLPerf round at {round_folder}")
    tree = tmp_path / "inference_v5.1"
    for folder in SUBMITTERS:
        shutil.copytree(round_folder / folder, tree / folder)
    admin = django_user_model.objects.create_superuser("ada", "ada@example.org", PASSWORD)
    mlperf_import(root=tree, submitted_by=admin, round_name="v5.1")
    page.set_viewport_size({"width": WIDE, "height": 900})
    _sign_in(page, live_server.url, "ada")
    page.goto(f"{live_server.url}/matrix/")
    cells = page.locator("td.mcell").all_inner_texts()
    told = [c for c in cells if "target QPS" in c or "samples per query" in c]
    assert told, cells
    text = page.locator("main").inner_text()
    assert not re.search(r"loadgen\.|user\.conf:|[a-z_]+=\d", text), text
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDE
    shoot(page, "matrix-settings-1280")
