"""The runs of a scaling plan: every stored, not withdrawn run whose document names the plan
(scenario.distributed.scaling.id, protocol 1.3).

Found by a JSON filter on the stored document, served on PostgreSQL by an expression index (migration
0028_scaling_plan_index), not by a summary column as serving sweeps are (0026): the id is already in every run's
JSONB document, so no backfill of the append-only table and no new column for audit verify; see the migration.
"""

from __future__ import annotations

from django.db.models import QuerySet

from registry.models import Submission

MAX_RUNS = 500  # runs read for one plan: 64 sizes at most (the schema's bound) × a few repeats
MAX_ID = 100  # characters, as protocol 1.3 bounds scenario.distributed.scaling.id


def scaling_runs(*, scaling_id: str) -> list[Submission]:
    """The plan's runs, oldest first (at most MAX_RUNS), withdrawn runs left out; [] for an id no plan can have."""
    # NUL is in no stored id (the protocol refuses it in any string), and PostgreSQL refuses it in a JSON value.
    if not scaling_id or len(scaling_id) > MAX_ID or "\x00" in scaling_id:
        return []
    return list(scaling_query(scaling_id=scaling_id)[:MAX_RUNS])


def scaling_query(*, scaling_id: str) -> QuerySet[Submission]:
    """The query behind scaling_runs (its plan is checked against the index in the tests)."""
    return (
        Submission.objects.select_related("withdrawal")
        .filter(phase="training", withdrawal__isnull=True, document__scenario__distributed__scaling__id=scaling_id)
        .order_by("pk")
    )


MAX_SIZES = 200  # runs read for one configuration's sizes (an MLPerf round publishes a handful per submitter)


def _same_configuration(run: Submission) -> QuerySet[Submission]:
    return Submission.objects.filter(
        comparability_key_scaling=run.comparability_key_scaling,
        submitter=run.submitter,
        phase="training",
        withdrawal__isnull=True,
    )


def configuration_size_counts(*, run: Submission) -> tuple[int, list[int]]:
    """How many runs `configuration_sizes` would give, and their sizes in devices (world size, else the accelerator
    count), read from two columns' worth of each run rather than its document: a run's page asks this on every view."""
    if run.phase != "training" or not run.comparability_key_scaling:
        return 1, []
    rows = list(
        _same_configuration(run).values_list("document__scenario__distributed__world_size", "accelerator_count")[
            :MAX_SIZES
        ]
    )
    sizes = {world if isinstance(world, int) and world > 0 else count for world, count in rows}
    return len(rows), sorted(s for s in sizes if isinstance(s, int) and s > 0)


def configuration_sizes(*, run: Submission) -> list[Submission]:
    """This run and every other stored, not withdrawn training run of its configuration at any size: the same key on
    the comparability contract's scaling axis (everything but the size controlled) and the same submitter (an MLPerf
    round's results of one submitter form its curve; another lab's runs are another curve). Oldest first, at most
    MAX_SIZES."""
    if run.phase != "training" or not run.comparability_key_scaling:
        return [run]
    return list(_same_configuration(run).select_related("withdrawal").order_by("pk")[:MAX_SIZES])
