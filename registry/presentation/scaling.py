"""A scaling plan for readers: one row per device count (its runs, throughput, per-device throughput, efficiency with
its interval, communication share, slowest rank), the words that say what the interval means or why a figure is
missing, and the chart. Pure presentation over protocol.scaling: the runs come from registry.selectors.scaling."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from protocol import scaling
from protocol.numbers import Style, number
from protocol.statistics import CONFIDENCE, MIN_VALUES, geometric_mean
from registry.presentation import charts_scaling

INTERVAL_WORDS = (
    f"Efficiency is the speedup over the plan's 1-device runs divided by the devices (1 is ideal). Its "
    f"{CONFIDENCE:.0%} interval is Welch's t interval on the difference of the mean logs of the throughputs, one "
    f"throughput per repetition of each run: a range that, over many such plans, holds the true efficiency about "
    f"{CONFIDENCE:.0%} of the time. It says how far run-to-run noise lets the figure move, not whether another system "
    f"or workload would scale alike. Fewer than {MIN_VALUES} values at a size or at 1 device: the point alone."
)


def _distributed(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    return (doc.get("metrics") or {}).get("distributed") or {}


def _share(docs: Sequence[Mapping[str, Any]]) -> str:
    shares = [
        s for d in docs if isinstance(s := (_distributed(d).get("communication") or {}).get("share"), float | int)
    ]
    return f"{number(100 * sum(shares) / len(shares), Style.SIGNIFICANT, digits=3)}%" if shares else "not stated"


def _slowest(docs: Sequence[Mapping[str, Any]]) -> str:
    """The slowest rank each run named, the most often named first: "rank 1 (2 of 3 runs)"."""
    named = Counter(r for d in docs if isinstance(r := _distributed(d).get("slowest_rank"), int))
    if not named:
        return "not stated"
    return "; ".join(f"rank {rank} ({count} of {len(docs)} run{'s' if len(docs) != 1 else ''})"
                     for rank, count in named.most_common())  # fmt: skip


def _interval(row: scaling.Efficiency | None) -> str:
    if row is None:
        return "no 1-device runs"
    if row.low is None or row.high is None:
        return row.evidence
    return f"{CONFIDENCE:.0%} CI {number(row.low, Style.RATIO)}–{number(row.high, Style.RATIO)}"


_Grouped = dict[int, list[tuple[Mapping[str, Any], Mapping[str, Any]]]]  # devices: [(document, its link)]


def _rows(plan: scaling.Plan, eff: Sequence[scaling.Efficiency], docs: _Grouped) -> list[dict[str, Any]]:
    by_devices = {e.devices: e for e in eff}
    rows = []
    for size in plan.sizes:
        mean = geometric_mean(size.values)
        e = by_devices.get(size.devices)
        rows.append(
            {
                "devices": size.devices,
                "runs": [ref for _, ref in docs[size.devices]],
                "throughput": number(mean, Style.SIGNIFICANT),
                "per_device": number(mean / size.devices, Style.SIGNIFICANT),
                "efficiency": number(e.efficiency, Style.RATIO) if e else "—",
                "interval": _interval(e),
                "values": len(size.values),
                "share": _share([d for d, _ in docs[size.devices]]),
                "slowest": _slowest([d for d, _ in docs[size.devices]]),
            }
        )
    return rows


def _gaps(plan: scaling.Plan, refusal: str | None, docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why the plan says less than a curve: no reference, one size measured, sizes planned but not stored."""
    gaps = [refusal] if refusal else []
    measured = [s.devices for s in plan.sizes]
    if len(measured) == 1:
        gaps.append(f"Only {measured[0]} device(s) measured: no curve, and no efficiency beyond the reference.")
    planned = sorted({n for d in docs for n in d["scenario"]["distributed"]["scaling"]["devices"]})
    if missing := [n for n in planned if n not in measured]:
        gaps.append(f"Planned but not stored: {', '.join(str(n) for n in missing)} device(s).")
    return gaps


def _configuration(doc: Mapping[str, Any]) -> str:
    """What every size of one plan shares: the workload (name and version), the parallelism and the precision."""
    workload, precision = doc.get("workload") or {}, doc.get("precision") or {}
    parallelism = ((doc.get("scenario") or {}).get("distributed") or {}).get("parallelism")
    return f"{workload.get('name')} {workload.get('version')}, {parallelism}, {precision.get('weights')}"


