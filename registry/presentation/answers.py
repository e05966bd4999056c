"""A decision's answer in the words a buyer reads first: one text for the decision page and the signed report.

`conclusion` says who meets the question, the cheapest with the price it rests on, what the candidates lack (a
caveat every candidate shares is said once, for all of them) and what would change the answer. The page opens with
it and the PDF's cover prints it; both call this module, so they cannot drift apart. The other words both print
live here too: the frontier in sentences, each candidate's own caveats, what is shown beside a candidate's number
(in words, never a field's path), and the precisions a candidate set spans.

Read only from the stored answer (protocol.decisions): nothing here computes a figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocol.decisions import GAP_TITLES as INFERENCE_GAP_TITLES
from protocol.decisions import VERDICT_WORDS
from protocol.decisions.training import BUDGET_WORDS
from protocol.decisions.training import GAP_TITLES as TRAINING_GAP_TITLES
from protocol.numbers import Style, number
from protocol.statistics import MIN_VALUES

# Each gap's short name, of inference and training answers alike.
GAP_TITLES = {**INFERENCE_GAP_TITLES, **TRAINING_GAP_TITLES}

# What a decision's gap means for the buyer: (said of one candidate, said of several), and what closes it.
GAP_WORDS = {
    "no-load-sweep": (
        "was measured at one offered load only, so the capacity used is a lower bound",
        "were measured at one offered load only, so the capacity used is a lower bound",
        "Measure the candidates you consider at several offered loads, so that their capacity is known rather "
        "than a lower bound.",
    ),
    "no-knee": (
        "had no measured load fail the objectives, so the capacity used is a lower bound",
        "had no measured load fail the objectives, so the capacity used is a lower bound",
        "Measure at higher offered loads, until one fails an objective, so that the capacity is known.",
    ),
    "too-few-repetitions": (
        "has fewer than 3 runs, too few for a firm verdict",
        "have fewer than 3 runs, too few for a firm verdict",
        "Ask for at least 3 runs of each candidate you consider.",
    ),
    "no-steady-state": (
        "has runs that never showed a steady speed",
        "have runs that never showed a steady speed",
        "Measure again the candidates whose runs did not settle.",
    ),
    "no-energy": (
        "has no energy measured with a meter",
        "have no energy measured with a meter",
        "Measure energy with a meter if energy matters to you.",
    ),
    "no-price": (
        "has no price stated, so no cost",
        "have no price stated, so no cost",
        "State an hourly price for each candidate you would buy.",
    ),
    "preview": (
        "is a preview system, not yet available",
        "are preview systems, not yet available",
        "Check availability with the vendors before relying on them.",
    ),
    "invalid": (
        "has a run that failed its validity checks",
        "have a run that failed its validity checks",
        "Leave out, or re-measure, the candidates whose runs failed.",
    ),
    "quality-not-met": (
        "did not meet the quality target",
        "did not meet the quality target",
        "Leave out the candidates that missed the quality target.",
    ),
    "no-measured-quality": (
        "has no measured quality of its outputs",
        "have no measured quality of their outputs",
        "Measure the quality of the served model's outputs if it may differ between candidates.",
    ),
    "no-time-to-train": (
        "measured training throughput only, no time to train",
        "measured training throughput only, no time to train",
        "Train the candidates you consider to the quality target, so that their time to train is measured.",
    ),
    "one-size": (
        "was measured at one size only, so its scaling efficiency is unknown",
        "were measured at one size only, so their scaling efficiency is unknown",
        "Measure the configurations you consider at more than one size (a scaling plan) to know how they scale.",
    ),
}
CHECK_ASSUMPTIONS = "Check the assumptions (demand, headroom, prices) before you buy."
CHECK_TRAINING_ASSUMPTIONS = "Check the assumptions (runs per period, availability, spares, prices) before you buy."


def conclusion(answer: Mapping[str, Any]) -> dict[str, Any]:
    """{"headline": str, "why": [str], "next": [str], "tone": clear|tentative, "scope": str}: how many candidates
    meet the question, the cheapest that does (or, when none can be confirmed, at face value) with the price it
    rests on, the gaps that keep the answer open (each said once, naming who has it) and what closes them."""
    candidates = answer.get("candidates") or []
    n = len(candidates)
    scope = scope_words(candidates)
    if not n:
        return {
            "headline": "No configuration in the registry answers this question yet.",
            "why": [],
            "next": ["Measure the systems you consider on this workload and scenario, then ask again."],
            "tone": "tentative",
            "scope": scope,
        }
    meets = [c for c in candidates if c.get("meets") == "meets"]
    misses = [c for c in candidates if c.get("meets") == "misses"]
    training = answer.get("phase") == "training"
    goal = "time budget" if training else "objectives"
    cost_field = "cost_per_run" if training else "cost_per_million"
    if meets:
        # labels hold commas ("MI300X, fp8"): candidates are set apart by semicolons, as the frontier lists them
        labels = _short_labels(candidates) if training else [str(c["label"]) for c in candidates]
        named = "; ".join(labels[i] for i, c in enumerate(candidates) if c.get("meets") == "meets")
        headline = f"{_of(len(meets), n)} meet the question's {goal}: {named}."
        cheapest = _cheapest(meets, "Of those, the lowest cost", cost_field)
    else:
        who = "The one candidate cannot" if n == 1 else f"None of the {n} candidates can"
        headline = f"{who} be confirmed to meet the question's {goal} yet"
        headline += f" ({len(misses)} miss{'es' if len(misses) == 1 else ''} it)." if misses and training else ""
        headline += f" ({len(misses)} miss{'es' if len(misses) == 1 else ''} them)." if misses and not training else ""
        headline += "." if not misses else ""
        cheapest = _cheapest(
            [c for c in candidates if c.get("meets") != "misses"], "Taken at face value, the lowest cost", cost_field
        )
    found = _gaps(candidates)
    why = ([cheapest] if cheapest else []) + [_gap_line(code, labels, n) for code, labels in found.items()]
    then = [GAP_WORDS[code][2] for code in found]
    if not meets:
        then.insert(0, "Do not buy on this answer alone.")
    return {
        "headline": headline,
        "why": why,
        "next": then or [CHECK_TRAINING_ASSUMPTIONS if training else CHECK_ASSUMPTIONS],
        "tone": "clear" if meets else "tentative",
        "scope": scope,
    }


def _short_labels(candidates: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each candidate's label; a training candidate's by its size alone ("8x H100, global batch 3200", before " — "
    and what sets its configuration apart) where those alone tell every candidate apart: the headline stays short
    and the table names them whole."""
    labels = [str(c["label"]) for c in candidates]
    short = [label.split(" — ")[0] for label in labels]
    return short if len(set(short)) == len(short) else labels


