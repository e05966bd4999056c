"""The cover of a decision report in plain words: what a reader who decides (not an engineer) can conclude, why,
and what to do next.

Read only from what the report carries (the comparison's result and conclusion, the runs' documents, a decision's
answer), so the words never say more than the statistics: the engineering detail they rest on (ratios, intervals,
each run's steady-state test) is printed in the report's sections, and the cover says where.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from itertools import pairwise
from typing import Any

from protocol.numbers import Style, number
from registry.presentation import answers
from registry.presentation.words import metric_label, outcome_words

# A blocking reason (the comparison's conclusion) or caveat (the report's own rule) by what it means for a reader.
BLOCKER_KINDS = {
    "unsteady": "unsteady",
    "steady-state-not-reached": "unsteady",
    "overloaded": "overloaded",
    "server-overloaded": "overloaded",
    "invalid": "invalid",
    "invalid-result": "invalid",
    "withdrawn-run": "withdrawn",
}
BLOCKER_WORDS = {
    "unsteady": "kept changing speed while they were measured (they never settled)",
    "overloaded": "were sent more requests than they could serve, so they measured a growing queue",
    "invalid": "failed the benchmark's own validity checks",
    "withdrawn": "have been withdrawn from the registry since",
}
BLOCKER_NEXT = {
    "unsteady": (
        "Measure again with the machine doing nothing else, alternating the configurations (one, the other, one, "
        "the other…) so that each sees the same conditions, then issue a new report."
    ),
    "overloaded": "Measure again at an offered load the systems can keep up with, then issue a new report.",
    "invalid": "Ask the submitter to fix the runs that failed their validity checks, then issue a new report.",
    "withdrawn": "Issue a new report from runs that still stand.",
}
BUSY_LOAD_PER_CPU = 1.0  # a load average above the machine's processor threads: other work was waiting to run
DECISION_DETAIL = (
    "Each candidate's figures, with their uncertainty, the price each cost comes from and its gaps, are in section 1; "
    "the assumptions in section 4; how each run was measured in section 3."
)
DETAIL = (
    "The figures behind this, with their uncertainty and each run's reasons, are in section 1; how each run was "
    "measured is in section 3."
)


def cover_words(
    result: Mapping[str, Any],
    docs: Sequence[Mapping[str, Any]],
    run_ids: Sequence[int],
    verdict: Mapping[str, Any],
    decision: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """{"headline": str, "why": [str], "next": [str], "detail": str, "tone": str} for the cover; a decision's answer
    when the report is issued from a decision, else the comparison's conclusion (in the conclusion's tone)."""
    if decision:
        return decision_words(decision)
    return {**_comparison_words(result, docs, run_ids, verdict), "tone": verdict.get("tone") or "none"}


def _comparison_words(
    result: Mapping[str, Any], docs: Sequence[Mapping[str, Any]], run_ids: Sequence[int], verdict: Mapping[str, Any]
) -> dict[str, Any]:
    outcome = str(verdict.get("outcome"))
    arms = result.get("arms") or []
    labels = [str(a.get("label")) for a in arms]
    metric = metric_label((arms[0].get("estimate") or {}).get("metric") if arms else None)
    if outcome == "refused":
        return _words(
            "These runs cannot be compared like for like, so this report supports no choice.",
            [],
            ["Ask for a comparison of runs that differ only in what you are choosing between."],
        )
    if outcome == "inconclusive":
        return _inconclusive(result, docs, run_ids)
    if outcome == "single-configuration" or len(arms) < 2:
        return _words(
            f"Every run measures the same configuration ({labels[0] if labels else 'one'}): there is nothing to "
            "choose between. The report gives its figures only.",
            _timing(docs, result),
            ["Measure the alternatives you are considering on the same workload, then compare them."],
        )
    base, best = _pair(verdict, len(arms))
    a, b = labels[best], labels[base]
    if outcome == "distinguishable":
        return _words(
            _better_words(result, base, best, metric), _timing(docs, result), [_next_distinguishable(len(arms))]
        )
    if outcome == "indistinguishable":
        return _words(
            f"The measurements do not tell {a} and {b} apart on {metric}: the difference between them is "
            f"{outcome_words('indistinguishable')}.",
            _timing(docs, result),
            ["Decide on other grounds: price, energy, supply or support. On speed, either will do."],
        )
    return _words(
        f"There are too few measurements to tell {a} and {b} apart on {metric}.",
        [*_fewest(result), *_timing(docs, result)],
        ["Measure each configuration at least 3 times, then issue the report again."],
    )


def _words(headline: str, why: Sequence[str], then: Sequence[str]) -> dict[str, Any]:
    return {"headline": headline, "why": list(why), "next": list(then), "detail": DETAIL}


def _pair(verdict: Mapping[str, Any], n: int) -> tuple[int, int]:
    """The baseline and the configuration the conclusion sets against it."""
    stated = verdict.get("baseline")
    base = stated if isinstance(stated, int) and 0 <= stated < n else 0
    others = [f for f in verdict.get("focus") or [] if isinstance(f, int) and f != base and f < n]
    return base, others[0] if others else (1 if base == 0 else 0)


def _better_words(result: Mapping[str, Any], base: int, best: int, metric: str) -> str:
    """ "<winner> is the better choice on throughput: about 21% more than <loser>, a difference distinguishable
    from noise" (the verdict in the words every page and report gives it: words.outcome_words)."""
    arms = result.get("arms") or []
    pair = next((p for p in result.get("pairwise") or [] if (p["subject"], p["baseline"]) == (best, base)), None)
    lower = bool((arms[base].get("estimate") or {}).get("lower_is_better"))
    ratio = pair.get("ratio") if pair else None
    if not isinstance(ratio, int | float) or ratio <= 0:
        return f"The measurements separate {arms[best]['label']} from {arms[base]['label']} on {metric}."
    subject_better = ratio < 1.0 if lower else ratio > 1.0
    winner, loser = (arms[best], arms[base]) if subject_better else (arms[base], arms[best])
    r = ratio if subject_better else 1.0 / ratio
    change = abs(r - 1.0) * 100.0
    amount = f"{number(change, Style.SIGNIFICANT, digits=2)}% {'lower' if lower else 'more'}"
    return (
        f"{winner['label']} is the better choice on {metric}: about {amount} than {loser['label']}, a difference "
        f"{outcome_words('distinguishable')}."
    )