def _plan(docs: Sequence[dict[str, Any]]) -> tuple[scaling.Plan | None, str | None]:
    """The runs as one plan, or None and why they are not one (in words, never a 500)."""
    configurations = sorted({_configuration(d) for d in docs})
    if len(configurations) > 1:  # an id is free text: runs of other configurations may name it too
        shown = "; ".join(configurations[:4]) + (" …" if len(configurations) > 4 else "")
        return None, f"These runs do not form one plan: they measured {shown}"
    try:
        (plan,) = scaling.points(docs)
    except scaling.ScalingError as exc:  # runs of one id that disagree (a mode, a throughput)
        return None, f"These runs do not form one plan: {exc}"
    return plan, None


def scaling_view(docs: Sequence[dict[str, Any]], refs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The page's content for the runs of one plan (all naming the same scaling id), with `refs` their links."""
    plan, why = _plan(docs)
    if plan is None:
        return {"rows": [], "gaps": [], "chart": None, "refusal": why}
    eff: list[scaling.Efficiency] | None
    try:
        eff, refusal = scaling.efficiency(plan), None
    except scaling.ScalingError as exc:
        eff, refusal = None, f"No efficiency: {exc}."
    grouped: _Grouped = {}
    for doc, ref in zip(docs, refs, strict=True):
        grouped.setdefault(doc["scenario"]["distributed"]["world_size"], []).append((doc, ref))
    return {
        "mode": plan.mode,
        "rows": _rows(plan, eff or [], grouped),
        "gaps": _gaps(plan, refusal, docs),
        "refusal": None,
        "interval_words": INTERVAL_WORDS,
        "chart": charts_scaling.scaling_chart(plan, eff),
    }


def curve_view(curve: Mapping[str, Any] | None, run_ids: Sequence[int]) -> dict[str, Any] | None:
    """A comparison's scaling curve (protocol.scaling.curve, stored in its result) for readers: one row per size,
    smallest first, with its runs by id, the headline (throughput, or time to train), speedup and efficiency against
    the base (the smallest size present), and the interval or why there is none. None off the scaling axis."""
    if not curve:
        return None
    if curve.get("error"):
        return {"error": curve["error"], "rows": []}
    time = curve.get("metric") == "time_to_quality"
    rows = [
        {
            "devices": s["devices"],
            "nodes": ", ".join(str(n) for n in s.get("nodes") or []) or "not stated",
            "runs": [run_ids[i] for i in s["runs"]],
            "value": number(s["value"], Style.SIGNIFICANT, digits=4),
            "speedup": number(s["speedup"], Style.RATIO),
            "efficiency": number(s["efficiency"], Style.RATIO),
            "interval": (
                f"{CONFIDENCE:.0%} CI {number(s['ci_low'], Style.RATIO)}–{number(s['ci_high'], Style.RATIO)}"
                if s.get("ci_low") is not None
                else ("the base: 1 by definition" if s["devices"] == curve["base"]["devices"] else s["evidence"])
            ),
        }
        for s in curve.get("sizes") or []
    ]
    return {
        "rows": rows,
        "heading": "Time to train (s)" if time else f"Throughput ({curve.get('unit', 'samples/s')})",
        "base": curve["base"]["words"],
        "formula": curve["formula"],
        "label": curve.get("label"),
        "interval": curve["interval"],
    }


def configuration_sizes_view(docs: Sequence[dict[str, Any]], run_ids: Sequence[int]) -> dict[str, Any]:
    """One configuration's runs at several sizes (registry.selectors.scaling.configuration_sizes) as a curve: the
    curve as protocol.scaling.curve gives it (for the API), its rows for the page, and the sizes present. Fewer than
    two sizes, or runs without a size, are said in words."""
    try:
        curve = scaling.curve(docs)
    except scaling.ScalingError as exc:
        curve = {"error": str(exc), "pointer": exc.pointer, "sizes": []}
    sizes = [s["devices"] for s in curve["sizes"]]
    gap = None if len(sizes) > 1 else "This configuration is stored at one size only: no curve."
    return {"curve": curve, "view": curve_view(curve, run_ids), "sizes": sizes, "gap": gap}
