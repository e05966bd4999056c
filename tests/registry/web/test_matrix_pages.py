"""The overview matrix a page of columns at a time: a whole round's dozens of workload × scenario columns never sit
side by side on one page, every column is on exactly one page, and the page says which columns it shows and that
the others are elsewhere; the export still writes the whole matrix."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devtools.documents import variant
from registry.selectors.catalogue import CatalogueQuery
from registry.selectors.matrix import COLUMNS_PER_PAGE, catalogue_matrix
from registry.services.submissions import submission_create

pytestmark = pytest.mark.django_db
WORKLOADS = [f"model-{i:02d}" for i in range(2 * COLUMNS_PER_PAGE + 2)]  # three pages, the last of two columns


@pytest.fixture
def many_columns(submitter: Any, server_example: dict[str, Any]) -> list[Any]:
    """One run per workload, on one system but for the last workload, which runs on a second accelerator."""
    runs = []
    for i, name in enumerate(WORKLOADS):
        doc = variant(server_example, f"lab-{i}", 1000.0 + i, **{"workload.name": name})
        if name == WORKLOADS[-1]:
            doc["system"]["accelerators"][0]["model"] = "H200 141GB HBM3e"
        runs.append(submission_create(document=doc, submitted_by=submitter)[0])
    return runs


def test_the_matrix_shows_its_columns_a_page_at_a_time_and_every_column_on_exactly_one_page(
    many_columns: list[Any],
) -> None:
    pages = [catalogue_matrix(CatalogueQuery(), column_page=n) for n in (1, 2, 3)]
    shown = [c.workload for m in pages for c in m.columns]
    assert shown == sorted(WORKLOADS)  # each once, in workload order
    assert [len(m.columns) for m in pages] == [COLUMNS_PER_PAGE, COLUMNS_PER_PAGE, 2]
    first = pages[0]
    assert [(p.start, p.end) for p in first.column_pages] == [(1, 5), (6, 10), (11, 12)]
    assert first.column_pages[1].first == "model-05 server" and first.column_pages[1].last == "model-09 server"
    assert first.columns_elsewhere == len(WORKLOADS) - COLUMNS_PER_PAGE
    # rows are the configurations with runs in the page's columns: the H200 only on the last page
    assert [r.model for r in pages[0].rows] == ["H100 80GB HBM3"] and pages[0].rows_in_page == 1
    assert {r.model for r in pages[2].rows} == {"H100 80GB HBM3", "H200 141GB HBM3e"}
    # past the last page: the last page
    assert catalogue_matrix(CatalogueQuery(), column_page=99).column_page == 3


def test_the_matrix_page_names_what_it_shows_and_links_every_page_and_the_export_stays_whole(
    many_columns: list[Any], browser_client: Any
) -> None:
    html = browser_client.get("/matrix/?cols=2").content.decode()
    assert "Columns <strong>6–10</strong> of 12" in html and "the other\n        7 are on the other pages" in html
    assert 'href="?cols=1"' in html and 'href="?cols=3"' in html and 'aria-current="page"' in html
    assert "← Columns 1–5" in html and "Columns 11–12" in html
    table = html.split('class="table table--matrix"')[1].split("</table>")[0]
    assert "model-05" in table and "model-00" not in table  # page 1's columns are not in the table
    bad = browser_client.get("/matrix/?cols=abc")
    assert bad.status_code == 200 and "Columns <strong>1–5</strong>" in bad.content.decode()
    whole = json.loads(browser_client.get("/matrix/?cols=2&format=json").content)
    assert {c["workload"] for c in whole["cells"]} == set(WORKLOADS)
