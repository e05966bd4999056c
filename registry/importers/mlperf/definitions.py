"""Since which round a benchmark has been defined as it is in a given round: what makes results of different
rounds comparable.

MLCommons keeps a benchmark unchanged across rounds unless its rules change, and compares results of an unchanged
benchmark across rounds itself. Whether a benchmark is unchanged is read from the rule tables (MLCommons'
submission checker constants, rounds/inference_<round>.json), never assumed: a benchmark scenario's
*definition* is what those tables fix for it (CONFIG_TABLES, RULE_TABLES and the published record: the accuracy
bounds and the reference they are written from, the sample counts, the minimum query count, the latency bounds).
Two rounds define it alike when both list the model and the scenario for it, and every one of these tables that
both rounds' checkers carry gives it the same value.

A table one round's checker does not carry at all (`dataset-size` before v5.1, `accuracy-sample-count` before
v6.0, `accuracy-delta-perc` in v4.0, the LLM latency limits in v4.0) states nothing for that round, so it cannot
show a change; what it fixes that LoadGen logs stays controlled in the document itself (the dataset's sample count
in `workload.dataset.samples`, the latency bounds in `scenario.latency_slo_ms`).

`unchanged_since` walks back from a round, one published round at a time, while the definition is the same; the
importer writes the first round of that run into `workload.version` (`mlperf-inference-v4.1` for llama2-70b-99
Server read in v5.1), so the comparability contract, which controls the workload's version, compares results of
rounds that define the benchmark alike and refuses the others on `workload.version`. The round a result was
published in stays in `provenance.origin.round` (disclosed beside the result).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .rules import LOADGEN_SCENARIO, ROUNDS_DIR, RoundRules, RuleMissing, round_rules

# MODEL_CONFIG tables of the checker that define a benchmark (keyed by model, some then by scenario).
CONFIG_TABLES = (
    "accuracy-target",
    "accuracy-upper-limit",
    "accuracy-delta-perc",
    "dataset-size",
    "accuracy-sample-count",
    "performance-sample-count",
    "min-queries",
    "latency-constraint",
)
# Top-level tables of the rule file (the checker's other constants) that define one.
RULE_TABLES = ("accuracy_target_factors", "accuracy_upper_limit_factors", "llm_latency_limits")

SCENARIO_KEYS = frozenset({"SingleStream", "MultiStream", "Server", "Offline", "Interactive", "default"})

# How the checker's LLM latency limits named the Server scenario before they were keyed by scenario (v4.1 under
# "conversational", v5.0 with the limits written directly under the model): in those rounds Interactive was a
# benchmark of its own (llama2-70b-interactive-99), so these limits bound the Server scenario only.
LLM_SERVER_FORMS = ("conversational",)


@dataclass(frozen=True)
class Since:
    """The first round of the unbroken run of rounds, ending at `round`, whose rules define the benchmark scenario
    alike; `stopped` says why the walk stopped there (in words, for the docs and the tests)."""

    round: str
    since: str
    stopped: str


def previous_round(round_name: str) -> str | None:
    """The Inference round published before `round_name`: since v1.0 MLPerf Inference publishes vN.0 and vN.1 each
    year (v5.0 follows v4.1, v5.1 follows v5.0); before that came v0.5 and v0.7. None before v0.5, the first."""
    major, minor = (int(n) for n in round_name[1:].split("."))
    if major >= 1:
        return f"v{major}.{minor - 1}" if minor >= 1 else ("v0.7" if major == 1 else f"v{major - 1}.1")
    return "v0.5" if (major, minor) == (0, 7) else None


def definition(rules: RoundRules, model: str, scenario: str) -> dict[str, Any]:
    """What round `rules` fixes for `model` in the scenario folder `scenario` ('Offline', 'Interactive', ...):
    {table: value}; a table the round's checker does not carry at all is left out (it states nothing)."""
    loadgen = LOADGEN_SCENARIO.get(scenario, scenario)
    out: dict[str, Any] = {}
    for table in CONFIG_TABLES:
        if table in rules.config:
            out[table] = _for_scenario(rules.config[table].get(model), scenario, loadgen)
    for table in RULE_TABLES:
        # An empty table (v4.0's LLM latency limits) is a constant the checker did not use yet: no statement.
        if rules.data.get(table):
            value = rules.data[table].get(model)
            out[table] = (
                _llm_limits(value, scenario)
                if table == "llm_latency_limits"
                else _for_scenario(value, scenario, loadgen)
            )
    out["published record"] = rules.headline(model, loadgen, scenario).field
    return out


def _for_scenario(value: Any, scenario: str, loadgen: str) -> Any:
    """A table's entry for one scenario, where the entry is keyed by scenario (the folder's, LoadGen's, the
    checker's 'default'); the whole entry otherwise."""
    if isinstance(value, dict) and value and set(value) <= SCENARIO_KEYS:
        return {key: value[key] for key in sorted({scenario, loadgen, "default"}) if key in value} or None
    return value


def _llm_limits(value: Any, scenario: str) -> Any:
    """The TTFT/TPOT limits bounding `scenario`, whichever form the round wrote them in (see LLM_SERVER_FORMS)."""
    if not isinstance(value, dict):
        return None
    if set(value) <= SCENARIO_KEYS:
        return value.get(scenario)
    if scenario != "Server":
        return None
    for form in LLM_SERVER_FORMS:
        if form in value:
            return value[form]
    return value  # {"tpot": ..., "ttft": ...}: v5.0's form


def scenarios_of(rules: RoundRules, model: str) -> set[str]:
    """The scenarios a round's rules list for a model, required or optional, in any category."""
    return {
        scenario
        for table, entries in rules.config.items()
        if table.startswith(("required-scenarios-", "optional-scenarios-"))
        for scenario in entries.get(model, [])
    }


def _differences(newer: dict[str, Any], older: dict[str, Any]) -> list[str]:
    """The tables both rounds carry that give the benchmark different values."""
    return [table for table in newer if table in older and newer[table] != older[table]]


@functools.cache
def unchanged_since(round_name: str, model: str, scenario: str) -> Since:
    """Walk back from `round_name` while the previous round's rules list `model` and define it alike."""
    current = definition(round_rules(round_name), model, scenario)
    since = round_name
    while True:
        before = previous_round(since)
        if before is None or not (ROUNDS_DIR / f"inference_{before}.json").is_file():
            return Since(round_name, since, f"no rule table for the round before {since} ({before})")
        rules = round_rules(before)
        if model not in rules.config["models"]:
            return Since(round_name, since, f"{model} is not a model of {before}")
        if scenario not in scenarios_of(rules, model):
            return Since(round_name, since, f"{before} has no {scenario} scenario for {model}")
        try:
            older = definition(rules, model, scenario)
        except RuleMissing:  # the earlier round publishes no figure for this scenario
            return Since(round_name, since, f"{before} publishes no {scenario} figure for {model}")
        changed = _differences(current, older)
        if changed:
            return Since(round_name, since, f"{before}'s rules differ in {', '.join(changed)}")
        since = before
