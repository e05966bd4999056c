"""MLPerf Inference results measured by MLCommons' endpoints client (LoadGen++), which writes no LoadGen logs.

From Inference v6.1 a result folder may hold, instead of performance/run_1/mlperf_log_detail.txt,
`performance/result_summary.json` (the run's counts, rates and latency distributions, in ns), `config.yaml` (the
run's configuration: scenario type, load pattern, durations, seeds) and `accuracy/accuracy_results.json` (the
accuracy run's scores). MLCommons' checker (mlcommons/inference tools/submission/submission_checker, endpoints
integration from commit d1515aba, #2609) reads such a folder when it has neither LoadGen log
(loader.py), through parsers/endpoints_parser.py: each endpoint field stands for the LoadGen record named by
ENDPOINTS_MAPPINGS (`qps` -> result_completed_samples_per_sec, `tps` -> result_completed_tokens_per_second,
`latency.early_stopping_percentiles.99.0` -> result_99.00_percentile_latency_ns, ...). Those tables are round
data (rounds/inference_v6.1.json `endpoints`); endpoints_files.py reads the files, this module builds the document:

* the headline is the record the round publishes for the benchmark and scenario (RESULT_FIELD_BENCHMARK_OVERWRITE,
  keyed as for LoadGen runs, else RESULT_FIELD_ENDPOINTS), read from the endpoint's field that stands for it;
* validity is what the checker's endpoint checks judge (the endpoint writes no VALID/INVALID verdict): the
  configured minimum duration, TTFT/TPOT p99 of LLMs in Server/Interactive, the p99 latency constraint of the
  others; the accuracy score is judged only where the checker judges it (accuracy_check.py);
* what the files do not state (a start time: `test_started_at` is 0 in the published files; LoadGen's
  early-stopping verdict) is left null, not invented.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from protocol import rules as protocol_rules

from .documents import (
    precision_section,
    submitter_of,
)  # one reading of weight_data_types and the submitter for both forms
from .endpoints_files import ACCURACY, SUMMARY, Record, config_file, is_endpoints_folder, nested, number
from .plan import Build, SourceError
from .rules import ARRIVAL, LOADGEN_SCENARIO, PERCENTILES, PROTOCOL, SCENARIOS, Metric, RoundRules, round_rules
from .systems import publication_facets, software_section, system_section

__all__ = ["ACCURACY", "SUMMARY", "build_document", "config_file", "is_endpoints_folder"]

# LoadGen's Offline rate records, which the endpoint does not write: it writes one tokens/s figure (`tps`,
# mapped to result_completed_tokens_per_second) whatever the scenario, and the checker computes Offline
# samples/s as n_samples_issued / duration (EndpointsParser: "Infer QPS from count / duration").
OFFLINE_TOKENS = {"result_tokens_per_second": "result_completed_tokens_per_second"}
COMPUTED_RATE = "result_samples_per_second"
# The endpoint's percentile keys ('99.9') -> the protocol's names, as LoadGen's ('99.90') are named.
ENDPOINT_PERCENTILES = {f"{float(k):.1f}": name for k, name in PERCENTILES.items()}


# --- the document ------------------------------------------------------------------------------------------------


def run_scenario(config: dict[str, Any], folder: str, rules: dict[str, Any]) -> str:
    """The scenario the endpoint ran, as the checker maps config.yaml's `type` (map_endpoints_scenario): a
    SingleStream folder is SingleStream; 'online' runs Server, or Interactive in an Interactive folder."""
    kind = str(config.get("type", "")).strip().lower()
    if folder == "SingleStream":
        return folder
    mapped = rules["scenario_types"].get(kind)
    if folder == "Interactive" and mapped in ("Server", "Interactive"):
        return folder
    if mapped != folder:
        wanted = [k for k, v in rules["scenario_types"].items() if v == folder]
        raise SourceError(
            f"type is {config.get('type')!r}, which the checker reads as {mapped or 'no scenario'}: a {folder} "
            f"folder holds a run of type {' or '.join(map(repr, wanted)) or 'none the rules know'}",
            where="config",
        )
    return folder


def build_document(
    src: dict[str, Any],
    where: dict[str, str],
    round_name: str | None,
    files: dict[str, str],
    build: Build,
) -> dict[str, Any]:
    """The result's document from the endpoint's files (`src`: system, summary, config, accuracy, measurements,
    model_mapping); `where` holds system_id, benchmark and scenario. SourceError when the rules or files
    cannot make one (where: 'rules', 'summary', 'config', 'accuracy', 'system')."""
    played, model = _rules_for(src, where, round_name)
    scenario = where["scenario"]
    record = Record(played.endpoints, src["summary"], src["config"])
    count = int(number(src["summary"]["n_samples_completed"], "n_samples_completed"))
    return {
        "protocol": PROTOCOL,
        "phase": "inference",
        "workload": {
            "name": where["benchmark"],
            "version": f"mlperf-inference-{played.round}",
            "shape": {"batch_size": 1, "batching": "sut-chosen"},
        },
        "scenario": _scenario(played, model, scenario),
        "precision": precision_section(src["measurements"], build),
        "system": system_section(src["system"], build),
        "software": software_section(src["system"], src["measurements"], _settings(src, record), build),
        "conditions": _conditions(src, played, model, scenario, record, count, build),
        "metrics": _metrics(src, played, model, scenario, record, count, build),
        "provenance": _provenance(src, played, model, where, files, build),
    }


def _rules_for(src: dict[str, Any], where: dict[str, str], round_name: str | None) -> tuple[RoundRules, str]:
    """The round's rules and the MLPerf model of the folder, once the checker would take the folder as an
    endpoints result of that round: a round with endpoints rules, an allowed model, a run of the folder's scenario."""
    if not round_name:
        raise SourceError(
            "an endpoints result states no MLPerf round (its version is the client's): pass --round or keep the "
            "results repository's folder name such as inference_results_v6.1",
            where="rules",
        )
    played = round_rules(round_name if round_name.startswith("v") else f"v{round_name}")
    model = played.model(where["benchmark"], src.get("model_mapping"))
    if model not in played.endpoints["allowed_models"]:
        raise played.missing(f"endpoints submissions of {model!r} (ENDPOINTS_ALLOWED_MODELS: the checker refuses it)")
    run_scenario(src["config"], where["scenario"], played.endpoints)
    return played, model


