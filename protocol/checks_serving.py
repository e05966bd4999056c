"""Semantic rules of served-model load levels (protocol 1.2; docs/protocol.md, section 4).

Each rule reads the document defensively, like those of protocol.checks, which runs them with its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import rules
from .errors import Error
from .lookup import value_at

REQUEST_OUTCOMES = ("completed", "errors", "timeouts", "incomplete")


def requests_add_up(doc: dict[str, Any]) -> Iterator[Error]:
    """Every request sent is counted once, in exactly one outcome; a distribution counts no more than completed."""
    requests = value_at(doc, "metrics", "requests")
    if not isinstance(requests, dict):
        return
    stated = [requests.get(k) for k in ("sent", *REQUEST_OUTCOMES)]
    counts = [c for c in stated if isinstance(c, int) and not isinstance(c, bool)]
    if len(counts) != len(stated):
        return
    sent, *outcomes = counts
    if sum(outcomes) != sent:
        shown = " + ".join(f"{name} {n}" for name, n in zip(REQUEST_OUTCOMES, outcomes, strict=True))
        message = f"sent is {sent} but {shown} make {sum(outcomes)}: count every request once, in one outcome"
        yield Error("/metrics/requests/sent", "requests-do-not-add-up", message)
    completed = requests["completed"]
    for name in ("latency_ms", "ttft_ms", "ttfot_ms", "tokens_per_second_per_user"):
        count = value_at(doc, "metrics", name, "count")
        if isinstance(count, int) and count > completed:
            message = f"{name} counts {count} requests but only {completed} completed"
            yield Error(f"/metrics/{name}/count", "requests-do-not-add-up", message)


def streaming_metrics_need_streaming(doc: dict[str, Any]) -> Iterator[Error]:
    """TTFT, inter-token gaps and per-user rates exist only for a response read as a stream."""
    if value_at(doc, "software", "serving", "streaming") is not False:
        return
    for name in rules.STREAMING_METRICS:
        if value_at(doc, "metrics", name) is not None:
            message = f"{name} needs a streamed response, but software.serving.streaming is false"
            yield Error(f"/metrics/{name}", "needs-streaming", message)


def sweep_level_states_its_load(doc: dict[str, Any]) -> Iterator[Error]:
    """A level of a sweep states the load it offered, in the field its mode names, and its place in the sweep."""
    sweep = value_at(doc, "scenario", "sweep")
    if not isinstance(sweep, dict):
        return
    fields = rules.SWEEP_LOAD_FIELDS.get(sweep.get("mode"))  # type: ignore[arg-type]
    if fields and not any(value_at(doc, "scenario", f) is not None for f in fields):
        said = " or ".join(f"scenario.{f}" for f in fields)
        message = f"a level of a {sweep['mode']} sweep must state its offered load in {said}"
        yield Error(f"/scenario/{fields[0]}", "sweep-load-missing", message)
    index, levels = sweep.get("index"), sweep.get("levels")
    if isinstance(index, int) and isinstance(levels, int) and index >= levels:
        message = f"index {index} is not a position of a sweep of {levels} level(s) (0 to {levels - 1})"
        yield Error("/scenario/sweep/index", "sweep-index-out-of-range", message)


def gamma_arrival_states_burstiness(doc: dict[str, Any]) -> Iterator[Error]:
    """Gamma arrivals need their shape; a shape belongs to gamma arrivals only (Poisson is gamma with k = 1)."""
    arrival, burstiness = value_at(doc, "scenario", "arrival"), value_at(doc, "scenario", "burstiness")
    if arrival == "gamma" and burstiness is None:
        message = "gamma arrivals need their shape k in scenario.burstiness (1 is Poisson)"
        yield Error("/scenario/burstiness", "burstiness-missing", message)
    elif burstiness is not None and arrival != "gamma" and not (arrival == "poisson" and burstiness == 1):
        message = f"burstiness is the shape of gamma arrivals, but scenario.arrival is {arrival!r}"
        yield Error("/scenario/burstiness", "burstiness-without-gamma", message)
