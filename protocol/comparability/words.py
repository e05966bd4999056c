"""Comparisons in words a buyer reads: values, differences, metric names, arm labels, blocking reasons in brief,
and the sentences that carry a ratio and its interval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache, partial
from typing import Any

from .. import statistics as st
from ..numbers import Style, number
from ..rules import DISTRIBUTION_METRICS
from .definition import contract_document
from .roles import controlled_projection, field_name, known_axis, same, split_pointer
from .setting_words import setting_words


@cache
def axis_label(axis: str) -> str:
    """The contract's words for an axis ('system under test', 'software stack', 'numeric precision', 'equal
    quality'); the axis's own name when the contract has no such axis."""
    return str((contract_document()["axes"].get(axis) or {}).get("label") or axis)


def display(value: Any) -> str:
    """A value as a buyer reads it: 'not stated' for absent or null, yes/no for booleans."""
    if value is None:
        return "not stated"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, list):
        return ", ".join(display(v) for v in value) or "none"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def difference_words(name: str, values: Sequence[str], names: Sequence[str] | None = None) -> str:
    """'precision.weights: bf16 vs int8', or with more runs 'bf16 (run 11, run 10) vs int8 (run 9)': `names` are
    the runs' names as the reader sees them (the registry's ids); without them, positions ('runs 1, 2')."""
    if len(values) == 2:
        return f"{name}: {values[0]} vs {values[1]}"
    runs: dict[str, list[int]] = {}
    for i, v in enumerate(values, start=1):
        runs.setdefault(v, []).append(i)
    if names is not None and len(names) == len(values):
        parts = [f"{v} ({', '.join(names[i - 1] for i in ix)})" for v, ix in runs.items()]
    else:
        parts = [f"{v} (run{'s' if len(ix) > 1 else ''} {', '.join(map(str, ix))})" for v, ix in runs.items()]
    return f"{name}: {' vs '.join(parts)}"


METRIC_WORDS = {
    "throughput": "throughput",
    "tokens_per_second": "token throughput",
    "request_rate": "request rate",
    "goodput": "goodput",
    "latency_ms": "latency",
    "ttft_ms": "time to first token",
    "tpot_ms": "time per output token",
    "step_time_ms": "step time",
    "time_to_quality": "time to quality",
}


def metric_words(metric: str) -> str:
    """'latency_ms.p99' -> 'p99 latency', 'step_time_ms' -> 'median step time', 'throughput' -> 'throughput'."""
    name, _, stat = metric.partition(".")
    noun = METRIC_WORDS.get(name, name.replace("_", " "))
    if name not in DISTRIBUTION_METRICS:
        return noun  # rates ("throughput", "goodput") and time to quality have one value
    return f"{'median' if stat in ('', 'p50') else stat} {noun}"


def _base_label(
    doc: Mapping[str, Any], axis: str, config: Mapping[str, Any], differing: Sequence[str], counts: bool = False
) -> str:
    """The arm's words. `counts`: arms differ in accelerator count, so even a single one is written "1×"."""
    if axis == "iso-quality":  # the system in words, then the number format it chose to meet the target
        weights = (doc.get("precision") or {}).get("weights")
        return _base_label(doc, "system", config, differing, counts) + (f", {weights}" if weights else "")
    if axis == "system":
        system = doc.get("system") or {}
        accels = [
            (f"{a['count']}× " if isinstance(a.get("count"), int) and (a["count"] > 1 or counts) else "")
            + (a.get("model") or "unnamed accelerator")
            for a in system.get("accelerators") or []
        ]
        cpu = (system.get("host") or {}).get("cpu_model")
        what = ", ".join(accels) or (f"CPU {cpu}" if cpu else "host CPU (model not stated)")
        nodes = system.get("nodes")
        return what + (f", {nodes} nodes" if isinstance(nodes, int) and nodes > 1 else "")
    parts = [_setting_words(f, config.get(f)) for f in differing[:4]]
    return ", ".join(parts) + (", …" if len(differing) > 4 else "") or f"{axis} as tested"


