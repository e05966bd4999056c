"""The runs of a scaling plan: every stored, not withdrawn run whose document names the plan
(scenario.distributed.scaling.id, protocol 1.3).

Found by a JSON filter on the stored document, not a summary column as serving sweeps are (migration 0026): a plan is
a handful of training runs (1, 2, 4, … devices, a few repeats each) and its page is read rarely, so the filter is
narrowed to training runs by the indexed phase column and reads only their documents; a column would need a
migration, a backfill of the append-only table and a place in audit verify for a page that reads a few runs.
"""

from __future__ import annotations

from registry.models import Submission

MAX_RUNS = 500  # runs read for one plan: 64 sizes at most (the schema's bound) × a few repeats
MAX_ID = 100  # characters, as protocol 1.3 bounds scenario.distributed.scaling.id


def scaling_runs(*, scaling_id: str) -> list[Submission]:
    """The plan's runs, oldest first (at most MAX_RUNS), withdrawn runs left out; [] for an id no plan can have."""
    if not scaling_id or len(scaling_id) > MAX_ID:
        return []
    return list(
        Submission.objects.select_related("withdrawal")
        .filter(phase="training", withdrawal__isnull=True, document__scenario__distributed__scaling__id=scaling_id)
        .order_by("pk")[:MAX_RUNS]
    )