def _next_distinguishable(arms: int) -> str:
    others = "the other configuration" if arms == 2 else "the other configurations"
    return (
        f"Check that the workload measured matches yours, and weigh price and energy (section 1) against "
        f"{others} before you buy."
    )


def _fewest(result: Mapping[str, Any]) -> list[str]:
    counts = [len(a.get("runs") or []) for a in result.get("arms") or []]
    if not counts:
        return []
    fewest = min(counts)
    return [
        f"The configuration with the fewest has {fewest} run{'s' if fewest != 1 else ''}: a firm verdict needs at "
        "least 3 independent measurements of each, to tell a real difference from run-to-run variation."
    ]


# ------------------------------------------------------------------------------------------ inconclusive


def _inconclusive(
    result: Mapping[str, Any], docs: Sequence[Mapping[str, Any]], run_ids: Sequence[int]
) -> dict[str, Any]:
    """Which runs cannot be relied on and how, the likely cause where the runs record one, and what to do."""
    blocked = _blocked(result)
    total = len(run_ids)
    parts = [
        f"{_count(len(runs), total)} {BLOCKER_WORDS[kind]}"
        for kind, runs in blocked.items()
        if runs and kind in BLOCKER_WORDS
    ]
    headline = "These measurements are inconclusive and cannot settle the decision: "
    headline += "; ".join(parts) or "a run blocks a verdict"
    headline += ", so their numbers do not show how the configurations compare."
    blocked_runs = sorted({i for runs in blocked.values() for i in runs})
    why = [*_busy(docs, run_ids, blocked_runs), *_timing(docs, result)]
    then = ["Do not choose on these numbers."] + [BLOCKER_NEXT[k] for k, runs in blocked.items() if runs]
    return _words(headline, why, then)


def _blocked(result: Mapping[str, Any]) -> dict[str, list[int]]:
    """Run positions per kind of blocker, from the conclusion's reasons and the runs' caveats."""
    found: dict[str, list[int]] = {}
    stated = (result.get("conclusion") or {}).get("reasons") or []
    for item in [*stated, *(result.get("caveats") or [])]:
        kind = BLOCKER_KINDS.get(str(item.get("code")))
        run = item.get("run")
        if kind and isinstance(run, int) and run not in found.setdefault(kind, []):
            found[kind].append(run)
    return found


