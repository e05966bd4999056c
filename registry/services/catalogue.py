"""The catalogue's summary table (CatalogueCell): kept exact as runs arrive and are withdrawn, rebuilt on demand.

The caller is registry.services.reactions, for the services that store runs and withdrawals, inside their own
transaction. Concurrent writers are not serialised by anything else on PostgreSQL, so there the increments are one
race-safe INSERT ... ON CONFLICT DO UPDATE for all the cells a change touches, taken in one fixed order so two
batches cannot deadlock on them. On SQLite, whose write transactions run one at a time, an UPDATE or an INSERT.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.db import connection, transaction
from django.db.models import Case, Count, Exists, F, Max, Min, OuterRef, Q, QuerySet, Sum, Value, When
from django.db.models.functions import Coalesce, Greatest, Least, Ln

from registry.models import CatalogueCell, Submission, Withdrawal
from registry.models.catalogue import CELL_KEY

logger = logging.getLogger(__name__)


def steady_state_word(document: dict[str, Any]) -> str:
    """conditions.steady_state.reached as a cell stores it: "yes", "no" or "" (not stated)."""
    reached = ((document.get("conditions") or {}).get("steady_state") or {}).get("reached")
    return "yes" if reached is True else "no" if reached is False else ""


def catalogue_cell_key(run: Submission, *, withdrawn: bool) -> dict[str, Any]:
    key = {name: getattr(run, name) for name in CELL_KEY if name not in ("withdrawn", "steady_state")}
    key["headline_unit"] = key["headline_unit"] or ""
    return {**key, "steady_state": steady_state_word(run.document), "withdrawn": withdrawn}


def _shrink(value: float | None) -> dict[str, Any]:
    """The UPDATE that counts one run of headline `value` fewer: counts and log sums only (the bounds are re-read
    by `_remove`)."""
    changes: dict[str, Any] = {"runs": F("runs") - 1}
    if value is not None and value > 0:
        log = math.log(value)
        changes.update(valued=F("valued") - 1, log_sum=F("log_sum") - log, log_sq_sum=F("log_sq_sum") - log * log)
    return changes


def _sums(values: list[float | None]) -> tuple[float | None, float | None, int, float, float]:
    """What runs of headlines `values` add to a cell: (low, high, valued, log_sum, log_sq_sum)."""
    known = [v for v in values if v is not None]
    logs = [math.log(v) for v in known if v > 0]
    low, high = (min(known), max(known)) if known else (None, None)
    return low, high, len(logs), sum(logs), sum(x * x for x in logs)


def _add_cells(cells: list[tuple[dict[str, Any], list[float | None]]]) -> None:
    """Count runs in their cells (key, headline values), in the order given: on PostgreSQL one INSERT ... ON
    CONFLICT DO UPDATE for all of them (rows are locked in VALUES order), elsewhere `_add` cell by cell."""
    if not cells:
        return
    if connection.vendor != "postgresql":
        for key, values in cells:
            _add(key, values)
        return
    rows, params = [], []
    for key, values in cells:
        rows.append("(" + ", ".join(["%s"] * (len(CELL_KEY) + 6)) + ")")
        params += [key[name] for name in CELL_KEY]
        params += [len(values), *_sums(values)]
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT_CELLS.format(rows=", ".join(rows)), params)


# The counts' upsert: what `_add`'s UPDATE-or-INSERT does, in one statement for many cells. LEAST and GREATEST skip
# NULLs, as `_add`'s Coalesce does; the sums are added in the same order, so the floats are the same.
_UPSERT_CELLS = f"""
INSERT INTO registry_cataloguecell ({", ".join(CELL_KEY)}, runs, headline_low, headline_high, valued, log_sum,
                                    log_sq_sum)
VALUES {{rows}}
ON CONFLICT ON CONSTRAINT catalogue_cell_key DO UPDATE SET
    runs = registry_cataloguecell.runs + EXCLUDED.runs,
    headline_low = LEAST(registry_cataloguecell.headline_low, EXCLUDED.headline_low),
    headline_high = GREATEST(registry_cataloguecell.headline_high, EXCLUDED.headline_high),
    valued = registry_cataloguecell.valued + EXCLUDED.valued,
    log_sum = registry_cataloguecell.log_sum + EXCLUDED.log_sum,
    log_sq_sum = registry_cataloguecell.log_sq_sum + EXCLUDED.log_sq_sum