def _of(k: int, n: int) -> str:
    return _all(n) if k == n and n > 1 else f"{k} of the {n} candidates"


def _all(n: int) -> str:
    return "Both candidates" if n == 2 else f"All {n} candidates"


def _gap_line(code: str, labels: Sequence[str], n: int) -> str:
    """ "All 3 candidates have no energy measured with a meter." / "L40S, bf16 (1 of the 3 candidates) has …"."""
    one, several, _ = GAP_WORDS[code]
    if len(labels) == n and n > 1:
        return f"{_all(n)} {several}."
    if n == 1:
        return f"The one candidate {one}."
    who = "; ".join(labels)
    return f"{who} ({len(labels)} of the {n} candidates) {one if len(labels) == 1 else several}."


def _cheapest(candidates: Sequence[Mapping[str, Any]], lead: str, field: str = "cost_per_million") -> str:
    """ "<lead> per million tokens: <label>, 0.59 USD with 6 systems (from 49.6 USD per system-hour …)"; a training
    answer's `field` is cost_per_run ("… per run: …")."""
    costed = [c for c in candidates if isinstance((c.get(field) or {}).get("value"), int | float)]
    if not costed:
        return ""
    best = min(costed, key=lambda c: c[field]["value"])
    cost = best[field]
    currency, _, per = str(cost.get("unit") or "").partition(" per ")
    systems = (best.get("systems_needed") or {}).get("value")
    fleet = f" with {systems} system{'s' if systems != 1 else ''}" if isinstance(systems, int) else ""
    price = f" ({cost['price']})" if cost.get("price") else ""
    what = f"{lead} per {per}" if per else lead
    return f"{what}: {best['label']}, {number(cost['value'], Style.GENERAL)} {currency}{fleet}{price}."


