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
from registry.models.submissions import superseding

# A run counted in a cell: its headline value and whether it counts as independent evidence (counted_ids).
Counted = tuple[float | None, bool]

logger = logging.getLogger(__name__)


def steady_state_word(document: dict[str, Any]) -> str:
    """conditions.steady_state.reached as a cell stores it: "yes", "no" or "" (not stated)."""
    reached = ((document.get("conditions") or {}).get("steady_state") or {}).get("reached")
    return "yes" if reached is True else "no" if reached is False else ""


def catalogue_cell_key(run: Submission, *, withdrawn: bool) -> dict[str, Any]:
    key = {name: getattr(run, name) for name in CELL_KEY if name not in ("withdrawn", "steady_state")}
    key["headline_unit"] = key["headline_unit"] or ""
    return {**key, "steady_state": steady_state_word(run.document), "withdrawn": withdrawn}


def counted_ids(members: list[tuple[int, bool, bool]]) -> set[int]:
    """Of the runs of one measurement, (id, derived, withdrawn) each, those that count as independent evidence: the
    rule of Submission.objects.independent() over runs in memory (measured, and no newer run of the measurement
    that is not withdrawn)."""
    newest = max((pk for pk, _, withdrawn in members if not withdrawn), default=None)
    return {pk for pk, derived, _ in members if not derived and (newest is None or pk >= newest)}


def _evidence_change(value: float | None, sign: int) -> dict[str, Any]:
    """The UPDATE that counts one independent run of headline `value` more (sign 1) or fewer (-1)."""
    changes: dict[str, Any] = {"independent": F("independent") + sign}
    if value is not None and value > 0:
        log = math.log(value)
        changes.update(
            valued=F("valued") + sign, log_sum=F("log_sum") + sign * log, log_sq_sum=F("log_sq_sum") + sign * log * log
        )
    return changes


def _shrink(value: float | None, counted: bool) -> dict[str, Any]:
    """The UPDATE that counts one run of headline `value` fewer: counts and log sums only (the bounds are re-read
    by `_remove`)."""
    return {"runs": F("runs") - 1, **(_evidence_change(value, -1) if counted else {})}


def _sums(values: list[Counted]) -> tuple[float | None, float | None, int, int, float, float]:
    """What runs of headlines `values` add to a cell: (low, high, independent, valued, log_sum, log_sq_sum); the
    last four over the runs counted as independent evidence only."""
    known = [v for v, _ in values if v is not None]
    logs = [math.log(v) for v, counted in values if counted and v is not None and v > 0]
    low, high = (min(known), max(known)) if known else (None, None)
    return low, high, sum(counted for _, counted in values), len(logs), sum(logs), sum(x * x for x in logs)


def _add_cells(cells: list[tuple[dict[str, Any], list[Counted]]]) -> None:
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
        rows.append("(" + ", ".join(["%s"] * (len(CELL_KEY) + 7)) + ")")
        params += [key[name] for name in CELL_KEY]
        params += [len(values), *_sums(values)]
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT_CELLS.format(rows=", ".join(rows)), params)


# The counts' upsert: what `_add`'s UPDATE-or-INSERT does, in one statement for many cells. LEAST and GREATEST skip
# NULLs, as `_add`'s Coalesce does; the sums are added in the same order, so the floats are the same.
_UPSERT_CELLS = f"""
INSERT INTO registry_cataloguecell ({", ".join(CELL_KEY)}, runs, headline_low, headline_high, independent, valued,
                                    log_sum, log_sq_sum)
VALUES {{rows}}
ON CONFLICT ON CONSTRAINT catalogue_cell_key DO UPDATE SET
    runs = registry_cataloguecell.runs + EXCLUDED.runs,
    independent = registry_cataloguecell.independent + EXCLUDED.independent,
    headline_low = LEAST(registry_cataloguecell.headline_low, EXCLUDED.headline_low),
    headline_high = GREATEST(registry_cataloguecell.headline_high, EXCLUDED.headline_high),
    valued = registry_cataloguecell.valued + EXCLUDED.valued,
    log_sum = registry_cataloguecell.log_sum + EXCLUDED.log_sum,
    log_sq_sum = registry_cataloguecell.log_sq_sum + EXCLUDED.log_sq_sum
"""  # noqa: S608 (CELL_KEY is a constant; the values are parameters)


def _add(key: dict[str, Any], values: list[Counted]) -> None:
    """Count runs of headlines `values` in one cell: one UPDATE (NULL bounds taken as unset), or the INSERT of a new
    cell. Not race-safe on its own: for SQLite, whose write transactions (IMMEDIATE) run one at a time."""
    low, high, independent, valued, log_sum, log_sq_sum = _sums(values)
    changes = _increments(len(values), low, high, independent, valued, log_sum, log_sq_sum)
    if not CatalogueCell.objects.filter(**key).update(**changes):
        CatalogueCell.objects.create(
            **key,
            runs=len(values),
            headline_low=low,
            headline_high=high,
            independent=independent,
            valued=valued,
            log_sum=log_sum,
            log_sq_sum=log_sq_sum,
        )


def _increments(
    runs: int, low: float | None, high: float | None, independent: int, valued: int, log_sum: float, log_sq_sum: float
) -> dict[str, Any]:
    """The UPDATE that counts runs of these sums into an existing cell (NULL bounds taken as unset)."""
    changes: dict[str, Any] = {
        "runs": F("runs") + runs,
        "independent": F("independent") + independent,
        "valued": F("valued") + valued,
        "log_sum": F("log_sum") + log_sum,
        "log_sq_sum": F("log_sq_sum") + log_sq_sum,
    }
    if low is not None:
        changes["headline_low"] = Least(Coalesce("headline_low", Value(low)), Value(low))
        changes["headline_high"] = Greatest(Coalesce("headline_high", Value(high)), Value(high))
    return changes


