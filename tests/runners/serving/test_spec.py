"""ServingSpec: the command's flags and an agent job's JSON are one value; its JSON form is refused by pointer."""

from __future__ import annotations

import argparse

import pytest

from protocol.errors import value_at
from runners.api import execute, execute_job, expected_fields, job_spec
from runners.serving import export
from runners.serving.cli import add_arguments, spec_from_args
from runners.serving.spec import SpecInvalid, from_fields
from tests.runners.serving.test_cli import DEPLOYMENT


def _args(*extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    parser.add_argument("--submitter", default="local")
    return parser.parse_args(["--model", "simulated", *extra, *DEPLOYMENT])


def test_the_commands_spec_survives_the_json_an_agent_job_holds() -> None:
    args = _args("--endpoint", "http://gpu:8000", "--request-rates", "1,2.5", "--arrival", "gamma", "--burstiness",
                 "0.5", "--input-dist", "normal", "--input-stdev", "30", "--ttft-slo-ms", "900", "--warmup", "16",
                 "--warmup-seconds", "2.5")  # fmt: skip
    spec = spec_from_args(args)
    assert spec.fields()["load"]["warmup_requests"] == 16 and spec.fields()["load"]["warmup_seconds"] == 2.5
    assert from_fields(spec.fields()) == spec
    assert job_spec({"phase": "serving", **spec.fields()}) == spec


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"load": {"mode": "concurrency", "loads": [1.5]}}, "/load"),
        ({"load": {"mode": "request-rate", "loads": [1], "extra": 1}}, "/load/extra"),
        ({"output_tokens": {"mean": True}}, "/output_tokens/mean"),
        ({"arrival": "gamma"}, "/burstiness"),
        ({"prompts": "p.jsonl", "input_tokens": {"mean": 4}}, "/input_tokens"),
        ({"deployment": []}, "/deployment"),
        ({"sweep_id": ""}, "/sweep_id"),
        ({"load": {"mode": "request-rate", "loads": [1], "warmup_requests": -1}}, "/load"),
        ({"load": {"mode": "request-rate", "loads": [1], "warmup_seconds": "2"}}, "/load/warmup_seconds"),
        ({"seed": -1}, "/seed"),  # the range `run serving --seed` is read with: numpy's traceback on the agent
        ({"objectives": {"ttft_ms": 0}}, "/objectives/ttft_ms"),  # an objective every request fails
    ],
)
def test_a_wrong_field_is_refused_by_its_pointer(change: dict[str, object], pointer: str) -> None:
    fields = {"endpoint": "http://gpu:8000", "model": "m", "load": {"mode": "request-rate", "loads": [1]},
              "deployment": {}, **change}  # fmt: skip
    with pytest.raises(SpecInvalid) as refused:
        from_fields(fields)
    assert refused.value.pointer == pointer, str(refused.value)


def test_a_measured_level_states_every_field_its_job_fixes(endpoint, tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = endpoint("--ttft-ms", "20", "--itl-ms", "5", "--capacity", "64")
    spec = spec_from_args(_args("--endpoint", url, "--request-rates", "4,12", "--duration", "2",
                                "--min-requests", "10", "--input-tokens", "8", "--output-tokens", "4",
                                "--warmup", "3"))  # fmt: skip
    job = from_fields({**spec.fields(), "sweep_id": "planned-sweep", "level": 1})
    document = execute(job)
    assert document["conditions"]["warmup"]["iterations"] == 3  # an agent job warms up as the command does ...
    assert "artifacts" not in document["provenance"]  # ... and, given no folder, names no export: none is kept
    in_folder = execute_job(job, tmp_path)  # an agent's job: the export written in the job's folder, and named
    (named,) = in_folder["provenance"]["artifacts"]
    assert [p.name for p in tmp_path.iterdir()] == [named["name"]]
    assert export.differences(in_folder, (tmp_path / named["name"]).read_bytes()) == []
    assert document["scenario"]["sweep"]["index"] == 1 and document["scenario"]["target_qps"] == 12
    expected = expected_fields(job)
    assert {p: value_at(document, p) for p in expected} == expected


def test_a_file_workloads_spec_survives_the_json_an_agent_job_holds() -> None:
    for extra in (
        ("--workload", "trace", "--dataset", "/data/trace.jsonl", "--trace-speedups", "1,2", "--shared-prefix", "0.25"),
        ("--workload", "sharegpt", "--dataset", "/data/sg.json", "--max-turns", "3", "--concurrency", "4"),
        ("--workload", "sonnet", "--dataset", "/data/sonnet.txt", "--input-tokens", "550", "--request-rates", "2"),
    ):
        spec = spec_from_args(_args("--endpoint", "http://gpu:8000", *extra))
        assert from_fields(spec.fields()) == spec
        if spec.workload != "sonnet":  # the file states each input length: a plan leaves input_tokens out
            assert spec.input_tokens is None
            assert from_fields({k: v for k, v in spec.fields().items() if k != "input_tokens"}) == spec


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"workload": "trace"}, "/dataset"),
        ({"workload": "trace", "dataset": "t.jsonl"}, "/load/mode"),
        ({"workload": "podcast", "dataset": "x"}, "/workload"),
        ({"workload": "sharegpt", "dataset": "s.json", "max_turns": 2}, "/max_turns"),
        ({"shared_prefix": 1.0}, "/shared_prefix"),
        ({"load": {"mode": "trace", "loads": [2]}}, "/load/mode"),
    ],
)
def test_a_wrong_workload_field_is_refused_by_its_pointer(change: dict[str, object], pointer: str) -> None:
    test_a_wrong_field_is_refused_by_its_pointer(change, pointer)


def test_a_replayed_level_states_every_field_its_job_fixes(endpoint, tmp_path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(f'{{"timestamp": {i * 90}, "input_length": 12, "output_length": 3}}\n' for i in range(24)))
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2", "--capacity", "64")
    spec = spec_from_args(_args("--endpoint", url, "--workload", "trace", "--dataset", str(trace), "--trace-speedups",
                                "1,2", "--duration", "60", "--min-requests", "10"))  # fmt: skip
    job = from_fields({**spec.fields(), "sweep_id": "planned-sweep", "level": 1})
    document = execute(job)
    assert document["scenario"]["arrival"] == "trace"
    assert document["scenario"]["target_qps"] == pytest.approx(23 / (23 * 0.045), rel=1e-3)
    expected = expected_fields(job)
    assert {p: value_at(document, p) for p in expected} == expected
    assert expected["/workload/request_shape/source"] == "trace"


def test_the_deployment_flags_of_an_import_work_for_a_run_too() -> None:
    """`import serving` says --engine-image and --quantization; `run serving` said only --image and
    --quantization-method, so one deployment's flags failed on one command or the other."""
    spelled = ("--endpoint", "http://gpu:8000", "--request-rates", "1")
    run = spec_from_args(_args(*spelled, "--image", "vllm/vllm-openai:v0.11.0", "--quantization-method", "fp8 dynamic"))
    imported = spec_from_args(
        _args(*spelled, "--engine-image", "vllm/vllm-openai:v0.11.0", "--quantization", "fp8 dynamic")
    )
    assert run == imported and run.fields()["deployment"] == imported.fields()["deployment"]
    assert "vllm/vllm-openai:v0.11.0" in str(run.fields()["deployment"])
