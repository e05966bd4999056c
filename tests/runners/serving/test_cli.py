"""`benchreg run serving`: refusals before any load, and documents that pass protocol 1.3."""

from __future__ import annotations

import json

import numpy as np
import pytest

import protocol
from protocol import comparability
from protocol.serving import level_neutral
from runners.cli import main

DEPLOYMENT = ["--accelerator-vendor", "NVIDIA", "--accelerator-model", "H100 SXM", "--accelerator-count", "1",
              "--nodes", "1", "--engine", "benchreg-simulated", "--tensor-parallel", "1", "--weights", "bf16",
              "--activations", "bf16", "--kv-cache", "bf16"]  # fmt: skip


def run_serving(url, tmp_path, *extra):
    args = ["run", "serving", "--endpoint", url, "--model", "simulated", "--input-tokens", "16", "--output-tokens",
            "6", "--duration", "2", "--min-requests", "12", "--out", str(tmp_path), *extra]  # fmt: skip
    return main(args)


def test_a_run_lacking_the_deployment_is_refused_with_pointers_before_any_load(endpoint, tmp_path, capsys):
    url = endpoint("--ttft-ms", "5", "--itl-ms", "2")
    assert run_serving(url, tmp_path, "--request-rates", "4") == 2
    err = capsys.readouterr().err
    assert "refused before any load was sent" in err
    assert "/system/accelerators/0/model (--accelerator-model" in err and "/precision/kv_cache" in err
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_endpoint_is_refused_and_nothing_is_stored(tmp_path, capsys):
    assert run_serving("http://127.0.0.1:9", tmp_path, "--request-rates", "4", *DEPLOYMENT) == 2
    assert "cannot reach http://127.0.0.1:9" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_does_not_stream_or_breaks_sse_is_refused(endpoint, tmp_path, capsys):
    for fault, words in (("no-stream", "not a stream"), ("malformed", "malformed SSE"), ("errors", "HTTP 500")):
        url = endpoint("--ttft-ms", "1", "--itl-ms", "1", "--fault", fault)
        assert run_serving(url, tmp_path, "--request-rates", "4", *DEPLOYMENT) == 2
        assert words in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_each_level_is_one_valid_document_sharing_the_sweep(endpoint, tmp_path):
    # 12 requests of 100 + 5 × 20 ms: over the protocol's 1 s window minimum at both levels.
    url = endpoint("--ttft-ms", "100", "--itl-ms", "20", "--capacity", "64")
    assert run_serving(url, tmp_path, "--concurrency", "1,2", *DEPLOYMENT) == 0
    docs = sorted(
        (json.loads(p.read_text()) for p in tmp_path.glob("*.json")), key=lambda d: d["scenario"]["sweep"]["index"]
    )
    assert [d["scenario"]["concurrency"] for d in docs] == [1, 2]
    assert len({d["scenario"]["sweep"]["id"] for d in docs}) == 1
    for doc in docs:
        protocol.check(doc)
        assert doc["protocol"] == "benchreg.submission/1.3" and doc["scenario"]["arrival"] == "closed-loop"
        # a closed-loop level sends for its 2 s and at least its 12 requests (200 ms each: 12 at c=1, ~20 at c=2)
        assert doc["metrics"]["requests"]["completed"] == doc["metrics"]["requests"]["sent"] >= 12
        assert doc["metrics"]["token_counts"]["counted_by"] == "server-usage"
        assert doc["software"]["serving"]["version"] == "1.0"  # told by the endpoint's /version
        # The endpoint's own counters over the level are a note of what the server saw (6 tokens a request), never
        # a setting: a setting is part of the configuration and would split the sweep into one per level.
        done = doc["metrics"]["requests"]["completed"]
        assert f"vllm:generation_tokens_total {done * 6}," in doc["software"]["notes"]["endpoint_metrics"]
        assert doc["software"]["settings"] == {}
    neutral = [level_neutral(d) for d in docs]
    for axis in ("system", "iso-quality"):
        assert len({comparability.comparability_key(d, axis) for d in neutral}) == 1
        first, second = (comparability.configuration(d, axis) for d in neutral)
        assert first == second


def test_the_deployment_file_of_an_import_describes_a_run_too(endpoint, tmp_path):
    """One description of a deployment for its measured and its imported runs: the import's YAML layout."""
    from runners.serving.deployment import load

    text = """system:
  nodes: 1
  accelerators: {vendor: NVIDIA, model: H100 SXM, count: 1}
engine: {name: benchreg-simulated, version: "1.0"}
parallelism: {tensor: 1}
precision: {weights: bf16, activations: bf16, kv_cache: bf16, quantization: {method: none}}
"""
    path = tmp_path / "deployment.yaml"
    path.write_text(text)
    assert load(path).accelerator_model == "H100 SXM" and load(path).quantization_method == "none"
    out = tmp_path / "out"
    url = endpoint("--ttft-ms", "20", "--itl-ms", "5", "--capacity", "64")
    assert run_serving(url, out, "--concurrency", "1", "--deployment", str(path)) == 0
    (doc,) = [json.loads(p.read_text()) for p in out.glob("*.json")]
    assert doc["system"]["accelerators"][0]["model"] == "H100 SXM"
    path.write_text(text + "workload: {name: mine}\n")
    with pytest.raises(ValueError, match=r"workload\.name is read by `benchreg import serving` only"):
        load(path)
    path.write_text("accelerator: {vendor: NVIDIA}\n")
    with pytest.raises(ValueError, match=r"unknown key 'accelerator' \(known here: engine, "):
        load(path)


def test_a_uniform_shape_states_the_law_its_requests_were_drawn_from(endpoint, tmp_path):
    """--input-dist uniform from 100 to 200 stated mean 512 (the --input-tokens default) and stdev 0, and drew the
    bounds half and one and a half times as often as the counts between them."""
    from runners.serving.shapes import TokenLaw

    law = TokenLaw(512, distribution="uniform", min=100, max=200)
    assert (law.mean, law.stdev) == (150.0, 29.154759)
    drawn = law.draw(np.random.default_rng(3), 202_000)
    assert drawn.min() == 100 and drawn.max() == 200
    share = np.bincount(drawn, minlength=201)[100:] / len(drawn)  # each of the 101 counts: 1/101 ≈ 0.0099
    assert share.min() > 0.0090 and share.max() < 0.0109, (share.min(), share.max())
    assert abs(drawn.mean() - 150) < 0.2
    with pytest.raises(ValueError, match="min <= max"):
        TokenLaw(512, distribution="uniform", min=200, max=100)

    url = endpoint("--ttft-ms", "100", "--itl-ms", "20", "--capacity", "64")
    extra = ["--input-dist", "uniform", "--input-min", "8", "--input-max", "24", "--concurrency", "1"]
    assert run_serving(url, tmp_path, *extra, *DEPLOYMENT) == 0
    (doc,) = (json.loads(p.read_text()) for p in tmp_path.glob("*.json"))
    stated = doc["workload"]["request_shape"]["input_tokens"]
    assert stated["distribution"] == "uniform" and (stated["mean"], stated["min"], stated["max"]) == (16.0, 8, 24)
