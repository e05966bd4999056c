"""A decision never weighs one served model against another (shared/DECISIONS.md, "Which runs answer it": for served
evidence the model served is part of the workload), and reads a sweep at the knee its judged levels give
("Inference": a level too short for an objective's percentile neither holds nor fails).

The evidence is the two real sweeps of ../shared/data/serving, imported through `benchreg import serving`
(`import_results serving`): Kimi-K2.5 NVFP4 on 8× B200 (vLLM) and GLM-5.1 MXFP4 on 2× MI355X (SGLang), both named
workload inferencex-agentx-mvp. Figures by hand from each level's aiperf summary (time_to_first_token.p90,
output_token_throughput.avg) in the comments.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from protocol import decisions as dec
from registry.importers import serving
from registry.models import Decision, Submission
from tests.registry.importers.serving.test_aiperf_sweeps import DATA, GLM, KIMI, deployment_file

pytestmark = pytest.mark.django_db
KIMI_MODEL = "/lustre/fsw/models/Kimi-K2.5-NVFP4"
GLM_MODEL = "amd/GLM-5.1-MXFP4"
QUESTION: dict[str, Any] = {
    "workload": "inferencex-agentx-mvp",
    "scenario": "server",
    "objectives": [{"metric": "ttft_ms", "percentile": "p90", "max_ms": 2000}],
    "demand": {"value": 20000, "unit": "tokens/s"},
    "prices": {"currency": "USD", "system_hour": {"8x B200": 50.0, "2x Instinct MI355X": 15.0}},
    "provisioning": {"nameplate_kw": {"8x B200": 14.3}, "pue": 1.25},
}


@pytest.fixture(autouse=True)
def _data() -> None:
    if not DATA.exists():
        pytest.skip("the shared serving data is not beside this checkout")


@pytest.fixture
def both(tmp_path: Path) -> None:
    for sweep in (KIMI, GLM):
        call_command(
            "import_results", "serving", str(DATA / sweep), "--deployment", str(deployment_file(tmp_path, sweep))
        )
    assert Submission.objects.count() == 12


def _post(user: Any, question: dict[str, Any]) -> Any:
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    return client.post("/api/v1/decisions", {"title": "agentic coding", "question": question}, format="json")


def test_a_question_that_names_no_model_over_two_served_models_is_refused_with_the_models_listed(user, both) -> None:
    response = _post(user, QUESTION)
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["errors"][0]["pointer"] == "/question/served_model"
    assert "serve 2 models" in body["detail"] and "never weighs one model's runs against another's" in body["detail"]
    assert f"'{KIMI_MODEL}' (6 run(s) on 8x B200)" in body["detail"]
    assert f"'{GLM_MODEL}' (6 run(s) on 2x Instinct MI355X)" in body["detail"]
    assert not Decision.objects.exists()  # nothing half-stored


def test_a_question_naming_the_model_has_only_its_runs_as_candidates_and_says_why_the_others_are_left_out(
    user, both
) -> None:
    response = _post(user, {**QUESTION, "served_model": {"name": "Kimi-K2.5-NVFP4"}})
    assert response.status_code == 201, response.content
    answer = response.json()["answer"]
    assert [c["served_model"] for c in answer["candidates"]] == [KIMI_MODEL]
    assert answer["served_model"] == "Kimi-K2.5-NVFP4" and "with the model Kimi-K2.5-NVFP4 served" in answer["question"]
    glm_runs = {r.pk for r in Submission.objects.filter(accelerator_model="Instinct MI355X")}
    assert {x["run"]["id"] for x in answer["left_out"]} == glm_runs
    assert {x["reason"] for x in answer["left_out"]} == {f"serves {GLM_MODEL}, the question asks for Kimi-K2.5-NVFP4"}
    (kimi,) = answer["candidates"]
    # ttft p90 by level: 779, 1743, 794, 1514, 1580 ms at concurrency 1-16 (<= 2000) and 2613 at 24: the knee is 16.
    # C = 430.42 tokens/s (output_token_throughput.avg at 16); N = ceil(20000 ÷ 430.42) = ceil(46.47) = 47;
    # cost = 47 × 50 USD/h ÷ (20000 × 3600) × 1e6 = 32.64 USD per million tokens.
    assert kimi["sweep"]["knee"]["level"]["load"] == 16.0 and kimi["read_at"] == "concurrency 16"
    assert kimi["rate"]["value"] == pytest.approx(430.423, abs=0.01) and kimi["systems_needed"]["value"] == 47
    assert kimi["cost_per_million"]["value"] == pytest.approx(47 * 50 / (20000 * 3600) * 1e6, abs=0.01)
    assert answer["frontier"]["tied"] == [] and answer["refused_inputs"][0]["pointer"].endswith("MI355X")
    # vllm_command.txt sets --max-num-seqs to each level's concurrency: one engine tuned per load, said at the knee.
    tuned = next(g["message"] for g in kimi["gaps"] if g["code"] == "tuned-per-level")
    assert "max sequences set to the concurrency at every level (1 to 24)" in tuned
    assert "(concurrency 16: max sequences 16)" in tuned and "max sequences" not in kimi["label"]

    client = APIClient(SERVER_NAME="localhost")
    client.force_login(user)
    page = client.get(f"/decisions/{response.json()['id']}/").content.decode()
    assert "with the model Kimi-K2.5-NVFP4 served" in page
    assert f"serves {GLM_MODEL}, the question asks for Kimi-K2.5-NVFP4" in page


def test_the_question_form_takes_the_model_and_refuses_a_mix_in_words(user, both) -> None:
    client = APIClient(SERVER_NAME="localhost")
    client.force_login(user)
    form = {
        "title": "agentic coding",
        "workload": "inferencex-agentx-mvp",
        "scenario": "server",
        "demand": 20000,
        "demand_unit": "tokens/s",
    }
    refused = client.post("/decisions/", form)
    assert refused.status_code == 400 and "serve 2 models" in refused.content.decode()
    assert GLM_MODEL in refused.content.decode() and not Decision.objects.exists()
    answered = client.post("/decisions/", {**form, "served_model": GLM_MODEL})
    assert answered.status_code == 302
    answer = Decision.objects.get().answers.get().answer
    assert [c["served_model"] for c in answer["candidates"]] == [GLM_MODEL] and len(answer["left_out"]) == 6


def test_a_question_naming_a_model_no_run_serves_has_no_candidate_and_every_run_left_out_with_why(user, both) -> None:
    response = _post(user, {**QUESTION, "served_model": "Kimi-K2.5-FP8"})
    answer = response.json()["answer"]
    assert response.status_code == 201 and answer["candidates"] == [] and len(answer["left_out"]) == 12
    assert f"serves {KIMI_MODEL}, the question asks for Kimi-K2.5-FP8" in {x["reason"] for x in answer["left_out"]}


def test_the_real_kimi_sweep_with_its_lowest_level_cut_to_62_requests_is_read_at_its_knee(tmp_path: Path) -> None:
    """The issue's case on real files: the lowest level holds 62 requests, two short of the 64 a p90 is stated from,
    so it states no ttft p90 (as the importer writes a level that short). Levels 2 to 16 each state a p90 under
    2000 ms: the walk passes concurrency 1 and reads the knee at 16, every figure from there."""
    levels = serving.parse([DATA / KIMI], serving.load(deployment_file(tmp_path, KIMI), {}), submitter="lab")
    docs = [level.document for level in levels]
    lowest = min(docs, key=lambda d: d["scenario"]["concurrency"])
    lowest["metrics"]["ttft_ms"].update({"count": 62, "p90": None, "p95": None, "p99": None})
    evidence = [dec.Evidence(d, {"id": i + 1, "digest": f"sha256:{i}"}) for i, d in enumerate(docs)]
    answer = dec.answer(dec.Question.from_dict(QUESTION), evidence)
    (c,) = answer["candidates"]
    knee = c["sweep"]["knee"]
    assert knee["level"]["load"] == 16.0 and knee["failed_at"]["load"] == 24.0
    assert [p["load"] for p in knee["passed"]] == [1.0] and "62 requests at this load" in knee["words"]
    # As above: C = 430.42 tokens/s, 47 systems, 32.64 USD per million tokens; tokens per provisioned MW from the
    # same level: 430.42 ÷ (14.3 kW × 1.25 ÷ 1000) = 24,080.
    at_16 = next(d for d in docs if d["scenario"]["concurrency"] == 16)
    rate = at_16["metrics"]["tokens_per_second"]["value"]
    assert c["rate"]["value"] == pytest.approx(rate, rel=1e-6) and c["systems_needed"]["value"] == math.ceil(
        20000 / rate
    )
    assert c["cost_per_million"]["value"] == pytest.approx(47 * 50 / (20000 * 3600) * 1e6, abs=0.01)
    assert c["per_provisioned_mw"]["value"] == pytest.approx(rate / (14.3 * 1.25 / 1000), rel=1e-4)
    assert c["read_at"] == "concurrency 16" and c["meets"] == "not-enough-evidence"  # one run a level: no interval
    assert "read at concurrency 16" in answer["summary"][0]


def test_the_import_records_the_engines_capacity_settings_from_its_launch_command(both) -> None:
    for run in Submission.objects.filter(accelerator_model="B200"):
        doc = run.document
        settings, origin = doc["software"]["settings"], doc["provenance"]["origin"]
        assert settings == {"max_num_seqs": doc["scenario"]["concurrency"], "prefill_decode_disaggregated": False}
        assert origin["fields"]["/software/settings/max_num_seqs"] == "inferencex:vllm_command.txt: --max-num-seqs"
        assert origin["files"]["inferencex:vllm_command.txt"].startswith("sha256:")
    for run in Submission.objects.filter(accelerator_model="Instinct MI355X"):  # SGLang: no launch command shared
        assert run.document["software"]["settings"] == {"prefill_decode_disaggregated": False}


def test_a_decision_naming_no_model_keeps_its_answer_and_says_why_when_a_second_model_arrives(
    user, tmp_path, django_capture_on_commit_callbacks
) -> None:
    call_command("import_results", "serving", str(DATA / KIMI), "--deployment", str(deployment_file(tmp_path, KIMI)))
    response = _post(user, QUESTION)  # one model among the runs: answered, the model named among the assumptions
    assert response.status_code == 201, response.content
    assert response.json()["answer"]["assumptions"][0].startswith(f"the model served: {KIMI_MODEL}")
    with django_capture_on_commit_callbacks(execute=True):
        call_command("import_results", "serving", str(DATA / GLM), "--deployment", str(deployment_file(tmp_path, GLM)))
    decision = Decision.objects.get()
    client = APIClient(SERVER_NAME="localhost")
    client.force_authenticate(user)
    assert client.get(f"/api/v1/decisions/{decision.pk}").status_code == 200
    decision.refresh_from_db()
    assert "serve 2 models" in decision.recompute_error and GLM_MODEL in decision.recompute_error
    assert decision.answers.count() == 1  # the answer given stands; nothing mixes the two models
