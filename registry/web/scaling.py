"""A scaling plan's page (the runs of one configuration at 1, 2, 4, … devices, their efficiency and its chart), and a
run's configuration at every stored size (the comparability contract's scaling axis; MLPerf Training results of one
submitter at several system sizes)."""

from __future__ import annotations

import hashlib

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from registry import policy
from registry.presentation.scaling import configuration_sizes_view, scaling_view
from registry.selectors.scaling import configuration_sizes, scaling_runs
from registry.web.charts import CHART_SECONDS


@login_required
@require_GET
def scaling_page(request: HttpRequest, scaling_id: str) -> HttpResponse:
    """/scaling/<id>/: every stored run of the plan, by device count. Runs are read by anyone who may read runs, so
    a plan is too; an id no stored run names is 404."""
    policy.require(policy.for_request(request), policy.RUN_READ)
    runs = scaling_runs(scaling_id=scaling_id)
    if not runs:
        raise Http404("No stored run names this scaling plan.")
    refs = [{"id": r.pk, "url": f"/runs/{r.pk}/"} for r in runs]
    # The view is drawn from immutable runs: cached under their digests (a new or withdrawn run changes the key).
    key = hashlib.sha256(" ".join(r.digest for r in runs).encode()).hexdigest()
    view = cache.get_or_set(f"scaling:{key}", lambda: scaling_view([r.document for r in runs], refs), CHART_SECONDS)
    first = runs[0]
    context = {
        "id": scaling_id,
        "view": view,
        "count": len(runs),
        "workload": first.workload_name,
        "system": first.system_name,
        "parallelism": first.document["scenario"]["distributed"].get("parallelism"),
    }
    return render(request, "registry/scaling.html", context)


@login_required
@require_GET
def run_sizes_page(request: HttpRequest, run_id: int) -> HttpResponse:
    """/runs/<id>/sizes/: this run's configuration at every stored size (the scaling axis's key, one submitter), with
    speedup and efficiency against the smallest size present; a link to store it as a comparison on that axis."""
    run = policy.run_get(policy.for_request(request), run_id)
    runs = configuration_sizes(run=run)
    ids = [r.pk for r in runs]
    # Not cached: a handful of sizes, no chart (the plan page caches its chart)
    found = configuration_sizes_view([r.document for r in runs], ids)
    context = {"run": run, "runs": runs, "scaling": found["view"], "gap": found["gap"], "compare_ids": ids}
    return render(request, "registry/run_sizes.html", context)
