"""The comparison builder, a comparison's page with its charts, and its CSV and JSON.

A refused comparison re-renders the builder with status 422 and every blocking field, the question's first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from protocol import comparability, serving
from protocol.decisions.evidence import configuration_key
from registry import policy
from registry.exceptions import RegistryError
from registry.presentation import charts
from registry.presentation.scaling import curve_view
from registry.presentation.sentences import ratio_sentences
from registry.presentation.sweeps import comparison_view
from registry.presentation.words import caveat_rows
from registry.selectors.catalogue import ROOT_CAUSE_PREFIXES, root_cause_order
from registry.selectors.comparisons import runs_by_reference
from registry.selectors.standing import comparison_conclusion, comparison_members
from registry.selectors.sweeps import sweep_runs
from registry.services.comparisons import NotComparable, comparison_create
from registry.web import exports
from registry.web.charts import cached_chart
from registry.web.context import signed_in_user
from registry.web.forms import CompareForm, ReportRequestForm
from registry.web.runs import per_user_param

REPORTS_SHOWN = 10  # the latest reports listed on a comparison's page

# URL name -> (title, registry.presentation.charts function, drawn from the comparison's result or its runs' documents)
COMPARISON_CHARTS = {
    "headline": ("Headline metric per configuration, with 95% intervals", "throughput_chart", "result"),
    "latency": ("Latency percentiles per configuration", "latency_percentiles_chart", "both"),
    "load": ("Latency against load", "latency_vs_load_chart", "documents"),
    "derived": ("Derived figures", "derived_chart", "result"),
}


@login_required
@require_http_methods(["GET", "POST"])
def compare(request: HttpRequest) -> HttpResponse:
    policy.require(policy.for_request(request), policy.COMPARISON_CREATE)
    if request.method == "GET":
        initial = {
            "runs": ", ".join(request.GET.getlist("run") + request.GET.getlist("runs")),
            "axis": request.GET.get("axis", "system"),
            "baseline": request.GET.get("baseline"),
        }
        return render(request, "registry/compare.html", {"form": CompareForm(initial=initial)})
    form = CompareForm(request.POST, checked=request.POST.getlist("run"))
    if not form.is_valid():
        return render(request, "registry/compare.html", {"form": form}, status=400)
    ids, axis = form.cleaned_data["run_ids"], form.cleaned_data["axis"]
    baseline = form.cleaned_data.get("baseline")
    try:
        runs = runs_by_reference(refs=ids)
        # The requester's baseline (a run of the comparison): its configuration is what ratios are stated against.
        comparison, _ = comparison_create(runs=runs, axis=axis, created_by=signed_in_user(request), baseline=baseline)
    except NotComparable as exc:
        return render(request, "registry/compare.html", _refusal_context(exc, runs, ids, axis, baseline), status=422)
    except RegistryError as exc:
        return render(
            request,
            "registry/compare.html",
            {
                "form": CompareForm(initial={"runs": ", ".join(map(str, ids)), "axis": axis, "baseline": baseline}),
                "problem": exc,
            },
            status=exc.status if exc.status in (400, 404, 409) else 400,
        )
    return redirect("comparison", comparison_id=comparison.pk)


def _refusal_context(
    exc: NotComparable, runs: list[Any], ids: list[int], axis: str, baseline: int | None
) -> dict[str, Any]:
    """The builder again, with every field that blocks the comparison and the axes these runs would pass."""
    errors = _refusal_order(exc.errors or [])
    return {
        "form": CompareForm(initial={"runs": ", ".join(map(str, ids)), "axis": axis, "baseline": baseline}),
        "refusal": exc,
        "errors": errors,
        "root_causes": [e for e in errors if e.get("root_cause")],
        "runs": runs,
        "axis": axis,
        "run_ids": ids,
        "other_axes": _axes_that_accept(runs, axis) if exc.code == "not-comparable" else [],
    }


def _refusal_order(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Blocking fields with what makes the question different first (phase, workload, scenario, quality target),
    then fields every run states, then those some run leaves "not stated", free-text notes last (the contract's
    said_order); each marked root_cause or not."""

    def root(e: dict[str, Any]) -> bool:
        pointer = str(e.get("pointer", ""))
        return any(pointer == p or pointer.startswith(p + "/") for p in ROOT_CAUSE_PREFIXES)

    ordered = root_cause_order([e for e in errors if "pointer" in e])
    ordered.sort(
        key=lambda e: (
            not root(e),
            comparability.is_free_text(str(e.get("pointer", ""))),
            "not stated" in (e.get("values") or []),
        )
    )
    return [{**e, "root_cause": root(e)} for e in ordered]


