"""MLPerf Training through the command users run (`benchreg import mlperf`, the import_results command): trees
authored here in the published format, with our own numbers.

- Stable Diffusion's reached quality is the lowest checkpoint that met the target (MLCommons' RCP checker: "the
  first eval step that passes"), which is the checkpoint run_stop names, even when the log evaluates checkpoints
  out of order;
- a whole float `number_of_nodes` (1.0) is one node, 1.5 is refused in words;
- the quality target is in the scenario (a controlled field), so closed and open results are kept apart;
- the round comes from the tree's folder name (or --round), never silently from another place;
- MLPerf Training Power: the power/<result>/node_*.txt readings are totalled as MLCommons' result summarizer
  does, into metrics.energy.

Expected values are computed here from the authored numbers, not by the importer's readers.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from registry.importers.mlperf import training
from registry.importers.mlperf.training_rules import round_rules
from registry.models import Submission
from tests.conftest import SHARED

START = 1_700_000_000_000


def _log(path: Path, records: list[dict]) -> None:
    path.write_text(
        "".join(":::MLLOG " + json.dumps({"namespace": "", "event_type": "POINT_IN_TIME", **r}) + "\n" for r in records)
    )


def _system(submission: Path, system_id: str, *, division: str = "closed", nodes: object = 1) -> None:
    (submission / "systems").mkdir(parents=True, exist_ok=True)
    (submission / "systems" / f"{system_id}.json").write_text(
        json.dumps(
            {
                "system_name": f"Box {system_id}",
                "submitter": submission.name,
                "division": division,
                "status": "available",
                "number_of_nodes": nodes,
                "accelerators_per_node": 8,
                "accelerator_model_name": "NVIDIA H100",
            }
        )
    )


def _header(division: str, start: int) -> list[dict]:
    return [
        {"key": "submission_org", "value": "Acme"},
        {"key": "submission_division", "value": division},
        {"key": "global_batch_size", "value": 512},
        {"key": "init_start", "value": None, "time_ms": start - 60_000},
        {"key": "init_stop", "value": None, "time_ms": start},
        {"key": "run_start", "value": None, "time_ms": start},
    ]


# --- Stable Diffusion: the checkpoint run_stop names ---------------------------------------------------------

# (step, FID, CLIP) in the order the offline FID/CLIP jobs finished and logged them: 2250 first, as in NVIDIA's
# v3.1 eos_n64 logs. 1750 fails (FID over 90); 2000 is the first that passes; 2250 passes too.
SD_EVALS = [(2250, 79.25, 0.191), (1750, 101.5, 0.183), (2000, 77.75, 0.184), (1500, 107.0, 0.162)]


def _sd_run(path: Path, n: int) -> None:
    start = START + n * 10_000_000
    stop = start + 180_000 + n * 1000
    records = _header("closed", start)
    for step, fid, _clip in SD_EVALS:
        records.append(
            {
                "key": "eval_accuracy",
                "value": fid + n / 100,
                "time_ms": stop + 1,
                "metadata": {"step_num": step, "metric": "FID"},
            }
        )
    for step, _fid, clip in SD_EVALS:
        records.append(
            {
                "key": "eval_accuracy",
                "value": clip,
                "time_ms": stop + 2,
                "metadata": {"step_num": step, "metric": "CLIP"},
            }
        )
    records.append(
        {"key": "run_stop", "value": None, "time_ms": stop, "metadata": {"status": "success", "step_num": 2000}}
    )
    _log(path, records)


def _sd_tree(root: Path) -> Path:
    submission = root / "training_results_v3.1" / "Acme"
    _system(submission, "sd8")
    folder = submission / "results" / "sd8" / "stable_diffusion"
    folder.mkdir(parents=True)
    for n in range(10):
        _sd_run(folder / f"result_{n}.txt", n)
    return root / "training_results_v3.1"


def _stored(**where) -> list[dict]:
    return [
        s.document
        for s in Submission.objects.all()
        if all(s.document["provenance"]["origin"].get(k) == v for k, v in where.items())
    ]


@pytest.mark.django_db
def test_stable_diffusion_keeps_the_checkpoint_run_stop_names_not_the_first_logged(tmp_path):
    call_command("import_results", "mlperf", str(_sd_tree(tmp_path)), "--no-progress")
    (document,) = _stored(benchmark="stable_diffusion")
    runs = document["provenance"]["origin"]["runs"]
    # every run: the FID of step 2000 (the first passing step, and the one run_stop names), not 2250's
    assert [r["quality"] for r in runs] == pytest.approx([77.75 + n / 100 for n in range(10)])
    used = sorted(77.75 + n / 100 for n, r in enumerate(runs) if r["used"])
    quality = document["metrics"]["quality"]
    assert quality["values"]["FID"] == pytest.approx((used[3] + used[4]) / 2)
    assert quality["values"]["CLIP"] == pytest.approx(0.184) and quality["passed"]


def test_a_run_stop_naming_another_checkpoint_than_the_first_passing_one_is_said(tmp_path):
    root = _sd_tree(tmp_path)
    path = root / "Acme/results/sd8/stable_diffusion/result_3.txt"
    path.write_text(path.read_text().replace('"step_num": 2000}}\n', '"step_num": 2250}}\n'))
    (item,) = training.parse_tree(root).items
    assert item.status == "ready", item.errors
    assert any(
        "result_3.txt: run_stop names step_num 2250 but the lowest that met the target is 2000" in w
        for w in item.warnings
    ), item.warnings
    assert item.document["provenance"]["origin"]["runs"][3]["quality"] == pytest.approx(77.78)


# --- number_of_nodes as a whole float ------------------------------------------------------------------------


def _resnet_tree(
    root: Path,
    *,
    division: str = "closed",
    nodes: object = 1,
    submitter: str = "Acme",
    round_folder: str = "training_results_v3.1",
    quality: float = 0.7601,
    bench: str = "resnet",
) -> Path:
    submission = root / round_folder / submitter
    _system(submission, "r8", division=division, nodes=nodes)
    folder = submission / "results" / "r8" / bench
    folder.mkdir(parents=True)
    for n, minutes in enumerate([30.0, 29.0, 31.0, 28.5, 29.5]):
        start = START + n * 10_000_000
        stop = start + int(minutes * 60_000)
        records = [
            *_header(division, start),
            {"key": "eval_accuracy", "value": quality, "time_ms": stop, "metadata": {"epoch_num": 35}},
            {"key": "run_stop", "value": None, "time_ms": stop, "metadata": {"status": "success"}},
        ]
        _log(folder / f"result_{n}.txt", records)
    return root / round_folder


@pytest.mark.django_db
def test_number_of_nodes_written_as_a_whole_float_is_one_node(tmp_path):
    call_command("import_results", "mlperf", str(_resnet_tree(tmp_path, nodes=1.0)), "--no-progress")
    (document,) = _stored(benchmark="resnet")
    assert document["system"]["nodes"] == 1
    assert document["metrics"]["time_to_quality"]["seconds"] == pytest.approx((30.0 + 29.0 + 29.5) / 3 * 60)


@pytest.mark.parametrize("nodes", [1.5, 0.0, -1.0])
def test_a_number_of_nodes_that_is_not_a_whole_count_is_refused_in_words(tmp_path, nodes):
    (item,) = training.parse_tree(_resnet_tree(tmp_path, nodes=nodes)).items
    assert item.status == "refused"
    assert any(f"number_of_nodes is {nodes!r}: not a whole number of nodes above zero" in e for e in item.errors)


# --- the quality target is a controlled field ---------------------------------------------------------------


@pytest.mark.django_db
def test_closed_and_open_results_of_one_benchmark_are_not_comparable(tmp_path):
    """Closed resnet trains to 0.759; open to anything below 1.0. Same system, same batch, same round: the
    target in the scenario is what keeps them apart."""
    _resnet_tree(tmp_path, division="closed", submitter="Acme")
    _resnet_tree(tmp_path, division="open", submitter="Zed", quality=0.33)
    call_command("import_results", "mlperf", str(tmp_path / "training_results_v3.1"), "--no-progress")
    closed, opened = (Submission.objects.get(document__provenance__origin__division=d) for d in ("closed", "open"))
    assert closed.document["scenario"] == {
        "kind": "time-to-quality",
        "quality_target": {
            "metric": "eval_accuracy (closed division: v['value'] >= 0.7590 and v['value'] < 1.0)",
            "value": 0.759,
        },
    }
    assert opened.document["scenario"] == {"kind": "time-to-quality", "quality_target": None}
    assert closed.comparability_key != opened.comparability_key
    assert closed.comparability_key_software != opened.comparability_key_software


@pytest.mark.parametrize(
    ("round_name", "benchmark", "target"),
    [
        ("v3.1", "rnnt", 0.058),
        ("v4.0", "gpt3", 2.69),
        ("v4.0", "unet3d", 0.908),
        ("v4.0", "stable_diffusion", 90.0),
        ("v4.0", "llama2_70b_lora", 0.925),
        ("v4.0", "dlrm_dcnv2", 0.80275),
        ("v3.1", "maskrcnn", 0.377),
    ],
)
def test_the_target_is_the_bound_of_the_check_that_is_not_the_metrics_edge(round_name, benchmark, target):
    assert round_rules(round_name).benchmark(benchmark, "closed").quality.target() == target


# --- the round comes from the tree -------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_round_is_the_repository_folders_not_a_nearer_folder_named_like_another_round(tmp_path):
    """Importing one submitter's folder named '..._v2.0' inside training_results_v3.1: the round is v3.1 (it was
    read from the nearest folder ending in v<major>.<minor>, so v2.0)."""
    root = _resnet_tree(tmp_path, round_folder="training_results_v3.1", submitter="Acme_v2.0")
    call_command("import_results", "mlperf", str(root / "Acme_v2.0"), "--no-progress")
    (document,) = _stored(benchmark="resnet")
    assert document["provenance"]["origin"]["round"] == "v3.1"
    assert document["workload"]["version"] == "mlperf-training-v3.1"


@pytest.mark.django_db
def test_a_round_argument_that_contradicts_the_folder_name_is_refused_and_nothing_is_stored(tmp_path, capsys):
    root = _resnet_tree(tmp_path, round_folder="training_results_v3.1")
    with pytest.raises(CommandError, match="refused; nothing was stored"):
        call_command("import_results", "mlperf", str(root), "--round", "v4.0", "--no-progress")
    assert (
        "--round v4.0 contradicts the tree's folder name (training_results_v3.1, round v3.1)" in capsys.readouterr().out
    )
    assert not Submission.objects.exists()
    plan = training.parse_tree(root, round_name="3.1")  # the same round, written without the v: agreed
    assert plan.round == "v3.1" and [i.status for i in plan.items] == ["ready"]


# --- MLPerf Training Power ---------------------------------------------------------------------------------

RESNET_MINUTES = [30.0, 29.0, 31.0, 28.5, 29.5]  # _resnet_tree's runs: 28.5 and 31 are dropped


def _power_file(path: Path, lines: list[tuple[str, int, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _log(path, [{"key": key, "time_ms": stamp, "value": value, "metadata": ""} for key, stamp, value in lines])


def _steady(watts: float, *, start: int = START, readings: int = 60, stop_at_start: bool = False) -> list:
    """power_measurement_start, one reading a second at `watts`, then the stop (at the start's own time, as SMC's
    v4.0 files write it, when `stop_at_start`)."""
    lines: list = [("power_measurement_start", start, "null")]
    lines += [("power_reading", start + 1000 * (i + 1), watts) for i in range(readings)]
    lines.append(("power_measurement_stop", start if stop_at_start else start + 1000 * readings, "null"))
    return lines


@pytest.mark.django_db
def test_training_power_readings_are_the_results_energy_as_mlcommons_summarizer_totals_them(tmp_path):
    """v4.0 (SMC's layout: two nodes, the stop written at the start's time): per run the readings integrated over
    the window and stretched to the run's time, summed over nodes; the result the mean of the kept runs."""
    root = _resnet_tree(tmp_path, round_folder="training_results_v4.0")
    folder = root / "Acme/results/r8/resnet"
    node_watts = {n: (5000.0 + 100 * n, 4000.0 + 10 * n) for n in range(5)}
    for n, (first, second) in node_watts.items():
        _power_file(folder / f"power/result_{n}/node_0.txt", _steady(first, stop_at_start=True))
        _power_file(folder / f"power/result_{n}/node_1.txt", _steady(second, stop_at_start=True))
    call_command("import_results", "mlperf", str(root), "--no-progress")
    (document,) = _stored(benchmark="resnet")
    # a steady power P for a run of t seconds is P × t joules, whatever the window the meter covered
    per_run = [sum(node_watts[n]) * RESNET_MINUTES[n] * 60 for n in range(5)]
    kept = [0, 1, 4]  # 30, 29 and 29.5 minutes
    energy = document["metrics"]["energy"]
    assert energy["joules"] == pytest.approx(sum(per_run[n] for n in kept) / 3)
    assert energy["window_s"] == pytest.approx(document["metrics"]["time_to_quality"]["seconds"])
    assert energy["average_power_w"] == pytest.approx(energy["joules"] / energy["window_s"])
    assert "a9f4839db6fb" in energy["method"] and energy["source"] == "external-meter"


