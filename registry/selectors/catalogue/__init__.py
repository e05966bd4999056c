"""The procurement catalogue: faceted search over runs, grouped by comparability (the run page: run_page.py).

Where the numbers come from. Facet counts, totals and comparable-set sizes are read from CatalogueCell, a summary
table with one row per combination of the catalogue's facet values (registry.models.catalogue), kept exact in the
same transaction as every new run and withdrawal (registry.services.catalogue). A GROUP BY over cells reads one
row per combination actually stored, not one per run, and never a run's document, so the first request after a
change is as cheap as any. Each facet counts with every filter but its own (disjunctive faceting), so a chosen
value still shows its alternatives. Comparable sets are GROUP BY comparability_key over the same cells; a set's
best headline comes from the cells' headline ranges. The software facet groups on Submission.software_summary
(the frameworks map as one string), a column like the others.

Free text is the exception: the searched columns (system, submitter) are not in cells. A search reads the matching
runs once. On PostgreSQL it matches one generated column (the searched columns' UPPER joined by newlines, with a
trigram index; migration 0016), groups the matching runs by their cell's shape (another generated column: one
uuid per combination of cell columns), joins each group to its cell and counts every facet (each with a FILTER of
the other filters) and the comparable sets in one GROUPING SETS statement over those groups
(`postgres.summary_from_runs`). Elsewhere the runs are grouped by the cell columns and counted in Python
(`counts.summary_from_runs`); tests check the two agree. A search matching all of 100k runs: ~185 ms cold on
PostgreSQL (bench/pages.py); ~230 ms with the grouping sets over every run, ~390 ms counted in Python.

Query budget (pinned in tests/registry/web): two primary-key lookups for the data version; then, unless cached
for that version, one GROUP BY over cells per facet and one for the sets (with their sizes, details and the
total), or one grouped read of the matching runs for a search; one page of ids; the page's rows. One more when
more than SET_SCAN_LIMIT sets match (the total and the number of sets) and one more for the sizes of the page's
sets in that case. The results are still cached under the data version (`data_version`): exact, and reused until
the next run or withdrawal, so an unchanged registry answers from the cache.

One module per concern: `query` (what is asked and returned, the matching runs and cells, the data version),
`counts` (counted portably), `postgres` (the same counts in one GROUPING SETS statement), `search` (the cached
reads the pages call) and `labels` (sets named in words for readers).
"""

from .counts import as_set
from .labels import RIVALS_READ, ROOT_CAUSE_PREFIXES, root_cause_order, set_labels
from .query import (
    CACHE_SECONDS,
    FACETS,
    GROUP_COLUMNS,
    MAX_TERMS,
    PAGE_SIZE,
    SEARCH_COLUMNS,
    SET_FIELDS,
    SORTS,
    CataloguePage,
    CatalogueQuery,
    ComparableSet,
    Facet,
    FacetValue,
    RunRow,
    UncountedRunsError,
    cache_key_for,
    data_version,
    matching_cells,
    matching_runs,
)
from .search import catalogue_facets, catalogue_search, catalogue_summary

__all__ = [
    "CACHE_SECONDS",
    "FACETS",
    "GROUP_COLUMNS",
    "MAX_TERMS",
    "PAGE_SIZE",
    "RIVALS_READ",
    "ROOT_CAUSE_PREFIXES",
    "SEARCH_COLUMNS",
    "SET_FIELDS",
    "SORTS",
    "CataloguePage",
    "CatalogueQuery",
    "ComparableSet",
    "Facet",
    "FacetValue",
    "RunRow",
    "UncountedRunsError",
    "as_set",
    "cache_key_for",
    "catalogue_facets",
    "catalogue_search",
    "catalogue_summary",
    "data_version",
    "matching_cells",
    "matching_runs",
    "root_cause_order",
    "set_labels",
]
