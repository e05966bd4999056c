"""The catalogue's reads: facets counted with the other filters, comparable sets, free-text search, sort, set
labels, and the PostgreSQL single-scan counts agreeing exactly with the portable ones."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from devtools.documents import variant
from registry.models import Submission
from registry.selectors.catalogue import (
    CatalogueQuery,
    catalogue_facets,
    catalogue_search,
    counts,
    matching_runs,
    postgres,
    set_labels,
)
from registry.services.submissions import submission_create, submission_withdraw

pytestmark = pytest.mark.django_db


def test_runs_that_answer_the_same_question_are_grouped(fleet: dict[str, Any]) -> None:
    page = catalogue_search(CatalogueQuery())
    assert page.total == 5 and page.set_total == 3
    largest = page.sets[0]
    assert largest.count == 3 and largest.key == fleet["a"].comparability_key
    assert largest.question == "decoder-small 1.0 · inference · server · bf16 · batch 8"
    assert largest.best == 1500.0 and not largest.lower_is_better
    assert {row.set_size for row in page.rows if row.run.comparability_key == largest.key} == {3}


def test_facets_count_every_value_with_the_other_filters_applied(fleet: dict[str, Any]) -> None:
    page = catalogue_search(CatalogueQuery(filters={"precision": "int8", "scenario": "server"}))
    assert page.total == 1
    facets = {f.name: {v.value: v.count for v in f.values} for f in page.facets}
    assert facets["precision"] == {"int8": 1, "bf16": 3}  # its own filter left out: alternatives stay visible
    assert facets["scenario"] == {"server": 1, "offline": 1}
    assert facets["vendor"] == {"NVIDIA": 1}


def test_the_software_facet_lists_framework_versions_and_filters_by_them(
    submitter: Any, server_example: dict[str, Any]
) -> None:
    submission_create(document=server_example, submitted_by=submitter)
    newer = variant(server_example, "lab-h100-02", **{"software.frameworks": {"torch": "2.14.0"}})
    submission_create(document=newer, submitted_by=submitter)
    page = catalogue_search(CatalogueQuery())
    software = next(f for f in page.facets if f.name == "software")
    assert {v.label: v.count for v in software.values} == {"torch 2.13.0": 1, "torch 2.14.0": 1}
    value = next(v.value for v in software.values if v.label == "torch 2.14.0")
    assert value == "torch 2.14.0"
    filtered = catalogue_search(CatalogueQuery(filters={"software": value}))
    assert [r.run.system_name for r in filtered.rows] == ["lab-h100-02"]
    # Links made when the value was the frameworks object as JSON still find the same runs.
    legacy = catalogue_search(CatalogueQuery(filters={"software": json.dumps({"torch": "2.14.0"})}))
    assert [r.run.system_name for r in legacy.rows] == ["lab-h100-02"]


def test_the_software_facet_is_counted_whatever_the_number_of_runs(
    submitter: Any, server_example: dict[str, Any]
) -> None:
    frameworks = {"vllm": "0.9.0", "pytorch": "2.7.0"}
    for i in range(3):
        submission_create(
            document=variant(server_example, f"lab-{i}", **{"software.frameworks": frameworks}), submitted_by=submitter
        )
    submission_create(
        document=variant(server_example, "lab-bare", **{"software.frameworks": {}}), submitted_by=submitter
    )
    for query in (CatalogueQuery(), CatalogueQuery(q="lab")):  # from the cells, and from a search
        software = next(f for f in catalogue_search(query).facets if f.name == "software")
        assert [(v.value, v.label, v.count) for v in software.values] == [
            ("pytorch 2.7.0, vllm 0.9.0", "pytorch 2.7.0, vllm 0.9.0", 3),
            ("", "not stated", 1),
        ]


def test_a_search_counts_facets_and_sets_like_the_cells_do(fleet: dict[str, Any], admin_user: Any) -> None:
    from registry.services.submissions import submission_withdraw

    submission_withdraw(submission=fleet["b"], reason="bad", actor=admin_user)
    for filters, include in (
        ({}, False),
        ({"precision": "bf16", "vendor": "NVIDIA"}, False),
        ({}, True),
        ({"batch": "8", "scenario": "server"}, True),
    ):
        from_cells = catalogue_search(CatalogueQuery(filters=filters, include_withdrawn=include))
        # "lab" is in every run's system name: the same runs, counted from a read of the runs instead.
        searched = catalogue_search(CatalogueQuery(filters=filters, include_withdrawn=include, q="lab"))
        assert (searched.total, searched.set_total) == (from_cells.total, from_cells.set_total), filters
        assert searched.facets == from_cells.facets, filters
        assert searched.sets == from_cells.sets, filters


def test_a_sets_best_value_follows_withdrawals(fleet: dict[str, Any], admin_user: Any) -> None:
    from registry.services.submissions import submission_withdraw

    key = fleet["a"].comparability_key
    assert catalogue_search(CatalogueQuery(set_key=key)).selected_set.best == 1500.0
    submission_withdraw(submission=fleet["b"], reason="bad", actor=admin_user)  # the 1500.0 run
    shown = catalogue_search(CatalogueQuery(set_key=key)).selected_set
    assert (shown.count, shown.best) == (2, 1400.0)
    with_withdrawn = catalogue_search(CatalogueQuery(set_key=key, include_withdrawn=True)).selected_set
    assert (with_withdrawn.count, with_withdrawn.best) == (3, 1500.0)


def test_free_text_search_needs_every_word_in_some_searched_column(fleet: dict[str, Any]) -> None:
    assert {r.run.system_name for r in catalogue_search(CatalogueQuery(q="h200")).rows} == {"lab-h200-02"}
    assert catalogue_search(CatalogueQuery(q="decoder lab-7")).total == 4
    assert catalogue_search(CatalogueQuery(q="decoder nothing-like-this")).total == 0


def test_runs_sort_by_the_headline_metric(fleet: dict[str, Any]) -> None:
    key = fleet["a"].comparability_key
    best_first = catalogue_search(CatalogueQuery(set_key=key, sort="headline_desc")).rows
    assert [r.run.headline_value for r in best_first] == [1500.0, 1400.0, 1260.8]
    worst_first = catalogue_search(CatalogueQuery(set_key=key, sort="headline_asc")).rows
    assert [r.run.headline_value for r in worst_first] == [1260.8, 1400.0, 1500.0]


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("filters", "q", "include"),
    [
        ({}, "lab", False),
        ({"precision": "bf16"}, "lab", True),
        ({"batch": "many"}, "lab", False),
        ({"vendor": "NVIDIA", "scenario": "server"}, "h100", False),
        ({}, "no-such-thing", False),
    ],
)
def test_the_single_scan_search_summary_equals_the_grouped_python_one(
    fleet: dict[str, Any], filters: dict, q: str, include: bool
) -> None:
    """PostgreSQL counts a search's facets and sets in one GROUPING SETS scan; it must agree exactly."""
    query = CatalogueQuery(filters=filters, q=q, include_withdrawn=include)
    assert postgres.summary_from_runs(query) == counts.summary_from_runs(query)


