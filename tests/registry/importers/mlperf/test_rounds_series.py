"""One system across MLPerf Inference rounds, through `mlperf_import_rounds` (what `benchreg import mlperf` runs),
the comparison API and the history page.

The rounds are emulated from the AMD 8×MI300X llama2-70b-99 sample in ../shared/data/mlperf/: the v5.1 submission
is copied under folders named inference_results_v4.0 … v5.1 (the names the importer reads a round from), and the
earlier copies are given our own figures, dates, LoadGen seeds and software (authored here, not published
numbers). Which rounds define a benchmark alike is read from the rule tables (rounds/inference_<round>.json)."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from matplotlib import rc_context

from registry.importers.mlperf.definitions import previous_round, scenarios_of, unchanged_since
from registry.importers.mlperf.rules import known_rounds, round_rules
from registry.models import Submission
from registry.presentation.chart_style import STYLE
from registry.presentation.charts_series import history_time_figure, time_axis_label
from registry.services.imports import mlperf_import_rounds
from tests.registry.web.conftest import signed_in

pytestmark = pytest.mark.django_db
SAMPLE = (
    Path(
        os.environ.get("BENCHREG_MLPERF_ROUNDS")
        or Path(__file__).resolve().parents[4].parent / "shared" / "data" / "mlperf"
    )
    / "inference_sample1_AMD_v5.1"
)
SYSTEM = "8xMI300X_2xEPYC_9575F"

# round -> (Offline tokens/s, test_datetime, framework): our numbers for the emulated earlier rounds.
EARLIER = {
    "v4.1": (21000.5, "2024-07-02T10:00:00Z", "vLLM 0.5.3, Pytorch 2.4.0, ROCm 6.1.2"),
    "v5.0": (24100.25, "2025-02-10T10:00:00Z", "vLLM 0.7.3, Pytorch 2.6.0, ROCm 6.3.1"),
}


def _set_record(detail: Path, key: str, value: Any) -> None:
    """Rewrite one LoadGen record of a detail log (every line holding it)."""
    lines = []
    for line in detail.read_text().splitlines():
        if line.startswith(":::MLLOG ") and f'"key": "{key}"' in line:
            record = json.loads(line.removeprefix(":::MLLOG "))
            record["value"] = value
            line = ":::MLLOG " + json.dumps(record)
        lines.append(line)
    detail.write_text("\n".join(lines) + "\n")


def _set_summary(summary: Path, label: str, text: str) -> None:
    summary.write_text(re.sub(rf"^{re.escape(label)}\s*:.*$", f"{label}: {text}", summary.read_text(), flags=re.M))


def _round(root: Path, name: str, scenarios: tuple[str, ...] = ("Offline",)) -> Path:
    """The sample's submission as round `name`, keeping only `scenarios`."""
    sub = root / f"inference_results_{name}" / "closed" / "AMD"
    shutil.copytree(SAMPLE, sub)
    bench = sub / "results" / SYSTEM / "llama2-70b-99"
    for folder in bench.iterdir():
        if folder.name not in scenarios:
            shutil.rmtree(folder)
    if name in EARLIER:
        tokens, when, framework = EARLIER[name]
        run = bench / "Offline" / "performance" / "run_1"
        _set_record(run / "mlperf_log_detail.txt", "result_tokens_per_second", tokens)
        _set_summary(run / "mlperf_log_summary.txt", "Tokens per second", str(tokens))
        _set_record(run / "mlperf_log_detail.txt", "test_datetime", when)
        # each round has its own LoadGen seeds (MLCommons sets them per round) and the submitter's own target QPS
        _set_record(run / "mlperf_log_detail.txt", "effective_qsl_rng_seed", 1234567 + len(name))
        _set_record(run / "mlperf_log_detail.txt", "effective_target_qps", 70)
        description = sub / "systems" / f"{SYSTEM}.json"
        system = json.loads(description.read_text())
        system["framework"] = framework
        description.write_text(json.dumps(system, indent=1))
    return sub


@pytest.fixture
def rounds(tmp_path: Path, user: Any) -> dict[str, Submission]:
    """v4.1, v5.0 and v5.1 of one system's llama2-70b-99 Offline, imported in the order v5.1, v4.1, v5.0 (import
    time is not round order), through the importer of rounds side by side; {round: run}."""
    if not SAMPLE.is_dir():
        pytest.skip(f"no MLPerf sample in {SAMPLE}")
    for name in ("v5.1", "v4.1", "v5.0"):
        _round(tmp_path / name, name)
        results = mlperf_import_rounds(root=tmp_path / name, submitted_by=user)
        assert [r.counts for r in results] == [{"stored": 1}], results[0].render()
    return {run.origin_round: run for run in Submission.objects.filter(scenario_kind="offline")}


@pytest.mark.parametrize(
    ("round_name", "before"), [("v5.1", "v5.0"), ("v5.0", "v4.1"), ("v1.0", "v0.7"), ("v0.7", "v0.5"), ("v0.5", None)]
)
def test_the_round_before_is_the_one_mlcommons_published_before(round_name, before):
    assert previous_round(round_name) == before


def test_every_scenario_of_every_round_with_rules_has_a_first_round():
    for name in known_rounds():
        rules = round_rules(name)
        for model in rules.config["models"]:
            for scenario in scenarios_of(rules, model):
                found = unchanged_since(name, model, scenario)
                assert found.since in known_rounds() and found.stopped, (name, model, scenario)


def test_the_rules_say_llama2_70b_99_offline_is_unchanged_from_v4_0_to_v6_0():
    for name in ("v4.1", "v5.0", "v5.1", "v6.0"):
        assert unchanged_since(name, "llama2-70b-99", "Offline").since == "v4.0"


