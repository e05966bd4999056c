"""devtools/serving_peers.py reads files aiperf and guidellm themselves wrote (tests/fixtures/serving/peers/README.md)
into the figures bench/serving_load.py compares; these run without either tool installed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from devtools.serving_peers import PeerFileError, aiperf_figures, guidellm_figures, rates

PEERS = Path(__file__).resolve().parent.parent / "fixtures" / "serving" / "peers"
AIPERF, GUIDELLM = PEERS / "aiperf", PEERS / "guidellm" / "benchmarks.json"


def _aiperf_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (AIPERF / "profile_export.jsonl").read_text().splitlines()]


def test_aiperf_figures_are_its_per_request_records_summarised() -> None:
    figures, records = aiperf_figures(AIPERF), _aiperf_records()
    ttft = [r["metrics"]["time_to_first_token"]["value"] for r in records]
    gaps = np.concatenate([r["metrics"]["inter_chunk_latency"]["value"] for r in records])
    tpot = [r["metrics"]["inter_token_latency"]["value"] for r in records]
    assert (figures.sent, figures.completed) == (20, 20)
    assert gaps.size == 20 * 31  # one sample per gap: 32 tokens, 31 gaps a request
    assert figures.ttft == pytest.approx(np.quantile(ttft, [0.5, 0.99]), rel=1e-9)
    assert figures.gap == pytest.approx(np.quantile(gaps, [0.5, 0.99]), rel=1e-9)
    assert figures.tpot == pytest.approx(np.quantile(tpot, [0.5, 0.99]), rel=1e-9)


def test_aiperf_rates_come_from_request_start_and_end_times() -> None:
    figures, records = aiperf_figures(AIPERF), _aiperf_records()
    starts = sorted(r["metadata"]["request_start_ns"] / 1e9 for r in records)
    ends = [r["metadata"]["request_end_ns"] / 1e9 for r in records]
    assert figures.issued_rps == pytest.approx(19 / (starts[-1] - starts[0]))
    assert figures.achieved_rps == pytest.approx(19 / (max(ends) - starts[0]))
    summary = json.loads((AIPERF / "profile_export_aiperf.json").read_text())
    assert figures.tokens_per_s == summary["output_token_throughput"]["avg"]


def test_guidellm_tpot_is_the_per_request_mean_gap_and_it_records_no_gaps() -> None:
    figures = guidellm_figures(GUIDELLM)
    bench = json.loads(GUIDELLM.read_text())["benchmarks"][0]
    timings = [r["info"]["timings"] for r in bench["requests"]["successful"]]
    mean_gaps = [(t["last_token_iteration"] - t["first_token_iteration"]) * 1e3 / 31 for t in timings]
    assert (figures.sent, figures.completed, figures.gap) == (20, 20, None)
    # guidellm's percentiles are values of the sample (numpy's "higher"), not interpolated
    assert figures.tpot == pytest.approx(np.quantile(mean_gaps, [0.5, 0.99], method="higher"), rel=1e-6)
    ttft = [(t["first_token_iteration"] - t["request_start"]) * 1e3 for t in timings]
    assert figures.ttft == pytest.approx(np.quantile(ttft, [0.5, 0.99], method="higher"), rel=1e-6)


def test_an_unknown_tool_version_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "aiperf"
    shutil.copytree(AIPERF, folder)
    summary = json.loads((folder / "profile_export_aiperf.json").read_text())
    summary["aiperf_version"] = "0.99.0"
    (folder / "profile_export_aiperf.json").write_text(json.dumps(summary))
    with pytest.raises(PeerFileError, match=r"profile_export_aiperf\.json: aiperf version '0\.99\.0' not known"):
        aiperf_figures(folder)


def test_a_missing_field_is_named_with_its_file(tmp_path: Path) -> None:
    report = json.loads(GUIDELLM.read_text())
    del report["benchmarks"][0]["metrics"]["inter_token_latency_ms"]
    (tmp_path / "benchmarks.json").write_text(json.dumps(report))
    with pytest.raises(PeerFileError, match=r"benchmarks\.json: field 'inter_token_latency_ms\.successful"):
        guidellm_figures(tmp_path / "benchmarks.json")


def test_rates_count_intervals_not_requests() -> None:
    # 5 requests sent 0.1 s apart, each answered 0.01 s later: 10 req/s issued, 4 / 0.41 s achieved
    starts = [0.0, 0.1, 0.2, 0.3, 0.4]
    issued, achieved = rates(starts, [s + 0.01 for s in starts])
    assert issued == pytest.approx(10.0)
    assert achieved == pytest.approx(4 / 0.41)