"""  # noqa: S608 (CELL_KEY is a constant; the values are parameters)


def _add(key: dict[str, Any], values: list[float | None]) -> None:
    """Count runs of headlines `values` in one cell: one UPDATE (NULL bounds taken as unset), or the INSERT of a new
    cell. Not race-safe on its own: for SQLite, whose write transactions (IMMEDIATE) run one at a time."""
    low, high, valued, log_sum, log_sq_sum = _sums(values)
    changes = _increments(len(values), low, high, valued, log_sum, log_sq_sum)
    if not CatalogueCell.objects.filter(**key).update(**changes):
        CatalogueCell.objects.create(
            **key,
            runs=len(values),
            headline_low=low,
            headline_high=high,
            valued=valued,
            log_sum=log_sum,
            log_sq_sum=log_sq_sum,
        )


def _increments(
    runs: int, low: float | None, high: float | None, valued: int, log_sum: float, log_sq_sum: float
) -> dict[str, Any]:
    """The UPDATE that counts runs of these sums into an existing cell (NULL bounds taken as unset)."""
    changes: dict[str, Any] = {
        "runs": F("runs") + runs,
        "valued": F("valued") + valued,
        "log_sum": F("log_sum") + log_sum,
        "log_sq_sum": F("log_sq_sum") + log_sq_sum,
    }
    if low is not None:
        changes["headline_low"] = Least(Coalesce("headline_low", Value(low)), Value(low))
        changes["headline_high"] = Greatest(Coalesce("headline_high", Value(high)), Value(high))
    return changes


def _remove(key: dict[str, Any], value: float | None) -> None:
    """Count one run fewer; the cell goes at zero, and its headline range is re-read if the run was at an end."""
    cells = CatalogueCell.objects.filter(**key)
    if not cells.update(**_shrink(value)):  # locks the cell for the rest of the transaction
        # The index missed this run (rows inserted around the services): the withdrawal, which is evidence, goes on.
        logger.error("no catalogue cell counts this run (%s): run `benchreg rebuild-catalogue`", key)
        return
    cells.filter(runs=0).delete()
    bounds = cells.values("headline_low", "headline_high").first()
    if value is not None and bounds is not None and value in bounds.values():
        runs = _runs(withdrawn=key["withdrawn"]).filter(**_as_run_filter(key))
        cells.update(**runs.aggregate(headline_low=Min("headline_value"), headline_high=Max("headline_value")))


def _headline(run: Submission) -> float | None:
    # A new run holds the document's number as given (an int for "value": 2560): a float, like the column.
    return None if run.headline_value is None else float(run.headline_value)


def catalogue_run_added(*, run: Submission) -> None:
    """Count a newly stored run. Call inside the transaction that stores it."""
    catalogue_runs_added(runs=[run])


def catalogue_runs_added(*, runs: list[Submission]) -> None:
    """Count newly stored runs in the cells they fall in, taken in a fixed order (cells locked in the same order
    by concurrent batches cannot deadlock): one statement on PostgreSQL (`_add_cells`), one UPDATE or INSERT per
    cell elsewhere. Call inside the transaction that stores them."""
    cells: dict[tuple[Any, ...], tuple[dict[str, Any], list[float | None]]] = {}
    for run in runs:
        key = catalogue_cell_key(run, withdrawn=False)
        cells.setdefault(tuple(key[name] for name in CELL_KEY), (key, []))[1].append(_headline(run))
    ordered = sorted(cells, key=lambda t: tuple("" if v is None else str(v) for v in t))
    _add_cells([cells[key] for key in ordered])


def catalogue_run_withdrawn(*, run: Submission) -> None:
    """Move a run to the withdrawn cells. Call inside the transaction that stores its withdrawal, after it."""
    _remove(catalogue_cell_key(run, withdrawn=False), _headline(run))
    _add_cells([(catalogue_cell_key(run, withdrawn=True), [_headline(run)])])


def _runs(withdrawn: bool | None = None) -> QuerySet[Submission]:
    """Runs annotated with the cell columns that are not plain columns (withdrawn, and the unit as in cells)."""
    reached = "document__conditions__steady_state__reached"
    runs = Submission.objects.annotate(
        withdrawn=Exists(Withdrawal.objects.filter(submission=OuterRef("pk"))),
        cell_unit=Coalesce("headline_unit", Value("")),
        steady_state=Case(
            When(Q(**{reached: True}), then=Value("yes")),
            When(Q(**{reached: False}), then=Value("no")),
            default=Value(""),
        ),
    )
    return runs if withdrawn is None else runs.filter(withdrawn=withdrawn)


def _as_run_filter(key: dict[str, Any]) -> dict[str, Any]:
    """A cell's key as a filter on `_runs()`: comparability_key first, so it is one index lookup."""
    names = [n for n in CELL_KEY if n not in ("withdrawn", "headline_unit")]
    return {**{n: key[n] for n in names}, "cell_unit": key["headline_unit"]}