def _scenario(played: RoundRules, model: str, scenario: str) -> dict[str, Any]:
    """The scenario and the latency bounds the round judges it by (the endpoint logs none it was given)."""
    out: dict[str, Any] = {"kind": SCENARIOS[scenario], "arrival": ARRIVAL[scenario]}
    slo: dict[str, float] = {}
    limits = played.data["llm_latency_limits"].get(model, {}).get(scenario)
    if limits and model in played.endpoints["llm_models"]:
        slo = {"ttft_p99": limits["ttft"] / 1e6, "tpot_p99": limits["tpot"] / 1e6}
    else:
        target = played.config.get("latency-constraint", {}).get(model, {}).get(scenario)
        if target:
            slo["latency_p99"] = target / 1e6
    if slo:
        out["latency_slo_ms"] = slo
    return out


SETTINGS = {  # software.settings name -> dotted path in config.yaml
    "endpoints.type": "type",
    "endpoints.load_pattern": "settings.load_pattern.type",
    "endpoints.target_qps": "settings.load_pattern.target_qps",
    "endpoints.min_duration_ms": "settings.runtime.min_duration_ms",
    "endpoints.max_duration_ms": "settings.runtime.max_duration_ms",
    "endpoints.n_samples_to_issue": "settings.runtime.n_samples_to_issue",
    "endpoints.scheduler_random_seed": "settings.runtime.scheduler_random_seed",
    "endpoints.dataloader_random_seed": "settings.runtime.dataloader_random_seed",
    "endpoints.streaming": "model_params.streaming",
    "endpoints.early_stopping": "settings.early_stopping.enabled",
    "endpoints.api_type": "endpoint_config.api_type",
}
SUMMARY_SETTINGS = ("n_samples_issued", "n_samples_completed", "n_samples_failed", "duration_ns", "state", "version")