def test_from_v4_1_only_readings_inside_the_window_count_in_time_order(tmp_path):
    """The window rule MLCommons adopted after v4.0 (c401ff0): records sorted by time, readings after the stop
    left out, conversion_eff applied."""
    root = _resnet_tree(tmp_path, round_folder="training_results_v4.1", bench="ssd")  # v4.1 has no resnet
    folder = root / "Acme/results/r8/ssd"
    for n in range(5):
        lines = _steady(3000.0)
        lines[1:-1] = reversed(lines[1:-1])  # readings written newest first: the time order is what counts
        lines.append(("power_reading", START + 61_000, 900_000.0))  # after the stop: outside the window
        lines.append(("conversion_eff", START, 0.9))
        _power_file(folder / f"power/result_{n}/node_0.txt", lines)
    (item,) = training.parse_tree(root).items
    assert item.status == "ready", item.errors
    kept = [RESNET_MINUTES[n] * 60 for n in (0, 1, 4)]
    assert item.document["metrics"]["energy"]["joules"] == pytest.approx(0.9 * 3000.0 * sum(kept) / 3)


def test_a_power_file_whose_window_has_no_length_refuses_the_result_in_words(tmp_path):
    root = _resnet_tree(tmp_path, round_folder="training_results_v4.1", bench="ssd")  # v4.1 has no resnet
    folder = root / "Acme/results/r8/ssd"
    for n in range(5):  # v4.1's rule reads no reading after a stop written at the start's time
        _power_file(folder / f"power/result_{n}/node_0.txt", _steady(3000.0, stop_at_start=True))
    (item,) = training.parse_tree(root).items
    assert item.status == "refused"
    assert any("node_0.txt" in e and "window" in e and "has no length" in e for e in item.errors), item.errors


