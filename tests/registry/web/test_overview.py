"""The overview without a browser: the matrix's numbers, set labels, refusal order, comparison sentences, exports, the
run page's wording, and number formatting."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import numpy as np
import pytest
from django.db import connection

from protocol import statistics
from protocol.numbers import number as significant
from registry.presentation.sentences import ratio_sentences
from registry.presentation.words import percent_change
from registry.selectors.catalogue import CatalogueQuery
from registry.selectors.matrix import catalogue_matrix, log_estimate
from registry.services.catalogue import catalogue_cells_differ
from registry.services.submissions import submission_create, submission_withdraw
from tests.registry.web.conftest import variant

pytestmark = pytest.mark.django_db
# session, user, roles, the data version (2), the cells' GROUP BY, the settings of the runs in cells of more than one
# run (split by configuration), the shown sets' descriptions, the labels; the facets and sets (one GROUPING SETS
# scan on PostgreSQL, one GROUP BY per facet and one for the sets elsewhere)
MATRIX_QUERIES = 3 + 2 + 1 + 1 + 1 + 1 + (1 if connection.vendor == "postgresql" else 13)


@pytest.fixture
def h100s(submitter: Any, server_example: dict[str, Any]) -> list[Any]:
    values = (1260.8, 1250.0, 1301.5, 1188.0)
    return [
        submission_create(document=variant(server_example, f"lab-h100-{i}", v), submitted_by=submitter)[0]
        for i, v in enumerate(values)
    ]


def _cell(matrix: Any, model: str) -> Any:
    row = next(r for r in matrix.rows if r.model == model)
    return next(c for c in row.cells if c is not None)


def test_a_matrix_cell_is_the_geometric_mean_with_the_statistics_t_interval(h100s: list[Any]) -> None:
    cell = _cell(catalogue_matrix(CatalogueQuery()), "H100 80GB HBM3")
    point, low, high = statistics.log_t_interval(np.array([r.headline_value for r in h100s]))
    assert cell.runs == 4 and cell.estimate.runs == 4
    assert math.isclose(cell.estimate.value, float(point), rel_tol=1e-9)
    assert math.isclose(cell.estimate.ci_low, float(low), rel_tol=1e-9)
    assert math.isclose(cell.estimate.ci_high, float(high), rel_tol=1e-9)
    assert cell.steady_state == "yes" and cell.trust == ("declared",)
    assert cell.set.name == "decoder-small · server · bf16 · batch 8"


def test_fewer_than_three_runs_give_no_interval_and_a_withdrawal_leaves_the_cell(
    h100s: list[Any], admin_user: Any
) -> None:
    two = log_estimate(2, math.log(2) + math.log(8), math.log(2) ** 2 + math.log(8) ** 2)
    assert math.isclose(two.value, 4.0) and two.ci_low is None and two.ci_high is None
    assert log_estimate(0, 0.0, 0.0).value is None
    for run in h100s[:2]:
        submission_withdraw(submission=run, reason="bad driver", actor=admin_user)
    assert catalogue_cells_differ() == []  # counts and log sums moved exactly
    cell = _cell(catalogue_matrix(CatalogueQuery()), "H100 80GB HBM3")
    assert cell.runs == 2 and cell.estimate.ci_low is None
    assert math.isclose(cell.estimate.value, math.sqrt(1301.5 * 1188.0), rel_tol=1e-9)
    with_withdrawn = _cell(catalogue_matrix(CatalogueQuery(include_withdrawn=True)), "H100 80GB HBM3")
    assert with_withdrawn.runs == 4


def test_the_matrix_groups_columns_by_phase_and_filters_by_round_division_availability(
    fleet: dict[str, Any],
    submitter: Any,
    server_example: dict[str, Any],
    training_example: dict[str, Any],
    browser_client: Any,
    django_assert_num_queries: Any,
) -> None:
    origin = {"kind": "other", "round": "v5.0", "division": "open", "availability": "preview"}
    submission_create(
        document=variant(server_example, "lab-x", 999.0, **{"provenance.origin": origin}), submitted_by=submitter
    )
    submission_create(document=training_example, submitted_by=submitter)
    matrix = catalogue_matrix(CatalogueQuery())
    assert [phase for phase, _ in matrix.phases] == sorted({c.phase for c in matrix.columns})
    assert {c.phase for c in matrix.columns} == {"inference", "training"}
    for name, value in (("round", "v5.0"), ("division", "open"), ("availability", "preview")):
        only = catalogue_matrix(CatalogueQuery(filters={name: value}))
        assert only.total == 1 and len(only.rows) == 1
    from django.core.cache import cache

    cache.clear()
    with django_assert_num_queries(MATRIX_QUERIES):
        page = browser_client.get("/matrix/?precision=bf16")
    html = page.content.decode()
    assert page.status_code == 200 and "decoder-small" in html and 'href="/?set=sha256%3A' in html
    assert 'name="round"' in html and "MLPerf round" in html


def test_a_refusal_leads_with_the_question_and_hints_only_an_axis_that_accepts(
    fleet: dict[str, Any], browser_client: Any
) -> None:
    page = browser_client.post("/compare/", {"run": [fleet["cpu"].pk, fleet["a"].pk], "axis": "system"})
    assert page.status_code == 422
    errors = page.context["errors"]
    assert errors[0]["root_cause"] and errors[0]["pointer"].startswith(("/phase", "/workload", "/scenario"))
    roots = [e["root_cause"] for e in errors]
    assert roots == sorted(roots, reverse=True)  # every root cause before any other field
    assert page.context["other_axes"] == [] and "Compare along" not in page.content.decode()
    assert "choose “precision”" not in page.content.decode()
    page = browser_client.post("/compare/", {"run": [fleet["a"].pk, fleet["int8"].pk], "axis": "system"})
    # both runs state their measured quality, so equal quality (the iso-quality axis) accepts them as well
    assert page.context["other_axes"] == ["precision", "iso-quality"]
    page = browser_client.post("/compare/", {"run": [fleet["a"].pk, fleet["int8"].pk], "axis": "precision"})
    assert page.status_code == 302


def test_sentences_state_the_change_against_the_baseline_with_its_direction() -> None:
    def result(lower: bool, ratio: float, low: float, high: float, verdict: str) -> dict[str, Any]:
        arms = [
            {"label": "H100", "reasons": [], "estimate": {"metric": "m", "lower_is_better": lower}},
            {"label": "H200", "reasons": [], "estimate": {"metric": "m", "lower_is_better": lower}},
        ]
        metric = "latency_ms.p99" if lower else "throughput"
        return {
            "arms": arms,
            "pairwise": [
                {
                    "subject": 1,
                    "baseline": 0,
                    "metric": metric,
                    "ratio": ratio,
                    "ci_low": low,
                    "ci_high": high,
                    "verdict": verdict,
                }
            ],
        }

    up = ratio_sentences(result(False, 1.21, 1.19, 1.22, "distinguishable"))[0]
    assert up.text.startswith("H200: +21% throughput vs H100 (95% CI +19% to +22%; higher is better) — better")
    assert up.better is True
    faster = ratio_sentences(result(True, 0.85, 0.8, 0.9, "distinguishable"))[0]
    assert faster.change == "−15%" and "p99 latency" in faster.text and "lower is better) — better" in faster.text
    slower = ratio_sentences(result(True, 1.10, 1.05, 1.15, "distinguishable"))[0]
    assert slower.better is False and "— worse than the baseline" in slower.text
    same = ratio_sentences(result(False, 1.01, 0.97, 1.05, "indistinguishable"))[0]
    assert same.better is None and "not distinguishable from noise" in same.text


def test_exports_carry_each_runs_digest_and_address(fleet: dict[str, Any], browser_client: Any) -> None:
    response = browser_client.get("/?precision=bf16&format=csv")
    assert response["Content-Type"].startswith("text/csv") and "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {int(r["run"]) for r in rows} == {fleet[k].pk for k in ("a", "b", "c")}
    for r in rows:
        assert r["digest"].startswith("sha256:") and r["url"] == f"http://testserver/runs/{r['run']}/"
        assert "/?set=sha256" in r["comparable_set_url"]
    document = json.loads(browser_client.get("/matrix/?format=json").content)
    runs = [run for cell in document["cells"] for run in cell["runs"]]
    # the cells as shown: the H100 cell shows the bf16 set (its int8 run is the "+1 set" there)
    assert len(runs) == 4 and all(run["digest"].startswith("sha256:") for run in runs)
    assert fleet["int8"].pk not in {run["run"] for run in runs}
    assert [c["other_sets_in_cell"] for c in document["cells"] if c["configuration"] == "H100 80GB HBM3"] == [1]
    compared = browser_client.post(
        "/compare/", {"run": [fleet["a"].pk, fleet["b"].pk], "axis": "system", "baseline": fleet["b"].pk}
    )
    exported = json.loads(browser_client.get(compared["Location"] + "?format=json").content)
    assert exported["baseline"] == "1× H200" or "H200" in exported["baseline"]
    assert {r["digest"] for r in exported["runs"]} == {fleet["a"].digest, fleet["b"].digest}
    assert exported["sentences"] and " vs " in exported["sentences"][0]


def test_the_run_page_shows_keys_as_written_and_numbers_with_units(fleet: dict[str, Any], browser_client: Any) -> None:
    html = browser_client.get(f"/runs/{fleet['a'].pk}/").content.decode()
    assert "torch.num_threads" in html and "torch.num threads" not in html
    assert "energy.average_power_w" in html and "average power w" not in html
    assert "1,261" in html and "1260.800" not in html
    assert " checked" not in html.split('id="comparable"')[1].split("</section>")[0]
    assert "p99.9" not in html  # no distribution of this run states it


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (43579.602295, "43,580"),
        (1260.8, "1,261"),
        (0.0123456, "0.01235"),
        (8, "8"),
        (2364, "2,364"),
        (486.0, "486"),
        (0.5, "0.5"),
        (0.0, "0"),
    ],
)
def test_numbers_keep_four_significant_digits(value: Any, shown: str) -> None:
    assert significant(value) == shown


def test_percent_changes_are_signed() -> None:
    assert [percent_change(x) for x in (1.21, 0.85, 1.004, 1.0)] == ["+21%", "−15%", "+0.4%", "±0%"]