@pytest.mark.parametrize(
    ("round_name", "model", "scenario", "since", "reason"),
    [
        # v4.0 published the Server figure as completed samples/s, v4.1 as completed tokens/s
        ("v5.1", "llama2-70b-99", "Server", "v4.1", "v4.0's rules differ in published record"),
        # mixtral's accuracy reference was re-measured for v5.0
        ("v6.0", "mixtral-8x7b", "Offline", "v5.0", "v4.1's rules differ in accuracy-target, accuracy_target_factors"),
        # qwen3-vl's accuracy targets were redefined for v6.1
        (
            "v6.1",
            "qwen3-vl-235b-a22b",
            "Offline",
            "v6.1",
            "v6.0's rules differ in accuracy-target, accuracy-sample-count, accuracy_target_factors",
        ),
        # llama2-70b-99 got an Interactive scenario in v5.1 (v5.0's was a benchmark of its own)
        ("v5.1", "llama2-70b-99", "Interactive", "v5.1", "v5.0 has no Interactive scenario for llama2-70b-99"),
        ("v5.1", "deepseek-r1", "Offline", "v5.1", "deepseek-r1 is not a model of v5.0"),
    ],
)
def test_a_benchmark_whose_rules_changed_is_defined_anew_from_that_round(round_name, model, scenario, since, reason):
    found = unchanged_since(round_name, model, scenario)
    assert (found.since, found.stopped) == (since, reason)


def test_one_systems_offline_results_of_three_rounds_share_the_workload_version_and_compare(rounds, api):
    assert {r.workload_version for r in rounds.values()} == {"mlperf-inference-v4.0"}
    assert len({r.comparability_key for r in rounds.values()}) == 1
    assert len({r.comparability_key_software for r in rounds.values()}) == 1
    runs = [rounds[name].pk for name in ("v4.1", "v5.0", "v5.1")]
    answer = api.post("/api/v1/comparisons", {"runs": runs, "axis": "software"}, format="json")
    assert answer.status_code == 201, answer.content
    result = answer.json()["result"]
    assert result["comparable"], result
    assert len(result["arms"]) == 3  # one per software stack, as each round ran its own
    rounds_shown = {d["field"]: d for d in result["disclosures"]}
    assert "provenance.origin.round" in rounds_shown  # the round is shown beside the result, never hidden


def test_a_changed_definition_is_refused_across_rounds_with_the_reason(tmp_path, user, api):
    """v4.0 published llama2-70b-99 Server as samples/s; v4.1 on as tokens/s: the same system's Server results of
    v4.0 and v5.1 are refused on the workload's version (and the headline's unit)."""
    if not SAMPLE.is_dir():
        pytest.skip(f"no MLPerf sample in {SAMPLE}")
    for name in ("v4.0", "v5.1"):
        _round(tmp_path / name, name, scenarios=("Server",))
        results = mlperf_import_rounds(root=tmp_path / name, submitted_by=user)
        assert [r.counts for r in results] == [{"stored": 1}], results[0].render()
    old, new = (Submission.objects.get(origin_round=name) for name in ("v4.0", "v5.1"))
    assert (old.workload_version, new.workload_version) == ("mlperf-inference-v4.0", "mlperf-inference-v4.1")
    answer = api.post("/api/v1/comparisons", {"runs": [old.pk, new.pk]}, format="json")
    assert answer.status_code == 422 and answer.json()["code"] == "not-comparable"
    refusals = {e["field"]: e for e in answer.json()["errors"]}
    assert refusals["workload.version"]["message"] == "workload.version: mlperf-inference-v4.0 vs mlperf-inference-v4.1"
    assert refusals["metrics.throughput.unit"]["values"] == ["samples/s", "tokens/s"]


def test_the_history_follows_the_system_across_rounds_in_round_order(rounds, api, user):
    newest = rounds["v5.1"]
    history = api.get(f"/api/v1/submissions/{newest.pk}/history").json()
    assert [p["run"] for p in history["points"]] == [rounds[n].pk for n in ("v4.1", "v5.0", "v5.1")]
    assert [p["round"] for p in history["points"]] == ["v4.1", "v5.0", "v5.1"]
    assert [p["measured_at"][:10] for p in history["points"]] == ["2024-07-02", "2025-02-10", "2025-07-31"]
    assert history["time_basis"] == "measured" and history["other_settings"] == []
    assert [p["value"] for p in history["points"]][:2] == pytest.approx([21000.5, 24100.25], rel=1e-5)
    page = signed_in(user).get(f"/runs/{newest.pk}/history/")
    text = page.content.decode()
    assert page.status_code == 200
    assert "by the date each result was measured" in text
    runs_table = text[text.index("runs-heading") :]  # newest first
    assert runs_table.index(">v5.1<") < runs_table.index(">v5.0<") < runs_table.index(">v4.1<")


def test_the_history_chart_plots_imported_rounds_at_their_measured_times(rounds, api):
    """Imported v5.1, v4.1, v5.0 in that order: the chart's points are at LoadGen's test_datetime of each, in round
    order, never at the import times."""
    history = api.get(f"/api/v1/submissions/{rounds['v5.1'].pk}/history").json()
    imported = sorted(rounds.values(), key=lambda r: r.submitted_at)
    assert [r.origin_round for r in imported] == ["v5.1", "v4.1", "v5.0"]
    with rc_context(STYLE):
        figure = history_time_figure(history)
    assert figure is not None
    drawn = [x for container in figure.axes[0].containers for x in container.lines[0].get_xdata()]
    measured = [datetime.fromisoformat(p["measured_at"]) for p in history["points"]]
    assert sorted(drawn) == measured  # one software version per round: one marker series each
    assert not {r.submitted_at for r in imported} & set(drawn)
    assert time_axis_label(history) == "when measured (UTC)"