def _remove(key: dict[str, Any], value: float | None, counted: bool) -> None:
    """Count one run fewer; the cell goes at zero, and its headline range is re-read if the run was at an end."""
    cells = CatalogueCell.objects.filter(**key)
    if not cells.update(**_shrink(value, counted)):  # locks the cell for the rest of the transaction
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
    before, after, members = _counted_around(runs, withdrawn=None)
    cells: dict[tuple[Any, ...], tuple[dict[str, Any], list[Counted]]] = {}
    for run in runs:
        key = catalogue_cell_key(run, withdrawn=False)
        cells.setdefault(tuple(key[name] for name in CELL_KEY), (key, []))[1].append((_headline(run), run.pk in after))
    ordered = sorted(cells, key=lambda t: tuple("" if v is None else str(v) for v in t))
    _add_cells([cells[key] for key in ordered])
    _recount(before, after, members, moved={run.pk for run in runs})


def catalogue_run_withdrawn(*, run: Submission) -> None:
    """Move a run to the withdrawn cells. Call inside the transaction that stores its withdrawal, after it.

    A run of a measurement stated by other runs can change which of them counts (the newest not withdrawn): their
    cells follow (`_recount`)."""
    before, after, members = _counted_around([run], withdrawn=run.pk)
    _remove(catalogue_cell_key(run, withdrawn=False), _headline(run), run.pk in before)
    _add_cells([(catalogue_cell_key(run, withdrawn=True), [(_headline(run), run.pk in after)])])
    _recount(before, after, members, moved={run.pk})


def _counted_around(runs: list[Submission], *, withdrawn: int | None) -> tuple[set[int], set[int], dict[int, bool]]:
    """Which runs of the measurements of `runs` count as independent evidence before and after the change (runs
    just stored: absent before; a run just withdrawn (`withdrawn`): not withdrawn before), and whether each is
    withdrawn now. One query, a row per run of those measurements (one per run, almost always)."""
    stored = {run.pk for run in runs} if withdrawn is None else set()
    if withdrawn is None and all(_alone(run) for run in runs):
        # Runs just stored that share their measurement with no other run: each counts unless it is derived, and
        # no other run moves, so the answer needs no query (most submissions: a round trip fewer, issue 42).
        return set(), {run.pk for run in runs if not run.derived}, {run.pk: False for run in runs}
    rows = list(
        Submission.objects.filter(
            Q(measurement__in={run.measurement for run in runs if run.measurement}) | Q(pk__in=[run.pk for run in runs])
        )
        .annotate(withdrawn=Exists(Withdrawal.objects.filter(submission=OuterRef("pk"))))
        .values_list("pk", "measurement", "derived", "withdrawn")
    )
    groups: dict[str, list[tuple[int, bool, bool]]] = {}
    for pk, measurement, derived, is_withdrawn in rows:  # "" (no identity) is a measurement of its own
        groups.setdefault(measurement or f"run {pk}", []).append((pk, derived, is_withdrawn))
    before: set[int] = set()
    after: set[int] = set()
    for members in groups.values():
        after |= counted_ids(members)
        before |= counted_ids([(pk, d, w and pk != withdrawn) for pk, d, w in members if pk not in stored])
    return before, after, {pk: is_withdrawn for pk, _, _, is_withdrawn in rows}


def _alone(run: Submission) -> bool:
    """Whether a run just stored is the only run of its measurement: its identity is its own digest (a document
    naming no source files, protocol.measurement_identity), which no other document's identity can equal."""
    return run.measurement in ("", run.digest)


def _recount(before: set[int], after: set[int], withdrawn: dict[int, bool], *, moved: set[int]) -> None:
    """The runs (other than `moved`, counted by the caller) that started or stopped counting: their cells' evidence
    sums follow. Ordered by id, so concurrent writers lock the cells in one order."""
    for pk in sorted((before ^ after) - moved):
        run = Submission.objects.get(pk=pk)
        key = catalogue_cell_key(run, withdrawn=withdrawn[pk])
        CatalogueCell.objects.filter(**key).update(**_evidence_change(_headline(run), 1 if pk in after else -1))


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
    # Submission.objects.independent()'s rule, as a condition of the GROUP BY
    counted = Q(derived=False) & ~Q(superseded=True)
    positive = Q(headline_value__gt=0) & counted
    grouped = (
        _runs()
        .annotate(superseded=Exists(superseding(OuterRef("measurement"), OuterRef("pk"))))
        .values(*names, "cell_unit")
        .annotate(
            runs=Count("*"),
            independent=Count("pk", filter=counted),
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
        "independent": row["independent"],
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
    fields = [*CELL_KEY, "runs", "independent", "headline_low", "headline_high", "valued", "log_sum", "log_sq_sum"]
    stored = {tuple(row[n] for n in CELL_KEY): row for row in CatalogueCell.objects.values(*fields)}
    wanted = {tuple(row[n] for n in CELL_KEY): row for row in catalogue_cells_from_runs()}
    problems = [f"missing cell {k}" for k in wanted.keys() - stored.keys()]
    problems += [f"extra cell {k}" for k in stored.keys() - wanted.keys()]
    problems += [
        f"cell {k}: stored {stored[k]}, runs say {wanted[k]}"
        for k in stored.keys() & wanted.keys()
        if any(stored[k][n] != wanted[k][n] for n in ("runs", "independent", "headline_low", "headline_high", "valued"))
        or any(
            not math.isclose(stored[k][n], wanted[k][n], rel_tol=1e-9, abs_tol=1e-6) for n in ("log_sum", "log_sq_sum")
        )
    ]
    return problems