def catalogue_cells_from_runs() -> list[dict[str, Any]]:
    """The cells as the runs say they should be: one GROUP BY over every run."""
    names = [n for n in CELL_KEY if n != "headline_unit"]
    positive = Q(headline_value__gt=0)
    grouped = (
        _runs()
        .values(*names, "cell_unit")
        .annotate(
            runs=Count("*"),
            headline_low=Min("headline_value"),
            headline_high=Max("headline_value"),
            valued=Count("headline_value", filter=positive),
            log_sum=Sum(Ln("headline_value"), filter=positive),
            log_sq_sum=Sum(Ln("headline_value") * Ln("headline_value"), filter=positive),
        )
        .order_by()
    )
    return [_cell(row, names) for row in grouped]


def _cell(row: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return {
        **{n: row[n] for n in names},
        "headline_unit": row["cell_unit"],
        "runs": row["runs"],
        "headline_low": row["headline_low"],
        "headline_high": row["headline_high"],
        "valued": row["valued"],
        "log_sum": row["log_sum"] or 0.0,
        "log_sq_sum": row["log_sq_sum"] or 0.0,
    }


@transaction.atomic
def catalogue_rebuild() -> tuple[int, int]:
    """Recompute every cell from the runs (repair; idempotent). Returns (cells before, cells after).

    The table is locked for the rebuild on PostgreSQL, so no run is counted in between and lost.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {CatalogueCell._meta.db_table} IN EXCLUSIVE MODE")
    before = CatalogueCell.objects.count()
    CatalogueCell.objects.all().delete()
    cells = [CatalogueCell(**row) for row in catalogue_cells_from_runs()]
    CatalogueCell.objects.bulk_create(cells, batch_size=2000)
    return before, len(cells)


def catalogue_cells_differ() -> list[str]:
    """What differs between the stored cells and the runs (empty when exact): for tests and `rebuild --check`."""
    fields = [*CELL_KEY, "runs", "headline_low", "headline_high", "valued", "log_sum", "log_sq_sum"]
    stored = {tuple(row[n] for n in CELL_KEY): row for row in CatalogueCell.objects.values(*fields)}
    wanted = {tuple(row[n] for n in CELL_KEY): row for row in catalogue_cells_from_runs()}
    problems = [f"missing cell {k}" for k in wanted.keys() - stored.keys()]
    problems += [f"extra cell {k}" for k in stored.keys() - wanted.keys()]
    problems += [
        f"cell {k}: stored {stored[k]}, runs say {wanted[k]}"
        for k in stored.keys() & wanted.keys()
        if any(stored[k][n] != wanted[k][n] for n in ("runs", "headline_low", "headline_high", "valued"))
        or any(
            not math.isclose(stored[k][n], wanted[k][n], rel_tol=1e-9, abs_tol=1e-6) for n in ("log_sum", "log_sq_sum")
        )
    ]
    return problems
