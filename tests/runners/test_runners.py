"""Each runner, on each backend available here, produces a document that validates, with what it promises.

Shapes and windows are cut down (quick mode, one thread, short warm-up cap) to keep the suite fast; the
verdict may be "not steady" on a shared machine, which the documents must then explain.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import protocol
from runners import cli
from runners.api import RunSpec, execute, sweep_specs

FAST: dict[str, Any] = {"quick": True, "threads": 1, "repetitions": 2, "min_seconds": 0.5, "warmup_max_seconds": 0.5}


def run(**kw: Any) -> dict[str, Any]:
    doc = execute(RunSpec(**{**FAST, **kw}))
    protocol.check(doc)  # the runner validated it already; a second look costs nothing
    steady = doc["conditions"]["steady_state"]
    assert steady["reached"] or steady["reasons"], "an unsteady run must say why"
    return doc


def test_numpy_offline_mlp_document_validates_and_records_its_protocol() -> None:
    doc = run(phase="inference", workload="mlp-classifier", backend="numpy", batch_size=4)
    assert doc["provenance"]["runner"]["name"] == "benchreg.runners.inference"
    assert doc["software"]["settings"]["numpy.blas_threads"] == 1
    assert doc["metrics"]["throughput"]["unit"] == "samples/s"
    samples = doc["samples"]["latency_ms"]["repetitions"]
    assert len(samples) == 2 and sum(map(len, samples)) == doc["metrics"]["latency_ms"]["count"]
    assert doc["conditions"]["window"]["seconds"] >= max(1.0, doc["conditions"]["warmup"]["seconds"])
    assert doc["workload"]["model"]["parameters"] == 10512394


def test_numpy_decoder_single_stream_reports_ttft_tpot_and_tokens_per_second() -> None:
    doc = run(
        phase="inference",
        workload="decoder-small",
        backend="numpy",
        scenario="single-stream",
        batch_size=1,
        sequence_length=16,
        output_tokens=4,
    )
    metrics = doc["metrics"]
    assert metrics["throughput"]["unit"] == "tokens/s" and metrics["tokens_per_second"]["value"] > 0
    assert metrics["ttft_ms"]["count"] == metrics["tpot_ms"]["count"] == metrics["latency_ms"]["count"]
    assert metrics["ttft_ms"]["p50"] < metrics["latency_ms"]["p50"]
    assert metrics["primary"].startswith("latency_ms.")
    assert doc["precision"]["kv_cache"] == "fp32"


def test_numpy_training_mlp_loss_goes_down_with_breakdown_and_mfu() -> None:
    doc = run(phase="training", workload="mlp-classifier", backend="numpy", batch_size=16, steps=12)
    metrics = doc["metrics"]
    assert doc["provenance"]["runner"]["name"] == "benchreg.runners.training"
    assert metrics["loss"]["decreased"] is True
    assert set(metrics["step_breakdown_ms"]) == {"data", "forward", "backward", "optimizer"}
    assert metrics["flops"]["per_step"] > 0 and metrics["flops"]["peak_source"].startswith("measured")
    assert metrics["memory"]["kind"] == "host-rss" and metrics["memory"]["peak_bytes"] > 0


def test_numpy_backend_refuses_what_it_cannot_run() -> None:
    from runners.backends import UnsupportedRun

    with pytest.raises(UnsupportedRun, match="fp32 only"):
        execute(RunSpec(phase="inference", workload="mlp-classifier", backend="numpy", precision="bf16"))


torch = pytest.importorskip("torch")


def test_torch_int8_inference_reports_quality_against_fp32() -> None:
    doc = run(phase="inference", workload="mlp-classifier", backend="torch", precision="int8", batch_size=8)
    quality = doc["metrics"]["quality"]
    assert quality["metric"] == "top1-agreement-vs-fp32" and quality["reference_precision"] == "fp32"
    assert 0.5 <= quality["value"] <= 1.0
    assert doc["precision"]["weights"] == "int8" and doc["precision"]["quantization"]["method"] == "dynamic"
    assert doc["software"]["settings"]["torch.num_threads"] == 1
    assert doc["software"]["settings"]["torch.backends.cuda.matmul.allow_tf32"] is False


def test_torch_encoder_training_bf16_autocast_runs_on_cpu() -> None:
    doc = run(
        phase="training",
        workload="encoder-small",
        backend="torch",
        precision="bf16",
        batch_size=4,
        sequence_length=32,
        steps=10,
    )
    assert doc["precision"]["activations"] == "bf16" and doc["precision"]["master_weights"] == "fp32"
    assert doc["software"]["frameworks"]["torch"] == torch.__version__
    assert doc["metrics"]["tokens_per_second"]["value"] > 0
    assert doc["metrics"]["loss"]["decreased"] is True


def test_torch_decoder_server_scenario_records_load_goodput_and_slo() -> None:
    doc = run(
        phase="inference",
        workload="decoder-small",
        backend="torch",
        scenario="server",
        batch_size=1,
        sequence_length=16,
        output_tokens=4,
        target_qps=20.0,
        concurrency=2,
    )
    scenario, metrics = doc["scenario"], doc["metrics"]
    assert scenario["arrival"] == "poisson" and scenario["latency_slo_ms"]["ttft_p99"] == 500.0
    assert metrics["request_rate"]["unit"] == "requests/s" and metrics["goodput"]["value"] >= 0
    assert "arrival_rate_within_tolerance" in doc["conditions"]["validity"]["checks"]
    assert "poisson" in doc["software"]["notes"]["load_generator"]


def test_cli_writes_one_valid_file_per_batch_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        [
            "run",
            "inference",
            "--workload",
            "mlp-classifier",
            "--backend",
            "numpy",
            "--batch",
            "1,2",
            "--quick",
            "--threads",
            "1",
            "--min-seconds",
            "0.5",
            "--warmup-max-seconds",
            "0.5",
            "--no-progress",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 2
    out = capsys.readouterr().out
    for path in files:
        protocol.check(path.read_bytes())
        assert f"wrote {path}" in out
    assert {json.loads(p.read_text())["workload"]["shape"]["batch_size"] for p in files} == {1, 2}


def test_cli_refuses_submit_without_a_server() -> None:
    assert cli.main(["run", "training", "--workload", "mlp-classifier", "--submit", "--server", ""]) == 2


def test_quick_sweep_covers_inference_and_training() -> None:
    specs = sweep_specs("numpy")
    assert {s.phase for s in specs} == {"inference", "training"} and all(s.quick for s in specs)
    assert {s.backend for s in sweep_specs("torch")} == {"torch"}


def test_runners_never_import_django() -> None:
    code = (
        "import sys, runners.api, runners.cli, runners.environment, runners.backends.numpy_backend; "
        "sys.exit(1 if any(m == 'django' or m.startswith(('django.', 'registry')) for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_cli_submits_each_document_through_the_registry_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from runners import client

    sent: list[dict[str, Any]] = []

    class FakeClient:
        def __init__(self, server: str, token: str) -> None:
            assert (server, token) == ("http://registry.test", "t0ken")

        def __enter__(self) -> FakeClient:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def submit(self, document: dict[str, Any]) -> client.SubmitOutcome:
            sent.append(document)
            return client.SubmitOutcome(status="stored", run_id=len(sent), digest=protocol.check(document).digest)

    monkeypatch.setattr(client, "RegistryClient", FakeClient)
    monkeypatch.setenv("BENCHREG_TOKEN", "t0ken")
    code = cli.main(
        [
            "run",
            "inference",
            "--workload",
            "mlp-classifier",
            "--backend",
            "numpy",
            "--batch",
            "2",
            "--quick",
            "--threads",
            "1",
            "--min-seconds",
            "0.5",
            "--warmup-max-seconds",
            "0.5",
            "--no-progress",
            "--out",
            str(tmp_path),
            "--submit",
            "--server",
            "http://registry.test",
            "--token",
            "t0ken",
        ]
    )
    assert code == 0 and len(sent) == 1
    assert "stored as run 1" in capsys.readouterr().out


def test_a_closed_loop_too_slow_for_its_minimum_count_stops_at_the_time_cap_and_is_kept_truncated() -> None:
    # 100 ms a query, quick mode's minimum of 10 per repetition, a cap of 1.2 s for both: each repetition is cut.
    doc = run(
        phase="inference", workload="mlp-classifier", backend="numpy", batch_size=4, sleep_ms=100.0, max_seconds=1.2
    )
    window = doc["conditions"]["window"]
    assert window["seconds"] < 2.5 and 10 <= window["iterations"] < 20
    assert doc["conditions"]["validity"] == {"valid": False, "checks": {"finished_within_time_cap": False}}
    reasons = doc["conditions"]["steady_state"]["reasons"]
    assert any(r.startswith("truncated: 2 of 2 repetitions hit the time cap of") for r in reasons), reasons
    assert not doc["conditions"]["steady_state"]["reached"]


def test_a_closed_loop_inside_its_cap_says_nothing_of_it() -> None:
    doc = run(phase="inference", workload="mlp-classifier", backend="numpy", batch_size=4, max_seconds=30.0)
    assert "validity" not in doc["conditions"]
    # `reasons` is absent when the steady state was reached (a quiet machine), so read it with a default.
    assert not any(r.startswith("truncated") for r in doc["conditions"]["steady_state"].get("reasons", []))


def test_a_time_cap_below_the_protocol_window_is_refused() -> None:
    with pytest.raises(ValueError, match="max_seconds must be at least 1"):
        RunSpec(phase="inference", workload="mlp-classifier", max_seconds=0.5)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["run", "inference", "--workload", "mlp-tiny", "--sequence-length", "512"],
            "error: mlp-tiny takes fixed-size feature vectors, not token sequences: --sequence-length is for "
            "decoder-small, encoder-small",
        ),
        (
            ["run", "training", "--workload", "mlp-classifier", "--sequence-length", "512"],
            "--sequence-length is for decoder-small, encoder-small",
        ),
        (
            ["run", "inference", "--workload", "encoder-small", "--output-tokens", "16"],
            "error: encoder-small generates no tokens: --output-tokens is for decoder-small",
        ),
    ],
)
def test_a_shape_the_model_never_reads_is_refused_not_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """An MLP run with --sequence-length 512 stated that length in its shape and, training, a tokens/s from it."""
    assert cli.main([*argv, "--out", str(tmp_path)]) == 2
    assert said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="not token sequences"):
        RunSpec(phase="training", workload="mlp-classifier", sequence_length=64)