def _settings(src: dict[str, Any], record: Record) -> dict[str, Any]:
    """The run's configuration and the endpoint's counts, as switches (seeds beyond 2**53 kept as text)."""
    found = {name: nested(src["config"], path) for name, path in SETTINGS.items()}
    found.update({f"endpoints.{key}": src["summary"].get(key) for key in SUMMARY_SETTINGS})
    return {name: _setting(value) for name, value in found.items() if _setting(value) is not None}


def _setting(value: Any) -> Any:
    if isinstance(value, bool | str):
        return value[:2000] if isinstance(value, str) else value
    if isinstance(value, int):
        return value if abs(value) <= 2**53 else str(value)
    if isinstance(value, float | Decimal) and math.isfinite(float(value)):
        return float(value)
    return None


def _conditions(
    src: dict[str, Any], played: RoundRules, model: str, scenario: str, record: Record, count: int, build: Build
) -> dict[str, Any]:
    summary, config = src["summary"], src["config"]
    seconds = number(summary["duration_ns"], "duration_ns") / 1e9
    warmup = nested(config, "settings.warmup")
    enabled = warmup.get("enabled") if isinstance(warmup, dict) else None
    requests = nested(summary, "run_config.warmup.n_requests")
    return {
        "warmup": None if enabled is None else {"iterations": requests if enabled else 0, "seconds": None},
        "window": {"seconds": seconds, "iterations": count, "repetitions": 1},
        # the endpoint estimates early-stopping percentiles but writes no verdict on them
        "steady_state": {"method": "loadgen-early-stopping", "reached": None},
        "validity": _validity(played, model, scenario, record, build),
    }


def _validity(played: RoundRules, model: str, scenario: str, record: Record, build: Build) -> dict[str, Any]:
    """The checker's endpoint checks (performance_check.py): every one it applies, each True or False."""
    rules, checks = played.endpoints, {}
    if model not in rules["min_duration_exempt"]:
        configured = record("effective_min_duration_ms")
        checks["min_duration_satisfied"] = (
            number(configured, "settings.runtime.min_duration_ms", "config") >= rules["min_duration_ms"]
        )
    if model in rules["llm_models"] and scenario in ("Server", "Interactive"):
        limits = played.data["llm_latency_limits"].get(model, {}).get(scenario)
        if limits is None:
            raise played.missing(f"TTFT/TPOT limits for {model!r} {scenario} (LLM_LATENCY_LIMITS)")
        ttft = number(record("result_first_token_99.00_percentile_latency_ns"), "ttft p99 early-stopping estimate")
        tpot = number(record("result_time_per_output_token_99.00_percentile_ns"), "tpot p99 early-stopping estimate")
        checks["ttft_p99_within_limit"] = ttft < limits["ttft"]  # llm_check: strictly below
        checks["tpot_p99_within_limit"] = tpot < limits["tpot"]
    else:
        target = played.config.get("latency-constraint", {}).get(model, {}).get(scenario)
        if target:
            p99 = number(record("result_99.00_percentile_latency_ns"), "latency p99 early-stopping estimate")
            checks["latency_constraint_satisfied"] = p99 <= target  # latency_check: above the target fails
    build.warnings.append(
        "the endpoint writes no VALID/INVALID verdict: validity is MLCommons' endpoint checks repeated here ("
        + ", ".join(f"{k} {v}" for k, v in checks.items())
        + ")"
    )
    return {"valid": all(checks.values()), "checks": checks}


def _headline_field(played: RoundRules, model: str, scenario: str) -> tuple[str, str]:
    """The LoadGen record the round publishes for an endpoints result, and the rule that names it: the
    benchmark's RESULT_FIELD_BENCHMARK_OVERWRITE keyed as for a LoadGen run (an Interactive result under Server),
    else RESULT_FIELD_ENDPOINTS. MLCommons' v6.1 table publishes tokens/s this way for deepseek-r1 Offline,
    Server and Interactive (the endpoint's `tps`), and `qps` for qwen3-vl-235b-a22b."""
    loadgen = LOADGEN_SCENARIO.get(scenario, scenario)
    override = played.data["result_field_benchmark_overwrite"].get(model, {})
    if loadgen in override:
        return override[loadgen], f"RESULT_FIELD_BENCHMARK_OVERWRITE[{played.round}][{model}][{loadgen}]"
    field = played.endpoints["result_field"].get(scenario.lower())
    if field is None:
        raise played.missing(f"endpoints headline for {scenario} (RESULT_FIELD_ENDPOINTS)")
    return field, f"RESULT_FIELD_ENDPOINTS[{played.round}][{scenario.lower()}]"


