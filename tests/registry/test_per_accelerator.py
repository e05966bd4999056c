"""Figures per accelerator on real imported evidence, checked by hand against the source files: the Kimi-K2.5 serving
sweep on 8× B200 (InferenceX's own `output_tput_per_gpu` and `tput_per_gpu` in each level's harness record) and
MLPerf Inference v5.1 results (CoreWeave's deepseek-r1 on 2 nodes × 4 GB300, Dell's retinanet on 2× L4: the
published rate of mlperf_log_summary.txt ÷ accelerators_per_node × number_of_nodes of the systems JSON), in the
catalogue (shown and sorted), the matrix, the API (list, detail, filters), a comparison and a decision (page and
signed report's table)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from registry.importers import serving
from registry.models import Submission
from registry.reports.context import decision_answer
from registry.services.imports_serving import serving_import
from tests.conftest import SHARED
from tests.registry.importers.serving.test_aiperf_sweeps import KIMI, deployment_file

pytestmark = pytest.mark.django_db
SWEEPS = SHARED / "data" / "serving"
ROUND = SHARED / "data" / "mlperf-rounds" / "inference_v5.1" / "closed"
MLPERF_LABEL = "derived, not an MLPerf metric"


@pytest.fixture(autouse=True)
def _data() -> None:
    if not (SWEEPS / KIMI).exists() or not ROUND.exists():
        pytest.skip("the shared serving sweeps and MLPerf rounds are not beside this checkout")


def _harness(conc: int) -> dict[str, Any]:
    """InferenceX's record of one Kimi level: its own figures per GPU (tput_per_gpu is input+output)."""
    path = next((SWEEPS / KIMI).glob(f"bmk_agentic_*_conc{conc}_*/*.json"))
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _published(submitter: str, system: str, benchmark: str, scenario: str, label: str) -> tuple[float, int]:
    """(the rate mlperf_log_summary.txt prints under `label`, accelerators_per_node × number_of_nodes)."""
    root = ROUND / submitter
    summary = (
        root / "results" / system / benchmark / scenario / "performance/run_1/mlperf_log_summary.txt"
    ).read_text()
    rate = float(re.search(rf"^{re.escape(label)}\s*:\s*([0-9.]+)", summary, re.MULTILINE)[1])  # type: ignore[index]
    described = json.loads((root / "systems" / f"{system}.json").read_text())
    return rate, int(described["accelerators_per_node"]) * int(described["number_of_nodes"])


@pytest.fixture
def stored(tmp_path: Path, user: Any) -> dict[str, Any]:
    deployment = serving.load(deployment_file(tmp_path, KIMI), {})
    serving_import(paths=[SWEEPS / KIMI], deployment=deployment, submitted_by=user)
    call_command("import_results", "mlperf", str(ROUND / "CoreWeave"))
    call_command("import_results", "mlperf", str(ROUND / "Dell"))
    kimi = {r.document["scenario"]["concurrency"]: r for r in Submission.objects.filter(accelerator_model="B200")}
    mlperf = {(r.workload_name, r.scenario_kind): r for r in Submission.objects.filter(origin_kind="mlperf-inference")}
    return {"kimi": kimi, "mlperf": mlperf}


def test_a_serving_level_per_accelerator_is_inferencex_figure_per_gpu(stored: dict[str, Any]) -> None:
    for conc, run in stored["kimi"].items():
        record = _harness(conc)
        assert run.accelerator_count == 8 == record["total_tput_tps"] / record["tput_per_gpu"]
        assert run.per_accelerator_output_tokens == pytest.approx(record["output_tput_per_gpu"], rel=1e-9)
        assert run.per_accelerator_total_tokens == pytest.approx(record["tput_per_gpu"], rel=1e-9)
        assert run.per_accelerator_throughput == run.per_accelerator_output_tokens
        assert run.per_accelerator_unit == "tokens/s"
    # by hand, concurrency 8: 272.4918 output tokens/s ÷ 8 = 34.06; 30407.97 tokens/s ÷ 8 = 3801.0
    assert stored["kimi"][8].per_accelerator_output_tokens == pytest.approx(34.0615, abs=1e-4)
    assert stored["kimi"][8].per_accelerator_total_tokens == pytest.approx(3800.996, abs=1e-3)