# A field's words in a label where its name alone is not a word a reader knows ("batch_size" -> "batch 32").
_FIELD_WORDS = {
    "batch_size": "batch {}",
    "cpu_model": "CPU {}",
    "count": "{}×",
    "nodes": "{} nodes",
    "weights": "{} weights",
    "activations": "{} activations",
    "kv_cache": "{} KV cache",
    "accumulation": "{} accumulation",
    "granularity": "{} granularity",
    "library": "{}",
}
_VERSIONED = ("frameworks", "packages", "runtimes")  # "torch 2.13.0": a name and its version


def _setting_words(name: str, value: Any) -> str:
    """A label's words for one field: 'torch 2.13.0' for a framework or package, a setting in words ('BLAS
    threads 2', 'samples per query 1,024': setting_words), 'batch 32' or 'int8 weights' for a known field, else the
    field's last name in words ('granularity per-channel'), never its whole path."""
    parent, _, last = name.rpartition(".")
    if name.endswith('"]'):  # software.settings["torch.num_threads"]
        parent, _, last = name[:-2].rpartition('["')
        return setting_words(last, None if value == "not stated" else value)
    if parent.endswith(_VERSIONED):
        return f"{last} {display(value)}"
    if parent.endswith("settings"):
        return setting_words(last, None if value == "not stated" else value)
    if parent.endswith("quantization") and last == "method":
        return _quantization_words(value)
    if last in _FIELD_WORDS:
        return _FIELD_WORDS[last].format(display(value))
    return f"{last.replace('_', ' ')} {display(value)}"


def _quantization_words(method: Any) -> str:
    """'awq quantization'; a method that names quantization itself as it is (MLPerf's weight_transformations is
    often the word "quantization"): never "quantization quantization"."""
    if method is None or method == "not stated":
        return "quantization method not stated"
    words = display(method)
    return words if "quantiz" in words.lower() else f"{words} quantization"


def labels_for(docs: Sequence[Mapping[str, Any]], axis: str, configs: Sequence[dict[str, Any]]) -> list[str]:
    """One label per arm, unique: the configuration in words, plus what tells apart arms that read alike. Words
    are joined by commas, never nested in parentheses, so a label reads the same inside a sentence's brackets."""
    names = sorted(set().union(*configs))
    differing = (
        [n for n in names if not same([configs[0].get(n)] + [c.get(n) for c in configs[1:]])]
        if len(configs) > 1
        else []
    )
    counts = {a.get("count") for d in docs for a in (d.get("system") or {}).get("accelerators") or []}
    labels = [_base_label(d, axis, c, differing, len(counts) > 1) for d, c in zip(docs, configs, strict=True)]
    _by_settings(labels, configs, differing)
    _by_conditions(labels, docs, axis)
    for label, clash in _clashes(labels):  # still equal (more than 3 fields differ): number them, never merge them
        for n, i in enumerate(clash[1:], start=2):
            labels[i] = f"{label} #{n}"
    return labels


def _by_settings(labels: list[str], configs: Sequence[dict[str, Any]], differing: Sequence[str]) -> None:
    """Arms that read alike get the settings that tell them apart (up to 3)."""
    for label, clash in _clashes(labels):
        local = [n for n in differing if not same([configs[i].get(n) for i in clash])]
        if local:
            for i in clash:
                labels[i] = ", ".join([label, *(_setting_words(n, configs[i].get(n)) for n in local[:3])])


def field_words(pointer: str, value: Any) -> str:
    """One field's value in a label's words, from its JSON pointer and its value (or the value's `display` text):
    'steady state not reached', 'batch 8', 'int8 weights', 'BLAS threads 2', never 'steady_state.reached=no'."""
    if pointer == "/conditions/steady_state/reached":
        if value is None or value == "not stated":
            return "steady state not stated"
        return f"steady state {'' if value in (True, 'yes') else 'not '}reached"
    return _setting_words(field_name(split_pointer(pointer)), value)