@pytest.mark.postgres
def test_every_run_joins_the_one_cell_that_counts_it_by_shape(
    fleet: dict[str, Any], submitter: Any, admin_user: Any, server_example: dict
) -> None:
    """The search groups runs by the generated cell_shape and reads facet values from the cell of that shape
    (migration 0016): every run must find exactly the cell services.catalogue counts it in, whatever its steady
    state, withdrawal, unit or accelerator count."""
    from registry.models import CatalogueCell, Submission
    from registry.services.catalogue import catalogue_cell_key
    from registry.services.submissions import submission_withdraw

    for name, reached in (("lab-ss-false", False), ("lab-ss-absent", None)):
        doc = variant(server_example, name, 1234.0)
        doc["system"]["accelerators"][0]["count"] = 4
        doc["conditions"]["steady_state"].update(reached=reached, reasons=["throughput still drifting"])
        if reached is None:
            doc["conditions"]["steady_state"]["method"] = "not-assessed"
        submission_create(document=doc, submitted_by=submitter)
    submission_withdraw(submission=fleet["b"], reason="bad", actor=admin_user)
    runs = list(Submission.objects.select_related("withdrawal").all())
    assert {catalogue_cell_key(r, withdrawn=False)["steady_state"] for r in runs} >= {"yes", "no", ""}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.id, c.id FROM registry_submission s JOIN registry_cataloguecell c "
            "ON c.cell_shape = s.cell_shape AND c.withdrawn = EXISTS "
            "(SELECT 1 FROM registry_withdrawal w WHERE w.submission_id = s.id)"
        )
        joined = dict(cursor.fetchall())
    assert sorted(joined) == sorted(r.id for r in runs)  # each run once: one cell per shape and withdrawal
    cells = CatalogueCell.objects.in_bulk(list(joined.values()))
    for run in runs:
        key = catalogue_cell_key(run, withdrawn=hasattr(run, "withdrawal"))
        assert {k: getattr(cells[joined[run.id]], k) for k in key} == key, run.system_name