def _headline_value(field: str, record: Record) -> tuple[float, str]:
    """The headline record's value in the endpoint's files, and the field it was read from."""
    if field == COMPUTED_RATE:
        issued = number(record("generated_query_count"), "n_samples_issued")
        seconds = number(record("generated_query_duration"), "duration_ns") / 1e9
        if seconds <= 0:
            raise SourceError("duration_ns is not positive: no rate can be computed", where="summary")
        return issued / seconds, "n_samples_issued / (duration_ns / 1e9)"
    source = OFFLINE_TOKENS.get(field, field)
    name = record.field(source)
    return number(record(source), f"{name or source}"), str(name)


def _metrics(
    src: dict[str, Any], played: RoundRules, model: str, scenario: str, record: Record, count: int, build: Build
) -> dict[str, Any]:
    summary = src["summary"]
    field, rule = _headline_field(played, model, scenario)
    value, read_from = _headline_value(field, record)
    unit = played.data["headline_units"][field]
    build.warnings.append(f"headline {field} ({rule}) read from the endpoint's {read_from}")
    latency = _distribution(summary.get("latency"), count)
    if unit["kind"] == "rate":
        metrics = _rates(value, unit["unit"], summary, model in played.endpoints["llm_models"])
    else:
        metrics = _latency_headline(field, rule, value, latency, count)
    metrics["latency_ms"] = latency
    if scenario != "Offline":
        metrics["ttft_ms"] = _distribution(summary.get("ttft"), count)
        metrics["tpot_ms"] = _distribution(summary.get("tpot"), count)
    metrics["quality"] = _quality(src.get("accuracy"), played, model, scenario, build)
    return {k: v for k, v in metrics.items() if v is not None}


def _rates(value: float, unit: str, summary: dict[str, Any], llm: bool) -> dict[str, Any]:
    """The published rate, and the other rate beside it: requests/s (`qps`) beside tokens/s, tokens/s (`tps`)
    beside samples/s for the checker's LLMs (the endpoint writes a `tps` for every model, meaningful for those)."""
    metrics: dict[str, Any] = {"primary": "throughput", "throughput": {"value": value, "unit": unit}}
    if unit == "tokens/s" and summary.get("qps") is not None:
        metrics["request_rate"] = {"value": number(summary["qps"], "qps"), "unit": "requests/s"}
    elif summary.get("tps") is not None and llm:
        metrics["tokens_per_second"] = {"value": number(summary["tps"], "tps"), "unit": "tokens/s"}
    return metrics


def _latency_headline(
    field: str, rule: str, value: float, latency: dict[str, Any] | None, count: int
) -> dict[str, Any]:
    """A latency headline: the mean (RESULT_FIELD_ENDPOINTS singlestream) as `latency_ms.mean`, or an
    early-stopping percentile estimate (llama3.1-8b-edge's result_90.00_percentile_latency_ns)."""
    if field == "result_mean_latency_ns":
        if latency is None or "mean" not in latency:
            raise SourceError("latency.avg is absent: the published mean latency cannot be read", where="summary")
        return {"primary": "latency_ms.mean"}
    percentile = PERCENTILES.get(field.removeprefix("result_").split("_", 1)[0])
    if percentile is None:
        raise SourceError(f"{field} ({rule}) is not a latency the importer can state", where="rules")
    estimate = {"value": value / 1e6, "unit": "ms", "percentile": percentile, "count": count}
    return {"primary": "latency_estimate_ms", "latency_estimate_ms": {**estimate, "method": "loadgen-early-stopping"}}


