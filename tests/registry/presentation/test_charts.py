"""Charts: inline-safe SVG with scoped ids and units, or None when there is nothing to plot."""

from __future__ import annotations

import re

from protocol import comparability
from registry.presentation import charts
from tests.registry.reports.conftest import fleet_documents


def _result(docs, **kwargs):
    return comparability.compare(docs, "system", resamples=200, **kwargs)


def test_every_chart_is_inline_safe_svg_with_its_own_ids():
    docs = fleet_documents(3)
    result = _result(docs, prices={"lab-h100-01": 3.0})
    svgs = [
        charts.throughput_chart(result),
        charts.latency_percentiles_chart(docs),
        charts.latency_distribution_chart(docs[0]),
        charts.derived_chart(result),
    ]
    ids: list[str] = []
    for svg in svgs:
        assert svg is not None and svg.startswith("<svg") and "<script" not in svg and "<?xml" not in svg
        assert "<!--" not in svg and "http://www.w3.org/1999/xlink" in svg
        ids += re.findall(r'\bid="([^"]+)"', svg)
    assert len(ids) == len(set(ids))


def test_nothing_to_plot_is_none():
    docs = fleet_documents(2)
    for doc in docs:
        doc.pop("samples")
        doc["metrics"].pop("energy")
    result = _result(docs)
    assert charts.latency_distribution_chart(docs[0]) is None
    assert charts.latency_vs_load_chart(docs) is None  # one load per system
    assert charts.derived_chart(result) is None
    assert charts.throughput_chart({"arms": []}) is None and charts.latency_percentiles_chart([]) is None


def test_latency_against_load_needs_two_loads_of_one_system():
    docs = fleet_documents(2)
    heavier = fleet_documents(1)[0]
    heavier["scenario"]["target_qps"] = 40.0
    assert charts.latency_vs_load_chart([*docs, heavier]) is not None


def test_the_same_data_gives_the_same_svg():
    docs = fleet_documents(2)
    assert charts.latency_percentiles_chart(docs) == charts.latency_percentiles_chart(docs)