def test_a_run_without_power_readings_in_a_result_with_power_is_refused(tmp_path):
    root = _resnet_tree(tmp_path, round_folder="training_results_v4.0")
    folder = root / "Acme/results/r8/resnet"
    for n in range(4):
        _power_file(folder / f"power/result_{n}/node_0.txt", _steady(3000.0))
    (item,) = training.parse_tree(root).items
    assert item.status == "refused"
    assert any("power/result_4: no node_*.txt power readings for result_4.txt" in e for e in item.errors)


def test_a_round_without_a_power_rule_keeps_its_time_and_says_its_readings_are_not_energy(tmp_path):
    root = _resnet_tree(tmp_path, round_folder="training_results_v3.1")
    folder = root / "Acme/results/r8/resnet"
    for n in range(5):
        _power_file(folder / f"power/result_{n}/node_0.txt", _steady(3000.0))
    (item,) = training.parse_tree(root).items
    assert item.status == "ready" and "energy" not in item.document["metrics"]
    assert any("MLPerf Training v3.1 has no power rule" in w for w in item.warnings), item.warnings


SHARED_SMC = SHARED / "data/mlperf-rounds/training_v4.0/smc-ac-power"


@pytest.mark.django_db
@pytest.mark.skipif(not SHARED_SMC.is_dir(), reason=f"no shared training_v4.0 round at {SHARED_SMC}")
def test_smc_ac_power_published_logs_with_authored_power_readings(tmp_path):
    """SMC's real v4.0 dlrm_dcnv2 logs (the shared copy keeps no power/ folder) with readings authored here: the
    energy follows each run's own run_start..run_stop time, over the eight runs MLPerf's olympic mean keeps."""
    root = tmp_path / "training_results_v4.0"
    shutil.copytree(SHARED_SMC, root / "smc-ac-power")
    folder = root / "smc-ac-power/results/1xSMC-H100-SXM-80GB/dlrm_dcnv2"
    results = sorted(folder.glob("result_*.txt"))
    for path in results:
        _power_file(folder / "power" / path.stem / "node_0.txt", _steady(2700.0, stop_at_start=True))
    call_command("import_results", "mlperf", str(root), "--no-progress")
    (document,) = _stored(benchmark="dlrm_dcnv2")
    runs = document["provenance"]["origin"]["runs"]
    assert len(runs) == 10 and sum(r["used"] for r in runs) == 8
    kept = [r["seconds"] for r in runs if r["used"]]
    assert document["metrics"]["energy"]["joules"] == pytest.approx(2700.0 * sum(kept) / 8)
    (bert,) = _stored(benchmark="bert")  # no power/ folder: no energy, nothing invented
    assert "energy" not in bert["metrics"]


@pytest.mark.django_db
def test_the_submitter_is_the_system_descriptions_not_the_logs_submission_org(tmp_path):
    """Logs carry the training code's author ('MosaicML', 'NVIDIA', 'SUBMISSION_ORG'); MLCommons' table the
    system description's submitter."""
    root = _resnet_tree(tmp_path, submitter="Zed")  # the description says Zed, the logs say Acme
    call_command("import_results", "mlperf", str(root), "--no-progress")
    (stored,) = Submission.objects.all()
    assert stored.document["provenance"]["submitter"] == "Zed"
    assert stored.document["provenance"]["origin"]["submitter"] == "Zed"