def _count(n: int, total: int) -> str:
    if n == total:
        return "both runs" if n == 2 else f"all {n} runs" if n > 1 else "the run"
    return f"{n} of the {total} runs"


def _busy(docs: Sequence[Mapping[str, Any]], run_ids: Sequence[int], positions: Sequence[int]) -> list[str]:
    """The likely cause when a run recorded a load average above its machine's processor threads at its start."""
    busiest = None
    for i in positions:
        load, cpus = _load(docs[i]) if i < len(docs) else (None, None)
        if load is not None and cpus and load > cpus * BUSY_LOAD_PER_CPU and (busiest is None or load > busiest[0]):
            busiest = (load, cpus, run_ids[i])
    if busiest is None:
        return []
    load, cpus, run = busiest
    return [
        f"The likely cause: the machine was busy with other work. When run {run} started, about "
        f"{number(load, Style.SIGNIFICANT, digits=2)} programs on average were running or waiting to run on its "
        f"{cpus} processor thread{'s' if cpus != 1 else ''} (load average {load:g}), so the benchmark had to share "
        "them."
    ]


def _load(doc: Mapping[str, Any]) -> tuple[float | None, int | None]:
    """The one-minute load average a run recorded at its start, and its machine's processor threads."""
    system = doc.get("system") or {}
    host = system.get("host") or {}
    cpus = host.get("threads") or host.get("cores")
    text = str((system.get("notes") or {}).get("load_average_at_start") or "").split()
    try:
        load = float(text[0]) if text else None
    except ValueError:
        load = None
    return load, cpus if isinstance(cpus, int) and not isinstance(cpus, bool) else None


# ------------------------------------------------------------------------------------------ when measured


def _timing(docs: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> list[str]:
    """When configurations of one machine were measured one after the other rather than alternated, say so and how
    far apart: anything that changed on the machine in between shows up as a difference between them."""
    arms = result.get("arms") or []
    if len(arms) < 2 or len({str((d.get("system") or {}).get("name")) for d in docs}) != 1:
        return []
    spans = []
    for arm in arms:
        times = [_times(docs[i]) for i in arm.get("runs") or [] if i < len(docs)]
        if not times or any(t is None for t in times):
            return []
        starts, ends = [t[0] for t in times if t], [t[1] for t in times if t]
        spans.append((min(starts), max(ends), str(arm.get("label"))))
    spans.sort()
    if any(later[0] < earlier[1] for earlier, later in pairwise(spans)):
        return []  # interleaved: each configuration saw the same stretch of time
    first, last = spans[0], spans[-1]
    apart = _duration((last[0] - first[0]).total_seconds())
    order = ", then ".join(f"{label} at {start:%H:%M} UTC" for start, _, label in spans)
    return [
        f"The configurations were measured one after the other on the same machine, not alternated ({order}, "
        f"{first[0]:%Y-%m-%d}): their first runs started {apart} apart, so anything that changed on the machine in "
        "between shows up as a difference between them."
    ]


def _times(doc: Mapping[str, Any]) -> tuple[datetime, datetime] | None:
    provenance = doc.get("provenance") or {}
    try:
        start = datetime.fromisoformat(str(provenance.get("started_at")))
        end = datetime.fromisoformat(str(provenance.get("finished_at") or provenance.get("started_at")))
    except ValueError:
        return None
    return (start, max(start, end)) if start.tzinfo is not None and end.tzinfo is not None else None


def _duration(seconds: float) -> str:
    if seconds < 60:
        return "less than a minute"
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            n = round(seconds / size)
            return f"about {n} {unit}{'s' if n != 1 else ''}"
    return "less than a minute"  # unreachable: seconds >= 60 matched "minute"


# ------------------------------------------------------------------------------------------ a decision's answer


def decision_words(decision: Mapping[str, Any]) -> dict[str, Any]:
    """A decision's answer for a buyer, exactly as the decision page opens with it (registry.presentation.answers),
    and where in the report its detail is."""
    return {**answers.conclusion(decision), "detail": DECISION_DETAIL}
