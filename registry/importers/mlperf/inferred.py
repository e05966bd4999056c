"""MLPerf's inferred edge results: an Offline or MultiStream figure MLPerf derives from a SingleStream (or, for
Offline, a MultiStream) run instead of measuring it, stored as a document labelled derived.

MLPerf's rule (mlcommons/inference tools/submission/submission_checker/checks/performance_check.py,
`inferred_check` and `get_inferred_result`; the same code in the v4.x-v5.1 single-file checker): a result folder
whose LoadGen log ran another scenario holds an inferred result, allowed only for edge systems and only for these
pairs. Its figure is computed from the log in that folder, which MLPerf's preprocessing copies from the measured
folder (in Inference v5.1, 537 of 537 inferred folders hold a byte-identical copy of their measured sibling's log).

The document built here is the measured run's document with the scenario, headline and workload shape of the
inferred result, and `provenance.origin.derivation` naming the rule and the measured run (its folder and document
digest), so the registry can label it and never count it as independent evidence.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import protocol

from .plan import SourceError
from .rules import ARRIVAL, SCENARIOS, RoundRules
from .rules import PROTOCOL as MLPERF_PROTOCOL


@dataclass(frozen=True)
class Rule:
    """One of MLPerf's inference pairs: the folder's scenario, the scenario LoadGen ran, and the rule in words."""

    scenario: str
    from_scenario: str
    words: str


RULES = {
    ("Offline", "SingleStream"): Rule(
        "Offline",
        "SingleStream",
        "Offline samples/s = result_qps_without_loadgen_overhead of the SingleStream run (MLPerf submission checker "
        "get_inferred_result); the latencies and energy are the SingleStream run's",
    ),
    ("MultiStream", "SingleStream"): Rule(
        "MultiStream",
        "SingleStream",
        "MultiStream 99th-percentile latency = 8 x the SingleStream run's early-stopping 99th-percentile latency "
        "estimate (early_stopping_latency_ms; MLPerf submission checker get_inferred_result); energy is the "
        "SingleStream run's",
    ),
    ("Offline", "MultiStream"): Rule(
        "Offline",
        "MultiStream",
        "Offline samples/s = samples per query x 1000 / mean query latency (ms) of the MultiStream run (MLPerf "
        "submission checker get_inferred_result); the latencies and energy are the MultiStream run's",
    ),
}

# Measured folders are read before the folders inferred from them (a MultiStream folder can be either).
READ_ORDER = {"SingleStream": 0, "MultiStream": 1}
# MLPerf counts 8 samples per query when it infers MultiStream from SingleStream, whatever the log says.
MULTISTREAM_SAMPLES = 8


def rule_for(scenario: str, loadgen_scenario: Any) -> Rule | None:
    """MLPerf's rule when the folder `scenario` holds a run of `loadgen_scenario` that MLPerf infers from; None for
    a measured result (the same scenario, or Interactive run as Server)."""
    return RULES.get((scenario, str(loadgen_scenario)))


def edge_problem(system: dict[str, Any], rule: Rule | None = None, played: RoundRules | None = None) -> str | None:
    """Why MLPerf refuses to infer this result for this system, or None. Whom the round's checker lets infer
    the pair is round data (`RoundRules.inferred_pair`: the three pairs here are edge-only in every round so
    far); without the round's rules, edge systems only, as every checker so far."""
    allowed = played.inferred_pair(rule.from_scenario, rule.scenario) if played and rule else "edge"
    if allowed == "any":
        return None
    if allowed is None and played and rule:
        return f"round {played.round}'s checker infers no {rule.scenario} result from a {rule.from_scenario} run"
    system_type = str(system.get("system_type", ""))
    if "edge" in system_type.lower():
        return None
    return f"MLPerf infers results only for edge systems; the system description's system_type is {system_type!r}"


def derive(
    measured_as_run: dict[str, Any],
    detail: dict[str, Any],
    rule: Rule,
    *,
    from_location: str,
    from_document: dict[str, Any] | None,
) -> dict[str, Any]:
    """The inferred result's document.

    `measured_as_run` is this folder's files read as the run LoadGen made (a document of `rule.from_scenario`);
    `from_document` is the measured folder's own document, whose digest the derivation names (None when that folder
    is not in the imported tree: the derivation then names its location only). Raises SourceError
    when the log lacks what the rule reads, or the rule makes no figure (MLPerf: not enough samples).
    """
    doc = copy.deepcopy(measured_as_run)
    doc["scenario"] = {"kind": SCENARIOS[rule.scenario], "arrival": ARRIVAL[rule.scenario]}
    doc["workload"]["shape"]["batch_size"] = MULTISTREAM_SAMPLES if rule.scenario == "MultiStream" else 1
    doc["metrics"] = _metrics(doc["metrics"], detail, rule)
    origin = doc["provenance"]["origin"]
    origin["scenario"] = rule.scenario
    origin["derivation"] = {
        "kind": "mlperf-inferred",
        "rule": rule.words,
        "from_scenario": rule.from_scenario,
        "from_location": from_location,
        "from_digest": protocol.digest(from_document) if from_document is not None else None,
    }
    doc["protocol"] = MLPERF_PROTOCOL
    return doc


def _metrics(metrics: dict[str, Any], detail: dict[str, Any], rule: Rule) -> dict[str, Any]:
    """The run's metrics with the headline the rule makes; what no longer describes the result is left out."""
    out = {k: v for k, v in metrics.items() if k not in ("latency_estimate_ms", "throughput", "request_rate")}
    if rule.scenario == "MultiStream":
        # A SingleStream run's per-sample latencies are not MultiStream's per-query ones: only the rule's figure.
        out.pop("latency_ms", None)
        out["latency_estimate_ms"] = _multistream_latency(detail)
        out["primary"] = "latency_estimate_ms"
    else:
        out["throughput"] = {"value": _offline_rate(detail, rule), "unit": "samples/s"}
        out["primary"] = "throughput"
    return out


def _multistream_latency(detail: dict[str, Any]) -> dict[str, Any]:
    estimate = _number(detail, "early_stopping_latency_ms")
    if estimate == 0:
        raise SourceError("early_stopping_latency_ms is 0: LoadGen processed too few queries for an estimate")
    return {
        "value": float(estimate * MULTISTREAM_SAMPLES / 1_000_000),  # the checker's (latency x 8) / MS_TO_NS
        "unit": "ms",
        "percentile": "p99",
        "method": "loadgen-early-stopping",
        "count": detail["result_query_count"],
    }


def _offline_rate(detail: dict[str, Any], rule: Rule) -> float:
    if rule.from_scenario == "SingleStream":
        return float(_number(detail, "result_qps_without_loadgen_overhead"))
    per_query = _number(detail, "effective_samples_per_query")
    mean_ms = _number(detail, "result_mean_query_latency_ns") / 1_000_000
    if mean_ms <= 0:
        raise SourceError("result_mean_query_latency_ns is not positive: no Offline rate can be inferred")
    return float(per_query * 1000 / mean_ms)


def _number(detail: dict[str, Any], key: str) -> float:
    value = detail.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise SourceError(f"has no numeric {key} record, which MLPerf's inference rule reads", where="detail")
    return float(value)
