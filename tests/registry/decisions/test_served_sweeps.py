"""A decision on two served load sweeps, imported from files the real tools wrote, answered by hand from
shared/DECISIONS.md (Inference) in the comments, then shown on the decision page and in a signed report.

The sweeps: aiperf 0.13.0's concurrency 1, 4, 16 (tests/fixtures/serving/aiperf-0.13.0/concurrency) and guidellm
0.8.1's concurrent 1, 4, 16 (tests/fixtures/serving/guidellm/concurrent), both chat with 64 input and 32 output
tokens against the simulated endpoint. The deployment files below describe them as 8× H100 and 8× MI300X, so they
are two candidate configurations of one question. No served sweep measures the quality of its outputs: the question
states no quality target, and each candidate carries the gap that says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from registry.models import AuditHead, Decision, Submission
from registry.services.decision_followups import decision_report

from .signed_pdf import signed_report_words

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "serving"
AIPERF = sorted((FIXTURES / "aiperf-0.13.0" / "concurrency").glob("*/profile_export_aiperf.json"))
GUIDELLM = FIXTURES / "guidellm" / "concurrent" / "benchmarks.json"
SHAPE = {"kind": "fixed", "input_tokens": {"mean": 64}, "output_tokens": {"mean": 32}, "turns": "single"}

QUESTION: dict[str, Any] = {
    "workload": "chat-64-32",
    "scenario": "server",
    # aiperf wrote 40 requests a level and guidellm 64: too few for a p90 (the protocol's sample minimums), so
    # the objective is on the median.
    "objectives": [{"metric": "ttft_ms", "percentile": "p50", "max_ms": 72}],
    "interactivity": {"min_tokens_per_second_per_user": 80},
    "demand": {"value": 10000, "unit": "tokens/s"},
    "prices": {"currency": "USD", "system_hour": {"8x H100": 30.0, "8x MI300X": 25.0}},
    "provisioning": {"nameplate_kw": {"*": 10.2}, "pue": 1.3},
}


def _deployment(tmp_path: Path, vendor: str, model: str) -> str:
    path = tmp_path / f"{model}.json"
    path.write_text(
        json.dumps(
            {
                "system": {"accelerators": {"vendor": vendor, "model": model, "count": 8}},
                "engine": {"name": "vllm", "version": "0.33.0"},
                "precision": {"weights": "bf16", "activations": "bf16", "kv_cache": "bf16"},
                "parallelism": {"tensor": 8},
                "workload": {"name": "chat-64-32", "request_shape": SHAPE},
            }
        )
    )
    return str(path)


@pytest.fixture
def sweeps(tmp_path: Path) -> dict[str, list[int]]:
    call_command(
        "import_results", "serving", *map(str, AIPERF), "--deployment", _deployment(tmp_path, "NVIDIA", "H100")
    )
    call_command("import_results", "serving", str(GUIDELLM), "--deployment", _deployment(tmp_path, "AMD", "MI300X"))

    def ids(model: str) -> list[int]:
        runs = Submission.objects.filter(accelerator_model=model)
        return [r.pk for r in sorted(runs, key=lambda r: r.document["scenario"]["concurrency"])]

    return {"H100": ids("H100"), "MI300X": ids("MI300X")}


def _ask(user: Any) -> tuple[APIClient, dict[str, Any]]:
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    response = client.post("/api/v1/decisions", {"title": "10k tokens/s", "question": QUESTION}, format="json")
    assert response.status_code == 201, response.content
    return client, response.json()


def _by_model(answer: dict[str, Any], model: str) -> dict[str, Any]:
    return next(c for c in answer["candidates"] if c["accelerator_model"] == model)


def test_the_knee_capacity_systems_and_cost_of_each_sweep_are_as_by_hand(user, sweeps) -> None:
    _, body = _ask(user)
    answer = body["answer"]
    assert len(answer["candidates"]) == 2 and answer["left_out"] == []  # no run is left out for lacking quality
    h100, mi300x = _by_model(answer, "H100"), _by_model(answer, "MI300X")

    # 8× H100 (aiperf's files): ttft p50 71.31, 66.35, 63.36 ms at concurrency 1, 4, 16 (profile_export_aiperf.json
    # time_to_first_token.p50), all <= 72; tokens/s per user p50 81.63, 81.63, 81.07, all >= 80. No load failed:
    # the knee is the highest load measured, 16, and the capacity is a lower bound (gap no-knee).
    knee = h100["sweep"]["knee"]
    assert knee["level"]["load"] == 16.0 and knee["failed_at"] is None and not knee["reached"]
    # C = output token throughput at 16 = 902.699 tokens/s; N = ceil(10000 ÷ 902.699) = ceil(11.078) = 12;
    # cost per million tokens = 12 × 30 USD/h ÷ (10000 tokens/s × 3600 s) × 1e6 = 10.00 USD;
    # per provisioned MW = 902.699 ÷ (10.2 kW × 1.3 ÷ 1000) = 68,076.8 tokens/s.
    assert h100["rate"]["value"] == pytest.approx(902.699, abs=1e-3)
    assert h100["systems_needed"]["value"] == 12
    assert h100["cost_per_million"]["value"] == pytest.approx(10.0, abs=1e-4)
    assert h100["per_provisioned_mw"]["value"] == pytest.approx(902.699 / (10.2 * 1.3 / 1000), rel=1e-5)

    # 8× MI300X (guidellm's file): ttft p50 61.94, 66.25, 72.61 ms at 1, 4, 16: 16 fails (72.61 > 72), so the
    # knee is 4. C = 274.578 tokens/s; N = ceil(10000 ÷ 274.578) = ceil(36.42) = 37;
    # cost = 37 × 25 ÷ 36,000,000 × 1e6 = 25.694 USD per million tokens.
    knee = mi300x["sweep"]["knee"]
    assert knee["level"]["load"] == 4.0 and knee["failed_at"]["load"] == 16.0 and knee["reached"]
    assert "ttft_ms p50 72.61 ms is over the objective" in knee["words"]
    assert mi300x["rate"]["value"] == pytest.approx(274.578, abs=1e-3)
    assert mi300x["systems_needed"]["value"] == 37
    assert mi300x["cost_per_million"]["value"] == pytest.approx(37 * 25 / 36, abs=1e-4)

    # One run a level: no interval, so no calibrated verdict, said in the same sentence as the count.
    for c, extra in ((h100, ["no-knee"]), (mi300x, [])):
        assert c["meets"] == "not-enough-evidence" and c["systems_needed"]["ci_low"] is None
        codes = ["no-steady-state", "too-few-repetitions", "no-energy", "no-measured-quality"]
        assert [g["code"] for g in c["gaps"]] == extra + codes
    # The gap names the knee level's run by its id, the one the reader looks up (not "1 of 1 run(s)").
    for c, knee_run in ((h100, sweeps["H100"][2]), (mi300x, sweeps["MI300X"][1])):
        unsteady = next(g["message"] for g in c["gaps"] if g["code"] == "no-steady-state")
        assert [r["id"] for r in c["runs"]] == [knee_run]
        assert unsteady.startswith(f"run {knee_run} did not show steady state"), unsteady
    assert all("no measured quality" in line for line in answer["summary"])
    # Every level of both sweeps is cited: the knees were found from all of them.
    assert len(answer["cited"]) == 6


@pytest.mark.slow  # run early: tests/conftest.py starts slow modules first
def test_the_decision_page_draws_both_sweeps_and_the_signed_report_states_the_answer(
    user, sweeps, settings, tmp_path, django_capture_on_commit_callbacks
) -> None:
    settings.DATA_DIR, settings.BENCHREG_CHECKPOINT_KEY = tmp_path, ""
    AuditHead.objects.get_or_create(id=1)
    client, body = _ask(user)
    client.force_login(user)
    page = client.get(f"/decisions/{body['id']}/").content.decode()
    # Neither sweep measured quality: said once, for both, in the conclusion the page opens with (never per row).
    assert page.count("Both candidates have no measured quality of their outputs.") == 1
    assert "quality not measured<br>" not in page
    assert "concurrency 4, the highest judged load before concurrency 16" in page
    assert page.count("<svg") >= 1 and "tokens/s per user" in page

    decision = Decision.objects.get(pk=body["id"])
    with django_capture_on_commit_callbacks(execute=True):
        report = decision_report(decision=decision, requested_by=user)
    report.refresh_from_db()
    assert report.status == "ready", report.last_error
    # The knees are at different loads (16 and 4), so the report compares the two sweeps where they share a
    # load, as systems (same engine, precision and request shape): concurrency 4, where the MI300X's knee is.
    compared = sorted(m.submission_id for m in report.comparison.members.all())
    assert report.comparison.axis == "system" and compared == [sweeps["H100"][1], sweeps["MI300X"][1]]
    assert "The runs compared in this report are 2 of the 6 the answer rests on" in report.decision
    flat = signed_report_words(report, tmp_path)
    assert "Which systems serve chat-64-32" in flat and "no quality target stated" in flat
    assert "Candidates measured as load sweeps" in flat  # the frontier chart's caption: drawn only with the chart


def test_a_report_of_a_single_sweep_measured_once_a_load_is_refused_in_words(user, tmp_path) -> None:
    call_command("import_results", "serving", str(GUIDELLM), "--deployment", _deployment(tmp_path, "AMD", "MI300X"))
    _, body = _ask(user)
    assert len(body["answer"]["candidates"]) == 1
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    response = client.post(f"/api/v1/decisions/{body['id']}/reports", {}, format="json")
    assert response.status_code == 422, response.content
    problem = response.json()
    assert problem["code"] == "not-enough-evidence" and "one sweep measured once per load" in problem["detail"]