def test_an_mlperf_result_per_accelerator_is_its_published_rate_over_its_accelerators(stored: dict[str, Any]) -> None:
    mlperf = stored["mlperf"]
    server = mlperf[("deepseek-r1", "server")]
    rate, count = _published(
        "CoreWeave", "GB300-NVL8-CoreWeave_TRT", "deepseek-r1", "Server", "Completed tokens per second"
    )
    assert (rate, count) == (22545.12, 8) and server.accelerator_count == 8
    assert server.per_accelerator_output_tokens == pytest.approx(rate / count, rel=1e-5)  # 2818.1 tokens/s
    assert server.per_accelerator_total_tokens is None  # MLPerf publishes no input token count
    retinanet = next(r for (w, s), r in mlperf.items() if w == "retinanet" and s == "offline")
    rate, count = _published("Dell", "R470-L4-PCIE-24GBx2_TRT", "retinanet", "Offline", "Samples per second")
    assert count == 2 and retinanet.per_accelerator_throughput == pytest.approx(rate / count, rel=1e-5)
    assert retinanet.per_accelerator_unit == "samples/s" and retinanet.per_accelerator_output_tokens is None


def test_the_api_states_each_figure_with_its_label_and_filters_on_them(user: Any, stored: dict[str, Any]) -> None:
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    server = stored["mlperf"][("deepseek-r1", "server")]
    detail = client.get(f"/api/v1/submissions/{server.pk}").json()["per_accelerator"]
    assert detail["label"] == MLPERF_LABEL and detail["accelerators"] == 8
    assert detail["output_tokens"]["unit"] == "tokens/s per accelerator"
    assert "input tokens" in detail["total_tokens"]["absent"]
    level = client.get(f"/api/v1/submissions/{stored['kimi'][8].pk}").json()["per_accelerator"]
    assert level["label"] == "derived"
    assert level["total_tokens"]["value"] == pytest.approx(_harness(8)["tput_per_gpu"], rel=1e-9)
    # the list reads the stored columns: the same figures
    listed = client.get("/api/v1/submissions", {"min_total_tokens_per_accelerator": 3000}).json()["results"]
    truth = {c for c in stored["kimi"] if _harness(c)["tput_per_gpu"] >= 3000}
    assert {r["id"] for r in listed} == {stored["kimi"][c].pk for c in truth} and truth == {8, 16, 24}
    assert all(r["per_accelerator"]["label"] == "derived" for r in listed)
    bad = client.get("/api/v1/submissions", {"min_output_tokens_per_accelerator": "lots"})
    assert bad.status_code == 400


def test_the_catalogue_shows_and_sorts_by_each_figure(user: Any, client: Any, stored: dict[str, Any]) -> None:
    client.force_login(user)
    page = client.get("/", {"sort": "total_per_accelerator_desc"}).content.decode()
    order = [int(pk) for pk in re.findall(r'name="run" value="(\d+)"', page)]
    by_total = sorted(stored["kimi"].values(), key=lambda r: -r.per_accelerator_total_tokens)
    assert order[: len(by_total)] == [r.pk for r in by_total]  # runs without the figure come last
    assert "input+output 5,818 tokens/s per accelerator" in page  # conc 24: 46546.6 ÷ 8 (tput_per_gpu 5818.33)
    assert MLPERF_LABEL in page and "derived" in page
    page = client.get("/", {"sort": "output_per_accelerator_desc"}).content.decode()
    first = int(re.findall(r'name="run" value="(\d+)"', page)[0])
    assert first == stored["mlperf"][("deepseek-r1", "offline")].pk  # the largest output tokens/s per GB300
    rows = client.get("/", {"format": "csv", "sort": "per_accelerator_desc"}).content.decode().splitlines()
    assert "input_output_tokens_per_s_per_accelerator" in rows[0] and MLPERF_LABEL in rows[1]


def test_the_run_page_states_the_figures_and_why_one_is_absent(user: Any, client: Any, stored: dict[str, Any]) -> None:
    client.force_login(user)
    page = client.get(f"/runs/{stored['mlperf'][('deepseek-r1', 'server')].pk}/").content.decode()
    assert "output 2,818 tokens/s per accelerator" in page and MLPERF_LABEL in page and "÷ 8 accelerators" in page
    assert "no input+output figure: the run does not state its input tokens" in page


