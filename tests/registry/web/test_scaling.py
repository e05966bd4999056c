"""A scaling plan's page: runs of one configuration at 1, 2, 4 devices, built from a real 2-rank run
(tests/protocol/data/distributed_training_ddp_2.json) whose step times are stretched by a known law, stored through
the submission API; the page's efficiency and interval are protocol.scaling's, the chart has its ideal line, and a
run's page links to its plan."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.contrib.auth import get_user_model

import protocol
from devtools.documents import SCALING_RUN as RUN
from devtools.documents import scaling_plan_documents as plan_documents
from devtools.documents import scaling_stretch as stretch
from protocol import scaling
from protocol.numbers import Style, number
from registry.presentation.charts_scaling import scaling_chart
from tests.registry.web.conftest import signed_in
from tests.registry.web.conftest import store_through_api as _store

pytestmark = pytest.mark.django_db


def _user() -> Any:
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user("scaler", password="x")
    user.groups.add(Group.objects.get_or_create(name="submitter")[0])
    return user


def test_the_documents_of_the_law_are_valid_and_their_efficiency_is_the_laws() -> None:
    docs = plan_documents("law", [1, 2, 4])
    assert all(protocol.errors(d) == [] for d in docs)
    (plan,) = scaling.points(docs)
    for row in scaling.efficiency(plan)[1:]:
        assert row.efficiency == pytest.approx(1 / stretch(row.devices), rel=1e-9)
        assert row.low is not None and row.high is not None and row.low <= row.efficiency <= row.high


def test_the_plan_page_shows_each_size_with_protocol_scalings_figures_and_the_chart() -> None:
    user = _user()
    docs = plan_documents("weak-1-2-4", [1, 2, 4])
    ids = _store(user, docs)
    response = signed_in(user, SERVER_NAME="localhost").get("/scaling/weak-1-2-4/")
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    (plan,) = scaling.points(docs)
    for row in scaling.efficiency(plan)[1:]:
        assert row.low is not None and row.high is not None
        ci = f"95% CI {number(row.low, Style.RATIO)}–{number(row.high, Style.RATIO)}"
        assert f"{number(row.efficiency, Style.RATIO)}</td>" in page and ci in page
    assert number(1 / stretch(4), Style.RATIO) == "0.833" and "0.833</td>" in page
    assert "the reference: 1 by definition" in page and "weak scaling" in page
    assert "rank 3 (2 of 2 runs)" in page and "rank 1 (2 of 2 runs)" in page
    assert "<svg" in page and "ideal: n × 1 device" in page and "holds the true efficiency" in page
    assert all(f'href="/runs/{i}/"' in page for i in ids)
    run_page = signed_in(user, SERVER_NAME="localhost").get(f"/runs/{ids[-1]}/").content.decode()
    assert 'href="/scaling/weak-1-2-4/"' in run_page and "4-device size of weak scaling plan" in run_page


def test_one_size_measured_is_a_gap_in_words_not_a_curve() -> None:
    user = _user()
    _store(user, plan_documents("only-one", [1, 2, 4], repeats=1)[:1])
    page = html.unescape(signed_in(user, SERVER_NAME="localhost").get("/scaling/only-one/").content.decode())
    assert "Only 1 device(s) measured: no curve" in page and "Planned but not stored: 2, 4 device(s)" in page


def test_a_plan_without_its_1_device_runs_has_no_efficiency_and_says_why() -> None:
    user = _user()
    _store(user, plan_documents("no-reference", [1, 2, 4])[1:3])
    response = signed_in(user, SERVER_NAME="localhost").get("/scaling/no-reference/")
    page = html.unescape(response.content.decode())
    assert response.status_code == 200 and "has no 1-device runs to scale from" in page
    assert "<svg" in page and "ideal" not in page.split("<svg", 1)[1].split("</svg>", 1)[0]


def test_runs_of_one_id_that_disagree_on_the_mode_are_refused_in_words() -> None:
    user = _user()
    docs = plan_documents("mixed", [1, 2], repeats=1)
    docs[1]["scenario"]["distributed"]["scaling"]["mode"] = "strong"
    _store(user, docs)
    response = signed_in(user, SERVER_NAME="localhost").get("/scaling/mixed/")
    page = html.unescape(response.content.decode())
    assert response.status_code == 200 and "do not form one plan" in page and "is weak scaling, not strong" in page


def test_runs_of_another_workload_that_name_the_plan_are_refused_in_words() -> None:
    user = _user()
    docs = plan_documents("shared-name", [1, 2], repeats=1)
    docs[1]["workload"]["version"] = "2.0"
    _store(user, docs)
    page = html.unescape(signed_in(user, SERVER_NAME="localhost").get("/scaling/shared-name/").content.decode())
    assert "do not form one plan: they measured mlp-tiny 1.0, ddp, fp32; mlp-tiny 2.0, ddp, fp32" in page


def test_an_unknown_or_overlong_plan_is_404_and_other_runs_are_not_gathered() -> None:
    user = _user()
    _store(user, [RUN])
    web = signed_in(user, SERVER_NAME="localhost")
    assert web.get("/scaling/nowhere/").status_code == 404
    assert web.get("/scaling/" + "x" * 101 + "/").status_code == 404


def test_the_chart_draws_the_ideal_line_from_the_1_device_mean() -> None:
    (plan,) = scaling.points(plan_documents("chart", [1, 2, 4, 8], repeats=1))
    svg = scaling_chart(plan, scaling.efficiency(plan))
    assert svg is not None and svg.startswith("<svg") and "ideal: n × 1 device" in svg and "ideal: 1" in svg
    assert scaling_chart(plan, scaling.efficiency(plan)) == svg  # deterministic


def test_an_id_with_a_slash_is_reached_from_the_run_page_and_a_withdrawn_size_leaves_the_plan() -> None:
    from registry.models import Submission
    from registry.services.submissions import submission_withdraw

    user = _user()
    ids = _store(user, plan_documents("lab/weak 1", [1, 2], repeats=1))
    web = signed_in(user, SERVER_NAME="localhost")
    link = 'href="/scaling/lab/weak%201/"'
    assert link in web.get(f"/runs/{ids[0]}/").content.decode()
    assert "0.909" in web.get("/scaling/lab/weak%201/").content.decode()
    submission_withdraw(submission=Submission.objects.get(pk=ids[1]), reason="bad cable", actor=user)
    page = html.unescape(web.get("/scaling/lab/weak%201/").content.decode())
    assert "Planned but not stored: 2 device(s)" in page and f'href="/runs/{ids[1]}/"' not in page


@pytest.mark.postgres
def test_postgresql_finds_a_plans_runs_on_the_scaling_index() -> None:
    """With sequential scans priced out (the table is tiny here), the selector's query is planned on the expression
    index of migration 0028: the SQL Django writes for the JSON filter is the indexed expression."""
    from django.db import connection

    from registry.selectors.scaling import MAX_RUNS, scaling_query

    query = scaling_query(scaling_id="p")[:MAX_RUNS]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        sql, params = query.query.sql_with_params()
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("SET LOCAL enable_seqscan = on")
    assert "registry_sub_scaling_plan" in plan, plan
