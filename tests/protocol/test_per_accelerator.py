"""Figures per accelerator: each a rate the run measured divided by its accelerators, labelled derived ("derived, not
an MLPerf metric" for MLPerf results), absent with the reason where the run cannot give it, never guessed.
The real imported files are checked in tests/registry/test_per_accelerator.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import protocol
from protocol import per_accelerator as pa
from protocol.summary import summarize
from tests.conftest import load_example


def _served(count: int = 8) -> dict[str, Any]:
    """The server example as a served level: 8 accelerators, token totals over a 120 s window."""
    doc = copy.deepcopy(load_example("inference-server-h100-bf16"))
    doc["system"]["accelerators"][0]["count"] = count
    doc["metrics"]["token_counts"] = {"input_total": 1_200_000, "output_total": 151_296, "counted_by": "server-usage"}
    doc["protocol"] = "benchreg.submission/1.2"  # token_counts is a field of 1.2
    return doc


def test_it_divides_the_throughput_and_output_tokens_by_the_accelerators() -> None:
    figures = pa.per_accelerator(_served(8))
    assert figures.accelerators == 8
    assert figures.throughput == pytest.approx(1260.8 / 8) and figures.unit == "tokens/s"
    assert figures.output_tokens == pytest.approx(1260.8 / 8)
    # InferenceMAX's tput_per_gpu: (output tokens/s + input tokens / window) / accelerators
    assert figures.total_tokens == pytest.approx((1260.8 + 1_200_000 / 120.0) / 8)
    assert figures.label == "derived" and figures.absent == {}


def test_it_labels_an_mlperf_result_not_an_mlperf_metric() -> None:
    doc = _served(8)
    doc["provenance"]["origin"] = {"kind": "mlperf-inference", "round": "v5.1"}
    figures = pa.per_accelerator(doc)
    assert figures.label == "derived, not an MLPerf metric"
    assert figures.as_dict()["label"] == "derived, not an MLPerf metric"


def test_it_gives_no_figure_for_a_system_without_accelerators_and_says_why() -> None:
    figures = pa.per_accelerator(load_example("inference-offline-cpu-int8"))
    assert (figures.throughput, figures.output_tokens, figures.total_tokens) == (None, None, None)
    assert set(figures.absent) == set(pa.FIGURES)
    assert all("states no accelerator count" in why for why in figures.absent.values())


def test_it_refuses_to_divide_across_accelerator_models() -> None:
    doc = _served(4)
    doc["system"]["accelerators"].append({"vendor": "AMD", "model": "MI300X", "count": 4})
    figures = pa.per_accelerator(doc)
    assert figures.throughput is None and figures.absent["throughput"] == pa.MIXED


def test_a_training_run_has_its_training_throughput_per_accelerator_and_no_output_tokens() -> None:
    doc = copy.deepcopy(load_example("training-h100-bf16"))
    doc["system"]["accelerators"][0]["count"] = 4
    figures = pa.per_accelerator(doc)
    assert figures.throughput == pytest.approx(2560.0 / 4) and figures.unit == "samples/s"
    assert figures.output_tokens is None and figures.absent["output_tokens"] == pa.TRAINING_TOKENS
    del doc["metrics"]["throughput"]
    assert "no training throughput" in pa.per_accelerator(doc).absent["throughput"]


def test_without_input_tokens_the_input_and_output_figure_is_absent_with_the_fields_it_needs() -> None:
    doc = _served(8)
    del doc["metrics"]["token_counts"]
    figures = pa.per_accelerator(doc)
    assert figures.output_tokens == pytest.approx(1260.8 / 8) and figures.total_tokens is None
    assert "metrics.token_counts.input_total" in figures.absent["total_tokens"]


def test_a_samples_headline_is_no_output_tokens() -> None:
    doc = _served(2)
    doc["metrics"]["throughput"] = {"value": 100.0, "unit": "samples/s"}
    figures = pa.per_accelerator(doc)
    assert figures.throughput == 50.0 and figures.unit == "samples/s"
    assert figures.output_tokens is None and figures.absent["output_tokens"] == pa.NO_OUTPUT_TOKENS


@pytest.mark.parametrize("name", ["inference-server-h100-bf16", "inference-offline-cpu-int8"])
def test_the_summary_columns_hold_the_figures_and_give_the_same_reasons_back(name: str) -> None:
    for doc in (load_example(name), _served(8)):
        assert protocol.errors(doc) == []
        figures, summary = pa.per_accelerator(doc), summarize(doc)
        assert summary.per_accelerator_throughput == figures.throughput
        assert summary.per_accelerator_output_tokens == figures.output_tokens
        assert summary.per_accelerator_total_tokens == figures.total_tokens
        again = pa.from_columns(
            accelerators=summary.accelerator_count,
            phase=summary.phase,
            origin_kind=summary.origin_kind,
            throughput=summary.per_accelerator_throughput,
            unit=summary.per_accelerator_unit,
            output_tokens=summary.per_accelerator_output_tokens,
            total_tokens=summary.per_accelerator_total_tokens,
        )
        assert again == figures


def test_a_broken_rate_is_absent_not_a_number() -> None:
    doc = _served(8)
    doc["metrics"]["throughput"]["value"] = 0
    assert pa.per_accelerator(doc).throughput is None
    doc["conditions"]["window"]["seconds"] = 0
    assert pa.per_accelerator(doc).total_tokens is None


def test_a_candidates_figures_are_the_geometric_mean_of_its_runs_with_an_interval_from_three() -> None:
    from protocol.decisions import interval
    from protocol.decisions.per_accelerator import candidate_per_accelerator

    runs = []
    for value in (1200.0, 1260.8, 1310.0):
        doc = _served(8)
        doc["metrics"]["throughput"]["value"] = value
        runs.append(doc)
    figures = candidate_per_accelerator(runs, interval)
    output = figures["output_tokens"]
    assert output["value"] == pytest.approx((1200.0 * 1260.8 * 1310.0) ** (1 / 3) / 8, rel=1e-4)
    assert output["ci_low"] < output["value"] < output["ci_high"] and output["unit"] == "tokens/s per accelerator"
    assert figures["label"] == "derived" and figures["accelerators"] == 8
    # one run without its input tokens: the candidate has no input+output figure, never one from the others
    del runs[0]["metrics"]["token_counts"]
    runs[1]["provenance"]["origin"] = {"kind": "mlperf-inference"}
    figures = candidate_per_accelerator(runs, interval)
    assert figures["total_tokens"]["value"] is None and "input_total" in figures["total_tokens"]["absent"]
    assert figures["label"] == "derived, not an MLPerf metric"


def test_an_mlperf_training_candidate_says_it_has_no_throughput() -> None:
    from protocol.decisions import interval
    from protocol.decisions.per_accelerator import candidate_per_accelerator

    doc = copy.deepcopy(load_example("training-h100-bf16"))
    del doc["metrics"]["throughput"]
    doc["provenance"]["origin"] = {"kind": "mlperf-training"}
    figures = candidate_per_accelerator([doc], interval)
    assert figures["throughput"]["value"] is None
    assert figures["throughput"]["absent"] == "MLPerf Training publishes the time to train, not a throughput"