def test_the_matrix_divides_each_rate_cell_by_its_accelerators(user: Any, client: Any, stored: dict[str, Any]) -> None:
    client.force_login(user)
    page = client.get("/matrix/", {"workload": "deepseek-r1"}).content.decode()
    server = stored["mlperf"][("deepseek-r1", "server")]
    # 22545.12 tokens/s ÷ 8 = 2818.14, in the headline's four significant digits
    assert server.per_accelerator_output_tokens == pytest.approx(2818.14)
    assert "2,818 tokens/s per accelerator" in page
    assert "÷ 8, derived, not an MLPerf metric" in page


def test_a_comparison_shows_each_runs_figure(user: Any, client: Any, stored: dict[str, Any]) -> None:
    # The Kimi level at concurrency 8 against the same level restated as a 4-accelerator system (another system
    # under test at the same load): each run's figure is its own rate ÷ its own accelerators.
    level = stored["kimi"][8]
    other = json.loads(level.canonical)
    other["system"]["name"] = "4x NVIDIA B200 (restated)"
    other["system"]["accelerators"][0]["count"] = 4
    del other["provenance"]["origin"]["files"]  # not the published files' measurement: a restatement of its own
    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(user)
    created = api.post("/api/v1/submissions", other, format="json")
    assert created.status_code == 201, created.content
    client.force_login(user)
    response = client.post("/compare/", {"runs": f"{level.pk}, {created.json()['id']}", "axis": "system"}, follow=True)
    page = response.content.decode()
    assert "Per accelerator" in page
    assert "output 34.06 tokens/s per accelerator" in page  # 272.49 ÷ 8 (InferenceX output_tput_per_gpu 34.06)
    assert "output 68.12 tokens/s per accelerator" in page  # 272.49 ÷ 4


QUESTION: dict[str, Any] = {
    "workload": "inferencex-agentx-mvp",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p50", "max_ms": 1000}],
    "demand": {"value": 10000, "unit": "tokens/s"},
    "prices": {"currency": "USD", "system_hour": {"*": 50.0}},
}


def test_a_decision_states_the_knee_levels_figures_per_accelerator(user: Any, stored: dict[str, Any]) -> None:
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    body = client.post("/api/v1/decisions", {"title": "per GPU", "question": QUESTION}, format="json").json()
    (cand,) = body["answer"]["candidates"]
    (cited,) = cand["runs"]
    conc = Submission.objects.get(pk=cited["id"]).document["scenario"]["concurrency"]
    record = _harness(conc)  # the level the candidate is read at: its capacity, systems and cost are this level's
    figures = cand["per_accelerator"]
    assert figures["label"] == "derived" and figures["accelerators"] == 8
    assert figures["output_tokens"]["value"] == pytest.approx(record["output_tput_per_gpu"], rel=1e-6)
    assert figures["total_tokens"]["value"] == pytest.approx(record["tput_per_gpu"], rel=1e-6)
    assert cand["rate"]["value"] == pytest.approx(record["output_tput_tps"], rel=1e-6)
    client.force_login(user)
    page = client.get(f"/decisions/{body['id']}/").content.decode()
    assert "Per accelerator" in page and "tokens/s per accelerator" in page
    row = decision_answer({"canonical": json.dumps(body["answer"])})["rows"][0]  # type: ignore[index]
    assert row["per_accelerator"]["value"].startswith("output ") and row["per_accelerator"]["label"] == "derived"


def test_an_mlperf_training_result_has_no_figure_and_says_why(user: Any, client: Any) -> None:
    # tinycorp's tinybox green (MLPerf Training v4.0, resnet): MLPerf Training publishes a time to train only
    call_command("import_results", "mlperf", str(SHARED / "data" / "mlperf-rounds" / "training_v4.0" / "tinycorp"))
    run = Submission.objects.get(origin_kind="mlperf-training")
    assert run.accelerator_count > 0 and run.per_accelerator_throughput is None
    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(user)
    figures = api.get(f"/api/v1/submissions/{run.pk}").json()["per_accelerator"]
    assert figures["throughput"]["absent"] == "MLPerf Training publishes the time to train, not a throughput"
    assert figures["output_tokens"]["absent"] == "a training run produces no output tokens"
    client.force_login(user)
    page = client.get("/", {"sort": "per_accelerator_desc"}).content.decode()
    assert "MLPerf Training publishes the time to train, not a throughput" in page
