"""The catalogue: facets, comparable sets, search, sort — in a pinned number of queries."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest
from django.db import connection

from registry.services.submissions import submission_create
from tests.registry.web.conftest import signed_in, variant

pytestmark = pytest.mark.django_db

# session, user, the user's groups (roles), the data version (2); uncached: 12 facets and the sets (with the total)
# over the catalogue's cells (one GROUPING SETS scan on PostgreSQL, 13 GROUP BYs elsewhere), the page's ids, the
# sets' labels (one read of the cells sharing their base label); then the page's rows. A fixed number, whatever is
# stored (more only where two sets would read the same).
SUMMARY_QUERIES = 1 if connection.vendor == "postgresql" else 13
CATALOGUE_QUERIES = 8 + SUMMARY_QUERIES
CACHED_CATALOGUE_QUERIES = 6
# A search reads the matching runs once for facets, sets and total instead of the cells (the labels of sets the
# previous request named come from the cache).
SEARCH_QUERIES = CATALOGUE_QUERIES - SUMMARY_QUERIES


def test_the_page_says_how_many_runs_answer_the_same_question(browser_client: Any, fleet: dict[str, Any]) -> None:
    html = browser_client.get("/?set=" + fleet["a"].comparability_key).content.decode()
    assert "These 3 runs answer the same question" in html
    assert html.count('name="run"') == 3


def test_malformed_parameters_are_ignored_not_an_error(browser_client: Any, fleet: dict[str, Any]) -> None:
    for query in ("?batch=eight", "?set=nonsense", "?page=-3", "?sort=sideways", "?software=%7Bbroken", "?page=99999"):
        assert browser_client.get("/" + query).status_code == 200, query


def test_the_catalogue_runs_a_fixed_number_of_queries(
    viewer: Any, fleet: dict[str, Any], submitter: Any, server_example: dict[str, Any], django_assert_num_queries: Any
) -> None:
    client = signed_in(viewer)
    with django_assert_num_queries(CATALOGUE_QUERIES):
        assert client.get("/").status_code == 200
    with django_assert_num_queries(CACHED_CATALOGUE_QUERIES):  # same data version: counts come from the cache
        assert client.get("/").status_code == 200
    for i in range(12):  # more runs and more sets than the page lists: still the same number of queries
        submission_create(
            document=variant(server_example, f"lab-extra-{i}", **{"workload.shape.batch_size": 16 + i}),
            submitted_by=submitter,
        )
    # the sizes of this page's sets that are not listed come with the sets: no query more
    with django_assert_num_queries(CATALOGUE_QUERIES):
        page = client.get("/?precision=bf16&sort=headline_asc")
    assert page.status_code == 200 and "decoder-small · server · bf16 · batch 16" in page.content.decode()
    with django_assert_num_queries(SEARCH_QUERIES):
        assert client.get("/?q=decoder&precision=bf16&sort=headline_desc").status_code == 200
    with django_assert_num_queries(CACHED_CATALOGUE_QUERIES):
        assert client.get("/?q=decoder&precision=bf16&sort=headline_desc").status_code == 200


def test_more_sets_than_are_read_cost_two_queries_more(
    viewer: Any,
    fleet: dict[str, Any],
    submitter: Any,
    server_example: dict[str, Any],
    django_assert_num_queries: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from registry.selectors import catalogue
    from registry.selectors.catalogue import counts, postgres

    monkeypatch.setattr(counts, "SETS_LIMIT", 1)
    monkeypatch.setattr(counts, "SET_SCAN_LIMIT", 2)
    # the limit belongs to the one-GROUP-BY-per-facet reading (PostgreSQL's single scan reads every set)
    monkeypatch.setattr(postgres, "summary_from_cells", counts.summary_from_cells)
    client = signed_in(viewer)
    with django_assert_num_queries(CATALOGUE_QUERIES - SUMMARY_QUERIES + 13 + 2):  # the total and the number of
        # sets; unlisted sizes
        html = client.get("/").content.decode()
    assert "<strong>5</strong> runs match" in html
    page = catalogue.catalogue_search(catalogue.CatalogueQuery())
    assert (page.total, page.set_total, len(page.sets)) == (5, 3, 1)
    assert sorted(row.set_size for row in page.rows) == [1, 1, 3, 3, 3]


def test_a_new_run_changes_the_data_version_so_counts_are_never_stale(
    browser_client: Any, fleet: dict[str, Any], submitter: Any, server_example: dict[str, Any]
) -> None:
    assert "<strong>5</strong> runs match" in browser_client.get("/").content.decode()
    submission_create(document=variant(server_example, "lab-late-arrival", 999.0), submitted_by=submitter)
    assert "<strong>6</strong> runs match" in browser_client.get("/").content.decode()


def test_a_withdrawal_changes_the_data_version_too(browser_client: Any, fleet: dict[str, Any], admin_user: Any) -> None:
    from registry.services.submissions import submission_withdraw

    assert "<strong>5</strong> runs match" in browser_client.get("/").content.decode()
    submission_withdraw(submission=fleet["c"], reason="bad", actor=admin_user)
    assert "<strong>4</strong> runs match" in browser_client.get("/").content.decode()


def test_set_names_never_repeat_a_word_of_their_quantization(
    browser_client: Any, submitter: Any, server_example: dict[str, Any]
) -> None:
    """MLPerf's weight_transformations is often the word "quantization" itself: a set that differs from another by
    its quantization method is named "… · quantization", not "… · quantization quantization"."""
    methods = {"quantization": "lab-fp8-01", "smoothquant": "lab-fp8-02"}
    for method, system in methods.items():
        doc = variant(server_example, system, 1500.0, **{"precision.weights": "fp8"})
        doc["precision"]["quantization"] = {"method": method, "notes": "measurements.json weight_data_types 'fp8'"}
        submission_create(document=doc, submitted_by=submitter)
    html = browser_client.get("/").content.decode()
    names = [re.sub(r"\s+", " ", n).strip() for n in re.findall(r'class="set-name"><a [^>]*>(.*?)</a>', html, re.S)]
    assert len(names) == 2, names
    assert {n.rsplit(" · ", 1)[-1] for n in names} == {"quantization", "smoothquant quantization"}, names
    for name in names:
        words = re.findall(r"[\w-]+", name)
        assert not any(a == b for a, b in pairwise(words)), name  # no word said twice in a row