def _axes_that_accept(runs: list[Any], axis: str) -> list[str]:
    """Other axes along which these very runs are comparable: the only hint worth giving after a refusal."""
    documents = [r.document for r in runs]
    return [
        other
        for other in comparability.contract().axes
        if other != axis and comparability.check(documents, other).comparable
    ]


@login_required
@require_GET
def comparison_page(request: HttpRequest, comparison_id: int) -> HttpResponse:
    comparison = policy.comparison_get(policy.for_request(request), comparison_id)
    fmt = exports.export_format(request)
    if fmt:
        document = exports.comparison_export(comparison, comparison_members(comparison), request.build_absolute_uri)
        return exports.respond(
            fmt,
            f"benchreg-comparison-{comparison.pk}",
            rows=document["runs"],
            columns=exports.COMPARISON_COLUMNS,
            document=document,
        )
    return render(request, "registry/comparison.html", comparison_context(request, comparison))


def comparison_context(request: HttpRequest, comparison: Any, report_form: Any = None) -> dict[str, Any]:
    """What registry/comparison.html shows; `report_form` is the report request form again, with its errors."""
    result = comparison.result
    runs = comparison_members(comparison)
    documents = [r.document for r in runs]
    arms = [
        {**arm, "run_ids": [runs[i].pk for i in arm["runs"]], "members": [runs[i] for i in arm["runs"]]}
        for arm in result.get("arms", [])
    ]
    drawn = charts.comparison_charts(result, documents)
    reports = comparison.reports.order_by("-id")
    return {
        "comparison": comparison,
        "result": result,
        "runs": runs,
        "arms": arms,
        "conclusion": comparison_conclusion(comparison, runs),
        "run_rows": [{"run": runs[i], **row} for i, row in enumerate(result.get("runs", []))],
        "caveats": caveat_rows(result.get("caveats") or [], [r.pk for r in runs]),  # by run id, as the report
        "derived": [{"arm": arm["label"], **d} for arm in result.get("arms", []) for d in arm.get("derived", [])],
        # Links, not drawings: each chart is its own request (comparison_chart), so drawing them never holds up
        # the page, and the browser fetches them in parallel.
        "charts": [
            (title, reverse("comparison-chart", args=[comparison.pk, name]))
            for name, (title, function, _) in COMPARISON_CHARTS.items()
            if function in drawn
        ],
        "sweeps": _sweeps(request, result, documents),
        "scaling": curve_view(result.get("scaling"), [r.pk for r in runs]),
        "report_form": report_form
        or ReportRequestForm(initial={"title": f"Decision report: comparison {comparison.pk}"}),
        "reports": list(policy.visible_reports(policy.for_request(request), reports)[:REPORTS_SHOWN]),
        # the keys a report's prices may use, as a decision's candidates are keyed (ReportRequestForm)
        "price_keys": sorted({configuration_key(d) for d in documents}),
        "sentences": ratio_sentences(result),
        "baseline_arm": (arms[(result.get("conclusion") or {}).get("baseline", 0)] if arms else None),
        "exports": exports.export_links(request),
    }


@login_required
@require_GET
def comparison_chart(request: HttpRequest, comparison_id: int, name: str) -> HttpResponse:
    """One chart of a comparison as an SVG image, drawn once per comparison digest (comparisons never change)."""
    comparison = policy.comparison_get(policy.for_request(request), comparison_id)
    if name not in COMPARISON_CHARTS:
        raise Http404(f"no chart {name!r}")
    _, function, source = COMPARISON_CHARTS[name]
    documents = [r.document for r in comparison_members(comparison)] if source != "result" else []
    args = {"result": (comparison.result,), "documents": (documents,), "both": (documents, comparison.result)}[source]
    svg = cached_chart(function, comparison.digest, *args)
    if svg is None:
        raise Http404(f"comparison {comparison.pk} has nothing to plot in {name!r}")
    response = HttpResponse(svg, content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=86400"
    # Shown through <img> (where scripts never run); opened directly, it may not run any or load anything either.
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return response


def _sweeps(request: HttpRequest, result: Mapping[str, Any], documents: list[Any]) -> dict[str, Any] | None:
    """Where the arms' runs are levels of sweeps: every stored level of those sweeps per arm, their frontiers, and
    (with ?per_user=) the first arm against the others at that interactivity. None when fewer than two arms have
    a sweep."""
    per_user, error = per_user_param(request)
    arms = []
    for arm in result.get("arms", []):
        ids = serving.sweep_ids([documents[i] for i in arm["runs"]])
        runs = [r for sweep in ids for r in sweep_runs(sweep_id=sweep)]
        refs = [{"id": r.pk, "digest": r.digest, "url": f"/runs/{r.pk}/"} for r in runs]
        arms.append((str(arm["label"]), [r.document for r in runs], refs))
    view = comparison_view(arms, per_user)
    return None if view is None else {**view, "per_user_error": error}
