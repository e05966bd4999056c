"""A serving sweep for readers: its levels as table rows, the level used at a target and what was not measured,
and the frontier chart. Pure presentation over protocol.serving: the runs come from registry.selectors.sweeps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocol import serving
from protocol.numbers import Style, number
from registry.presentation import charts_serving


def _ci(estimate: Mapping[str, Any]) -> str:
    if estimate.get("ci_low") is None or estimate.get("ci_high") is None:
        return "no interval"
    return f"95% CI {number(estimate['ci_low'], Style.SIGNIFICANT)}–{number(estimate['ci_high'], Style.SIGNIFICANT)}"


def level_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per measured level: load, tokens/s per user, tokens/s per accelerator (each with its interval or
    'no interval'), its runs, and whether it is on the frontier, used at the target, or the knee."""
    levels = summary.get("levels") or []
    front = set(summary.get("frontier") or [])
    best = (summary.get("best") or {}).get("index")
    knee = (summary.get("knee") or {}).get("index")
    bound = not (summary.get("knee") or {}).get("reached")  # no load failed: the knee is the highest one measured
    return [
        {
            "load": lv["words"],
            "per_user": number(lv["per_user"]["value"], Style.SIGNIFICANT),
            "per_user_ci": _ci(lv["per_user"]),
            "per_accelerator": number(lv["per_accelerator"]["value"], Style.SIGNIFICANT),
            "per_accelerator_ci": _ci(lv["per_accelerator"]),
            "runs": lv["runs"],
            "frontier": i in front,
            "used": i == best,
            "knee": i == knee,
            "knee_bound": i == knee and bound,
        }
        for i, lv in enumerate(levels)
    ]


def sweep_view(
    docs: Sequence[Mapping[str, Any]], refs: Sequence[Mapping[str, Any]], label: str, min_per_user: float | None
) -> dict[str, Any]:
    """A run page's sweep: rows, the frontier chart, and (with a target) the best level's sentence."""
    levels = serving.levels(docs, refs)
    target = serving.Target(min_per_user) if min_per_user is not None else None
    summary = serving.sweep_summary(levels, target)
    best = serving.best_at(levels, target) if target is not None else None
    sentence = None
    if best is not None and target is not None:
        sentence = (
            f"At {target.short()}, {label} delivers {number(best.level.per_accelerator.value, Style.SIGNIFICANT)} "
            f"output tokens/s per accelerator ({_ci(best.level.per_accelerator.as_dict())}) at {best.level.words}: "
            f"{best.between}."
            if best.level is not None
            else f"At {target.short()}: {best.reason}."
        )
    return {
        "label": label,
        "rows": level_rows(summary),
        "summary": summary,
        "sentence": sentence,
        "chart": charts_serving.frontier_chart([{"label": label, "sweep": summary}], min_per_user),
        "x": serving.PER_USER_WORDS,
        "y": serving.THROUGHPUT_WORDS,
        "method": summary["method"],
    }


def comparison_view(
    arms: Sequence[tuple[str, Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]], min_per_user: float | None
) -> dict[str, Any] | None:
    """Two or more configurations' sweeps (label, documents, refs) at one interactivity: the frontier chart and the
    first arm against each other arm in words: why not, where the contract says they did not measure the same thing
    (another request shape, model or arrival process); else, with a target, the ratio. None unless two arms have a
    sweep."""
    swept = [(label, docs, serving.levels(docs, refs)) for label, docs, refs in arms]
    swept = [(label, docs, lv) for label, docs, lv in swept if len(lv) >= 2]
    if len(swept) < 2:
        return None
    target = serving.Target(min_per_user) if min_per_user is not None else None
    series: list[dict[str, Any]] = [
        {"label": label, "sweep": serving.sweep_summary(lv, target)} for label, _, lv in swept
    ]
    (first, first_docs, first_levels), *others = swept
    refusals, sentences = [], []
    for label, docs, lv in others:
        refusal = serving.not_like_for_like([first_docs[0], docs[0]], [first, label])
        if refusal is not None:
            refusals.append(refusal)
        elif target is not None:
            sentences.append(serving.compare_at(first_levels, first, lv, label, target).sentence)
    return {
        "chart": charts_serving.frontier_chart(series, min_per_user),
        "refusals": refusals,
        "sentences": sentences,
        "arms": [{"label": s["label"], "rows": level_rows(s["sweep"])} for s in series],
        "min_per_user": min_per_user,
        "x": serving.PER_USER_WORDS,
        "y": serving.THROUGHPUT_WORDS,
    }


def sweep_lines(answer: Mapping[str, Any]) -> list[str]:
    """Per candidate measured as a sweep, where its capacity was read; per candidate with a provisioned-power
    figure, that figure with its label and assumption."""
    out = []
    for c in answer.get("candidates") or []:
        if c.get("sweep"):
            out.append(f"{c['label']}: capacity read at {c['sweep']['knee']['words']}.")
        mw = c.get("per_provisioned_mw") or {}
        if mw.get("value") is not None:
            out.append(
                f"{c['label']}: {number(mw['value'], Style.SIGNIFICANT)} {mw['unit']} ({mw['label']}; "
                f"{mw['assumption']})."
            )
    return out