@pytest.mark.postgres
def test_a_search_over_runs_no_cell_counts_is_still_exact(fleet: dict[str, Any], caplog: Any) -> None:
    """Runs stored around the services (no cell counts them yet) are counted from the runs, and the log says to
    rebuild the summary table."""
    from registry.models import CatalogueCell

    expected = counts.summary_from_runs(CatalogueQuery(q="lab"))
    CatalogueCell.objects.filter(accelerator_model="H200").delete()
    assert postgres.summary_from_runs(CatalogueQuery(q="lab")) == expected
    assert "benchreg rebuild-catalogue" in caplog.text


@pytest.mark.parametrize(
    ("q", "total"), [("LAB-H200", 1), ("smalllab", 0), ("decoder-small%", 0), ("_ab", 0), ("a%b", 0)]
)
def test_a_term_matches_within_one_column_literally(fleet: dict[str, Any], q: str, total: int) -> None:
    """Case-insensitive; never across two columns (PostgreSQL searches them joined in one text); % and _ are
    characters, not wildcards."""
    assert catalogue_search(CatalogueQuery(q=q)).total == total


def test_sets_that_would_read_the_same_are_named_by_what_separates_them(
    fleet: dict[str, Any], submitter: Any, server_example: dict[str, Any]
) -> None:
    unsteady = variant(server_example, "lab-u", 1900.0)
    unsteady["conditions"]["steady_state"].update(reached=False, reasons=["rising"])
    run, _ = submission_create(document=unsteady, submitted_by=submitter)
    labels = {s.key: s.name for s in catalogue_search(CatalogueQuery()).sets}
    assert labels[run.comparability_key].endswith("steady state not reached")
    assert labels[fleet["a"].comparability_key].endswith("steady state reached")
    # The same name whatever the filters, and the same from the matrix.
    filtered = catalogue_search(CatalogueQuery(filters={"accelerator": "H200"})).sets
    assert [s.name for s in filtered] == [labels[fleet["a"].comparability_key]]
    assert len(set(labels.values())) == len(labels)
    assert set_labels(filtered) == {fleet["a"].comparability_key: labels[fleet["a"].comparability_key]}


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("filters", "include"),
    [
        ({}, False),
        ({"precision": "bf16"}, True),
        ({"batch": "many"}, False),
        ({"vendor": "NVIDIA", "scenario": "server"}, False),
        ({"trust": "declared", "division": ""}, False),
    ],
)
def test_the_single_scan_cell_summary_equals_the_per_facet_one(
    fleet: dict[str, Any], admin_user: Any, filters: dict, include: bool
) -> None:
    """On PostgreSQL the catalogue counts its facets and sets over the cells in one GROUPING SETS scan; it must
    agree exactly with the one GROUP BY per facet that other databases run."""
    submission_withdraw(submission=fleet["c"], reason="driver", actor=admin_user)
    query = CatalogueQuery(filters=filters, include_withdrawn=include)
    assert postgres.summary_from_cells(query) == counts.summary_from_cells(query)
    # the matrix's sidebar: the facet-only scan (cold) counts exactly as the whole summary does
    from django.core.cache import cache

    cache.clear()
    assert catalogue_facets(query) == counts.summary_from_cells(query)["facets"]


@pytest.mark.postgres
@pytest.mark.django_db
def test_search_uses_the_trigram_index_on_postgres(user, server_example):
    """One trigram index on the generated search_text (migration 0016); the terms are folded to constants at
    planning (UPPER and Django's LIKE escaping are immutable), so the index serves them."""
    submission_create(document=server_example, submitted_by=user)
    with connection.cursor() as cursor:
        # A tiny table: left alone, the planner reads it whole, which says nothing about the indexes.
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off")
    plan = matching_runs(CatalogueQuery(q="H100 lab")).order_by().explain()
    assert "Bitmap Index Scan on registry_sub_search_trgm" in plan and "'%LAB%'" in plan, plan
    assert [r.pk for r in matching_runs(CatalogueQuery(q="h100 LAB"))] == [Submission.objects.get().pk]