def _by_conditions(labels: list[str], docs: Sequence[Mapping[str, Any]], axis: str) -> None:
    """Still alike: the same configuration under different controlled conditions. A decision groups runs across
    keys (one never reached steady state): the controlled fields that differ tell them apart."""
    for label, clash in _clashes(labels):
        controlled = [controlled_projection(docs[i], axis) for i in clash]
        pointers = [p for p in sorted(set().union(*controlled)) if not same([c.get(p) for c in controlled])]
        for i, fields in zip(clash, controlled, strict=True):
            labels[i] = ", ".join([label, *(field_words(p, fields.get(p)) for p in pointers[:3])])


def _clashes(labels: Sequence[str]) -> list[tuple[str, list[int]]]:
    """Each label more than one arm has, with those arms' indices in order."""
    at: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        at.setdefault(label, []).append(i)
    return [(label, clash) for label, clash in at.items() if len(clash) > 1]


def arm_labels(docs: Sequence[Mapping[str, Any]], axis: str, configs: Sequence[dict[str, Any]]) -> list[str]:
    """One unique label per configuration (docs[i] is a run of configs[i]), as comparisons label their arms."""
    return labels_for(docs, known_axis(axis), configs)


BLOCKER_WORDS = {
    "unsteady": "never reached steady state",
    "overloaded": "was overloaded",
    "invalid": "failed its validity checks",
}


def blockers_in_brief(reasons: Sequence[Mapping[str, Any]]) -> str:
    """'run 5 and run 8 never reached steady state; run 3 was overloaded': which runs block a verdict and how, in
    one clause for the statement. The full reasons (why each run was unsteady) stay in `reasons`."""
    by_code: dict[str, list[str]] = {}
    for reason in reasons:
        who = str(reason.get("name") or f"run {reason.get('run')}").split(" (")[0]
        names = by_code.setdefault(str(reason.get("code")), [])
        if who not in names:
            names.append(who)
    parts = []
    for code, names in by_code.items():
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        parts.append(f"{who} {BLOCKER_WORDS.get(code, code)}")
    return "; ".join(parts)


# A ratio with three significant figures, trailing zeros kept (1.00, 0.793, 8.50, 1260); "?" when there is none.
_ratio = partial(number, style=Style.RATIO, missing="?")


def ratio_words(subject: str, baseline: str, metric: str, lower: bool, r: st.Ratio, family: int) -> str:
    what = metric_words(metric)
    # With several comparisons against one baseline each interval is wider (Bonferroni): together they
    # are 95% intervals, which is what the words say.
    label = f"{st.CONFIDENCE:.0%} CI" if family == 1 else f"simultaneous {st.CONFIDENCE:.0%} CI"
    ci = f"{label} {_ratio(r.ci_low)}–{_ratio(r.ci_high)}" if r.ci_low is not None else "no interval"
    if r.value is None:
        return f"{subject}'s {what} cannot be set against {baseline}'s: {r.method}"
    if lower:
        change = abs(1.0 - r.value) * 100.0
        direction = "lower" if r.value < 1.0 else "higher"
        return (
            f"{subject}'s {what} is {_ratio(r.value)}× {baseline}'s, {change:.0f}% {direction} ({ci}; lower is better)"
        )
    return f"{subject} delivers {_ratio(r.value)}× {baseline}'s {what} ({ci})"


def single_configuration_words(label: str, est: st.Estimate) -> str:
    """'all runs repeat one configuration, <label>: <metric> <value> <unit> (<interval>); there is nothing to
    compare it against': the conclusion when every run is a repetition of one setup."""
    ci = (
        f" ({est.confidence:.0%} CI {_ratio(est.ci_low)}–{_ratio(est.ci_high)})"
        if est.ci_low is not None
        else f" (no interval: {est.evidence})"
    )
    return (
        f"all runs repeat one configuration, {label}: {metric_words(est.metric)} "
        f"{_ratio(est.value)} {est.unit or ''}{ci}; there is nothing to compare it against"
    )