def _distribution(found: Any, count: int) -> dict[str, Any] | None:
    """An endpoint distribution (ns) in ms: min, avg as mean, max, and the observed percentiles the sample count
    supports; None when the endpoint wrote none (ttft and tpot are {} in Offline)."""
    if not isinstance(found, dict) or not found:
        return None
    # The endpoints client (MLCommons' LoadGen++) does not state how it computes percentiles: 'loadgen' names the
    # load generator family that wrote them (a note in provenance says so), not a method the files spell out.
    dist: dict[str, Any] = {"count": count, "method": "loadgen", "unit": "ms"}
    for name, key in (("min", "min"), ("mean", "avg"), ("max", "max")):
        if found.get(key) is not None:
            dist[name] = number(found[key], key) / 1e6
    for key, value in (found.get("percentiles") or {}).items():
        label = ENDPOINT_PERCENTILES.get(str(key))
        if label and protocol_rules.percentile_allowed(label, count):
            dist[label] = number(value, f"percentile {key}") / 1e6
    return dist if len(dist) > 3 else None


def _quality(
    accuracy: dict[str, Any] | None, played: RoundRules, model: str, scenario: str, build: Build
) -> dict[str, Any] | None:
    """metrics.quality from the accuracy run's score, as the checker reads it (the first score of
    accuracy_scores) and judges it: against the first accuracy target for the models it judges, accepted
    otherwise (accuracy_check.py). The score is named by the round's first accuracy metric, the one the
    checker compares it with."""
    if accuracy is None:
        return None
    scores = [s.get("score") for s in accuracy.get("accuracy_scores", []) if isinstance(s, dict)]
    scores = [s for s in scores if s is not None]
    if not scores:
        build.warnings.append("accuracy_results.json has no score: MLPerf's checker fails such a result")
        return None
    score = number(scores[0], "accuracy_scores[0].score", "accuracy")
    head: Metric = played.accuracy(model, scenario)[0]
    judged = model in played.endpoints["accuracy_judged"]
    if judged:
        build.targets[head.name] = {"min": head.min, "max": head.max}
        passed = head.min is None or score >= head.min
    else:
        passed = True
        build.unparsed["accuracy.verdict"] = (
            f"MLCommons' checker accepts an endpoint's accuracy score for {model} without comparing it to a target "
            f"(accuracy_check.py judges endpoint scores only for {', '.join(played.endpoints['accuracy_judged'])})"
        )
    return {
        "metric": head.name,
        "value": score,
        "target_ratio": head.ratio if judged else None,
        "reference_value": head.reference if judged else None,
        "reference_precision": None,
        "passed": passed,
        "values": {head.name: score},
    }


def _provenance(
    src: dict[str, Any], played: RoundRules, model: str, where: dict[str, str], files: dict[str, str], build: Build
) -> dict[str, Any]:
    submitter = submitter_of(src["system"])
    started = src["summary"].get("test_started_at")
    if started not in (None, 0):  # the published files write 0: no start time
        build.unparsed["endpoints.test_started_at"] = str(started)[:200]
    origin: dict[str, Any] = {
        "kind": "mlperf-inference",
        "round": played.round,
        "submitter": submitter,
        **publication_facets(src["system"], build),
        **where,
        "mapped_benchmark": model if model != where["benchmark"] else None,
        "rules_source": f"{played.rules_source()} endpoints",
        "loadgen_version": None,  # no LoadGen ran: the endpoints client's version is the runner's
        "files": files,
    }
    build.unparsed["endpoints.percentile_method"] = (
        "the endpoints client writes its percentiles without naming the method; they are labelled 'loadgen'"
    )
    if build.targets:
        origin["targets"] = dict(sorted(build.targets.items()))
    if build.unparsed:
        origin["unparsed"] = dict(sorted(build.unparsed.items()))
    return {
        "runner": {"name": "mlperf-endpoints", "version": str(src["summary"].get("version") or "unknown")[:100]},
        "submitter": submitter,
        "source": "import",
        "started_at": None,
        "finished_at": None,
        "origin": origin,
    }