def _gaps(candidates: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Candidate labels per gap code (codes with words), in the order GAP_WORDS lists them."""
    found: dict[str, list[str]] = {code: [] for code in GAP_WORDS}
    for c in candidates:
        for gap in c.get("gaps") or []:
            if gap.get("code") in found and c["label"] not in found[gap["code"]]:
                found[gap["code"]].append(c["label"])
    return {code: labels for code, labels in found.items() if labels}


# ------------------------------------------------------------------------------------------ said once


def shared_gap_codes(candidates: Sequence[Mapping[str, Any]]) -> list[str]:
    """The gap codes every one of several candidates has: said once for all of them (the conclusion says them), so
    no candidate's row repeats them."""
    if len(candidates) < 2:
        return []
    codes = [[str(g.get("code")) for g in c.get("gaps") or []] for c in candidates]
    return [code for code in dict.fromkeys(codes[0]) if all(code in own for own in codes[1:])]


def own_gap_titles(candidate: Mapping[str, Any], shared: Sequence[str]) -> list[str]:
    """The candidate's gaps that not every candidate shares, by their short names (for a table cell)."""
    return [
        GAP_TITLES.get(str(g.get("code")), str(g.get("message") or g.get("code")))
        for g in candidate.get("gaps") or []
        if g.get("code") not in shared
    ]


def shared_gap_titles(shared: Sequence[str]) -> list[str]:
    return [GAP_TITLES.get(code, code.replace("-", " ")) for code in shared]


def candidate_sentences(answer: Mapping[str, Any]) -> list[str]:
    """One sentence per candidate, verdict first, with its own caveats in the same sentence. A caveat every
    candidate has in the same words is left out here: `shared_caveats` says it once."""
    candidates = answer.get("candidates") or []
    shared = set(shared_caveats(candidates))  # a caveat said alike by all is said once, not in each sentence
    on_frontier = set((answer.get("frontier") or {}).get("labels") or [])
    out = []
    for c in candidates:
        systems = c.get("systems_needed") or {}
        count = "no count of systems"
        if systems.get("value"):
            interval = f"95% CI {systems['ci_low']}–{systems['ci_high']}" if systems.get("ci_low") else "no interval"
            count = f"{systems['value']} system{'s' if systems['value'] != 1 else ''} ({interval})"
        own = [str(g.get("message")) for g in c.get("gaps") or [] if g.get("message") not in shared]
        verdict = (
            str((c.get("budget") or {}).get("words") or BUDGET_WORDS.get(str(c.get("meets")), c.get("meets")))
            if answer.get("phase") == "training"
            else VERDICT_WORDS.get(c.get("meets"), str(c.get("meets")))
        )
        acc = (c.get("accelerator_hours") or {}).get("value")
        count += f", {number(acc, Style.GENERAL)} accelerator-hours per run" if isinstance(acc, int | float) else ""
        out.append(
            f"{c['label']}: {verdict}; {count}"
            + (" — on the frontier" if c["label"] in on_frontier else "")
            + (f"; capacity is {c['capacity_basis']}" if c.get("capacity_published") else "")
            + (f". Caveats: {'; '.join(own)}." if own else ".")
        )
    return out


def shared_caveats(candidates: Sequence[Mapping[str, Any]]) -> list[str]:
    """The gaps every one of several candidates has, said once: in the candidates' own words where they all say
    it alike, else by the gap's short name (each candidate's sentence keeps its own particulars)."""
    out = []
    for code in shared_gap_codes(candidates):
        said = {str(g.get("message")) for c in candidates for g in c.get("gaps") or [] if g.get("code") == code}
        out.append(said.pop() if len(said) == 1 else GAP_TITLES.get(code, code.replace("-", " ")))
    return out


# ------------------------------------------------------------------------------------------ frontier


def frontier_lines(frontier: Mapping[str, Any]) -> list[str]:
    """The Pareto frontier in sentences: its members, what is left out of it and why, and which members the
    evidence cannot order (tied within noise, or no interval to weigh the difference against)."""
    criteria = ", ".join(frontier.get("criteria") or []) or "no criterion"
    lines = [f"Pareto frontier over {criteria}: {'; '.join(frontier.get('labels') or []) or 'empty'}."]
    lines += [
        f"{str(d['criterion']).capitalize()} is left out of the frontier: no candidate has it."
        for d in frontier.get("dropped") or []
    ]
    lines += [
        f"{u['label']} is not placed on the frontier: no {', '.join(u.get('lacking') or [])}."
        for u in frontier.get("unplaced") or []
    ]
    lines += [f"{t[0]} and {t[1]} are tied within noise." for t in frontier.get("tied") or []]
    return lines + cannot_tell_lines(frontier.get("cannot_tell") or [], frontier.get("labels") or [])


# Beyond this many pairs the pairs are said as one sentence: 6 candidates without intervals are 15 pairs, a page of
# near-identical sentences that hides the one fact (these candidates have no interval).
PAIRS_SAID_ONE_BY_ONE = 2


def cannot_tell_lines(pairs: Sequence[Mapping[str, Any]], members: Sequence[str] = ()) -> list[str]:
    """Frontier members (`members`) the evidence cannot order because one of a pair has no 95% interval: pair by
    pair when they are few, else once, naming the candidates without an interval."""
    if len(pairs) <= PAIRS_SAID_ONE_BY_ONE:
        return [f"{u['labels'][0]} and {u['labels'][1]} cannot be told apart: {u['why']}." for u in pairs]
    involved = list(dict.fromkeys(label for u in pairs for label in u["labels"]))
    bare = list(dict.fromkeys(label for u in pairs for label in u.get("without_interval") or [])) or involved
    runs = f"(fewer than {MIN_VALUES} runs)"
    if set(bare) == set(involved):
        which = (
            f"its {len(involved)} candidates"
            if set(involved) == set(members)
            else f"{len(involved)} of its candidates ({'; '.join(involved)})"
        )
        return [
            f"The frontier cannot order {which} ({len(pairs)} pairs): none has a 95% interval "
            f"{runs}, so no difference between them can be weighed against run-to-run noise; repeat the runs to "
            "decide between them."
        ]
    has = "has" if len(bare) == 1 else "have"
    return [
        f"The frontier cannot order {len(bare)} of its candidates against the others ({len(pairs)} pairs): "
        f"{'; '.join(bare)} {has} no 95% interval {runs}, so no difference involving "
        f"{'it' if len(bare) == 1 else 'them'} can be weighed against run-to-run noise; repeat the runs to decide."
    ]


# ------------------------------------------------------------------------------------------ beside, precisions

# What the contract shows beside a candidate's number, in words: a reader never sees a field's path.
BESIDE_WORDS = {
    "precision.weights": "weights",
    "precision.activations": "activations",
    "precision.kv_cache": "KV cache",
    "metrics.quality.metric": "quality measured as",
    "metrics.quality.value": "quality",
    "metrics.quality.target_ratio": "quality target (ratio of the reference)",
    "metrics.quality.passed": "quality target passed",
}


def beside_words(field: str) -> str:
    """ "metrics.quality.value" -> "quality"; a field this module does not know by its last name, in words."""
    if field in BESIDE_WORDS:
        return BESIDE_WORDS[field]
    return field.rpartition(".")[2].replace("_", " ")


def beside_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """[{"field", "value"}] with each field in words."""
    return [{"field": beside_words(str(b.get("field"))), "value": str(b.get("value"))} for b in rows]


def candidate_precisions(candidates: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each distinct precision of the candidates ("bf16", "fp8 weights with bf16 activations"), in order: a mixed set
    is named whole, never by its first candidate."""
    out: list[str] = []
    for c in candidates:
        config = c.get("configuration") or {}
        words = precision_words(config.get("precision.weights"), config.get("precision.activations"))
        if words and words not in out:
            out.append(words)
    return out


UNSTATED = ("unspecified", "not stated", "None")


def precision_words(weights: Any, activations: Any) -> str:
    """ "bf16" when weights and activations agree, "fp8 weights with bf16 activations" when they differ, "nvfp4
    weights" when the activations are not stated; "" when neither is."""
    stated = [str(v) if v and str(v) not in UNSTATED else "" for v in (weights, activations)]
    weights, activations = stated
    if weights and activations and weights != activations:
        return f"{weights} weights with {activations} activations"
    if weights and not activations:
        return f"{weights} weights"
    return weights or (f"{activations} activations" if activations else "")


def scope_words(candidates: Sequence[Mapping[str, Any]]) -> str:
    """ "3 candidate configurations, in bf16 and fp8 weights with bf16 activations" (every precision named)."""
    n = len(candidates)
    if not n:
        return "No candidate configuration."
    what = "1 candidate configuration" if n == 1 else f"{n} candidate configurations"
    found = candidate_precisions(candidates)
    if not found:
        return what + "."
    if len(found) == 1:
        return f"{what}, {'all ' if n > 1 else ''}in {found[0]}."
    return f"{what}, in {', '.join(found[:-1])} and {found[-1]}."
