"""One MLPerf Inference result, read from its files, as a benchreg protocol document (`build_document`).

Every number is a number of the source files (latencies converted ns -> ms by /1e6), or a count stated in
docs/mlperf-import.md; a value that cannot be read is kept verbatim in provenance.origin.unparsed and flagged.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from protocol import rules

from .. import units
from . import audit
from .accuracy import quality_section
from .definitions import unchanged_since
from .logs import SUMMARY_KEYS
from .plan import Build, SourceError
from .rules import (
    ARRIVAL,
    ESTIMATE_PERCENTILE,
    FORMATS,
    MIXED,
    PERCENTILES,
    QUANTIZED,
    SCENARIOS,
    UNSPECIFIED,
    UNSTATED_VARIANT,
    VALIDITY_KEYS,
    Headline,
    RoundRules,
    round_rules,
    weights_format,
)
from .rules import PROTOCOL as MLPERF_PROTOCOL
from .systems import publication_facets, software_section, system_section

# The protocol version these documents are written in: 1.1 adds the fp4/fp6 formats and origin.rules_source
# / mapped_benchmark, which every MLPerf document may carry.
PROTOCOL = MLPERF_PROTOCOL


def build_document(
    src: dict[str, Any],
    system_id: str,
    benchmark: str,
    scenario: str,
    round_name: str | None,
    files: dict[str, str],
    build: Build,
) -> dict[str, Any]:
    detail = src["detail"]
    round_value = round_of(round_name, detail)
    _round_from_loadgen(round_value, round_name, detail, build)
    played = round_rules(round_value)
    model = played.model(benchmark, src.get("model_mapping"))
    count = _sample_count(detail)
    where = {"system_id": system_id, "benchmark": benchmark, "scenario": scenario}
    return {
        "protocol": PROTOCOL,
        "phase": "inference",
        "workload": _workload(benchmark, unchanged_since(round_value, model, scenario).since, detail, scenario),
        "scenario": _scenario(scenario, detail),
        "precision": precision_section(src["measurements"], build),
        "system": system_section(src["system"], build),
        "software": software_section(src["system"], src["measurements"], _settings(detail, src["user_conf"]), build),
        "conditions": _conditions(detail, _audit_checks(src, played, model, build), count, build),
        "metrics": _metrics(detail, scenario, (played, model), count, src["accuracy"], build, src.get("summary")),
        "provenance": _provenance(src, where, (played, model), files, build),
    }


def round_of(round_name: str | None, detail: dict[str, Any]) -> str:
    """'v<major>.<minor>' from the argument, else from LoadGen's version (LoadGen 5.1.x is round v5.1)."""
    if round_name:
        return round_name if round_name.startswith("v") else f"v{round_name}"
    match = re.match(r"^(\d+)\.(\d+)", str(detail["loadgen_version"]))
    if not match:
        raise SourceError(
            f"loadgen_version {detail['loadgen_version']!r} has no major.minor: pass the round", where="detail"
        )
    return f"v{match[1]}.{match[2]}"


def _round_from_loadgen(round_value: str, round_name: str | None, detail: dict[str, Any], build: Build) -> None:
    if not round_name:
        build.warnings.append(
            f"round {round_value} taken from loadgen_version {detail['loadgen_version']!r}: "
            "LoadGen versions can lag the round (pass --round, or keep the repository's "
            "folder name such as inference_results_v5.1)"
        )


def _sample_count(detail: dict[str, Any]) -> int:
    """Number of timed samples: queries × samples per query as LoadGen generated them."""
    queries, per_query = detail.get("result_query_count"), detail.get("generated_samples_per_query", 1)
    if not isinstance(queries, int) or not isinstance(per_query, int) or queries < 1:
        raise SourceError("result_query_count / generated_samples_per_query are not positive integers", where="detail")
    return queries * per_query


def _workload(benchmark: str, defined_since: str, detail: dict[str, Any], scenario: str) -> dict[str, Any]:
    """The workload; its version names the first round whose rules define this benchmark scenario as the result's
    round does (definitions.unchanged_since), so results of rounds that define it alike compare."""
    # MLPerf fixes no batch size: the SUT batches as it likes. batch_size counts the samples in the unit
    # LoadGen times (one sample; one query of 8 in MultiStream) and `batching` says the SUT chose the rest.
    per_query = detail.get("generated_samples_per_query", 1)
    workload: dict[str, Any] = {
        "name": benchmark,
        "version": f"mlperf-inference-{defined_since}",
        "shape": {"batch_size": per_query if scenario == "MultiStream" else 1, "batching": "sut-chosen"},
    }
    total = detail.get("qsl_reported_total_count")
    if isinstance(total, int):
        workload["dataset"] = {"samples": total}
    return workload


def _ms(value: Any) -> float:
    """Nanoseconds -> milliseconds, correctly rounded once (int / 1e6 is exact IEEE division)."""
    if isinstance(value, Decimal):
        return float(value / Decimal(1_000_000))
    return float(value) / 1e6  # exact: LoadGen's ns counts are far below 2**53


def _number(value: Any) -> float | int:
    return float(value) if isinstance(value, Decimal) else value


def _scenario(scenario: str, detail: dict[str, Any]) -> dict[str, Any]:
    # target_qps is left out on purpose: in MLPerf it is the submitter's tuning knob (and /scenario is a
    # controlled field), so it goes to software.settings as loadgen.target_qps.
    out: dict[str, Any] = {"kind": SCENARIOS[scenario], "arrival": ARRIVAL[scenario]}
    slo: dict[str, float] = {}
    if scenario in ("Server", "Interactive") and detail.get("effective_target_latency_percentile") == Decimal("0.99"):
        for key, name in (("requested_server_ttft_latency", "ttft_p99"), ("requested_server_tpot_latency", "tpot_p99")):
            if isinstance(detail.get(key), int) and detail[key] > 0:
                slo[name] = _ms(detail[key])
        target = detail.get("effective_target_latency_ns")
        if isinstance(target, int) and target > 0:
            slo["latency_p99"] = _ms(target)
    if slo:
        out["latency_slo_ms"] = slo
    return out


def precision_section(measurements: dict[str, Any], build: Build) -> dict[str, Any]:
    """weights from weight_data_types (a format of the closed table, or a mixed scheme such as w4a8 giving
    weights and activations); anything else is 'unspecified' and flagged, never the nearest format."""
    raw_weights = str(measurements.get("weight_data_types", "")).strip()
    weights = weights_format(raw_weights)  # the one table, which the referee reads too
    activations = MIXED[raw_weights.lower()][1] if raw_weights.lower() in MIXED else None
    if weights is None:
        weights = UNSPECIFIED
        build.flag("measurements.weight_data_types", raw_weights, "not one format of the protocol's list")
    # MLPerf does not report activation precision (a mixed scheme's name aside); input_data_types is the type
    # of the model's inputs.
    precision: dict[str, Any] = {"weights": weights, "activations": activations or UNSPECIFIED}
    raw_inputs = str(measurements.get("input_data_types", "")).strip()
    if FORMATS.get(raw_inputs.lower()):
        precision["inputs"] = FORMATS[raw_inputs.lower()]
    elif not units.not_stated(raw_inputs):
        build.flag("measurements.input_data_types", raw_inputs, "not one format of the protocol's list")
    transformations = str(measurements.get("weight_transformations", "")).strip()
    mixed = raw_weights.lower() in MIXED
    if weights in QUANTIZED or weights == UNSPECIFIED or mixed or "quant" in transformations.lower():
        note = f"measurements.json weight_data_types {raw_weights!r}"
        if weights in UNSTATED_VARIANT:
            note += "; " + UNSTATED_VARIANT[weights]
        method = "; ".join(t for t in (raw_weights if mixed else "", transformations) if t) or None
        precision["quantization"] = {"method": method, "notes": note}
    return precision


def _settings(detail: dict[str, Any], user_conf: dict[str, Any] | None) -> dict[str, Any]:
    """LoadGen's effective settings (the detail log) and the submitter's user.conf, as switches."""
    settings: dict[str, Any] = {}
    for key, value in detail.items():
        if key.startswith("effective_") or key == "generated_samples_per_query":
            name = "loadgen." + key.removeprefix("effective_")
            if isinstance(value, bool | str):
                settings[name] = value
            elif isinstance(value, int):  # the RNG seeds exceed 2**53: kept exact as text
                settings[name] = value if abs(value) <= 2**53 else str(value)
            elif isinstance(value, Decimal):
                settings[name] = float(value)
    for key, text in (user_conf or {}).get("entries", {}).items():
        settings[f"user.conf:{key}"] = _conf_value(text)
    return settings


def _conf_value(text: str) -> Any:
    if re.fullmatch(r"-?\d+", text) and abs(int(text)) <= 2**53:
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    return text


def _audit_checks(src: dict[str, Any], played: RoundRules, model: str, build: Build) -> dict[str, bool]:
    """The audit tests' verdicts, and the tests the round requires of this model and division that are missing."""
    rule = played.audit_tests(model, str(src["system"].get("division") or ""))
    audit.rule_note(rule, played.round, model, build)
    return audit.checks(src.get("audit") or {}, rule, build)


def _conditions(detail: dict[str, Any], audits: dict[str, bool], count: int, build: Build) -> dict[str, Any]:
    met = detail.get("early_stopping_met")
    steady: dict[str, Any] = {"method": "loadgen-early-stopping", "reached": met if isinstance(met, bool) else None}
    if met is False:
        steady["reasons"] = ["LoadGen's early-stopping criterion was not met (early_stopping_met = false)"]
    # LoadGen logs no warm-up and not the length of the timed window (min_duration is a lower bound).
    return {
        "warmup": None,
        "window": {"seconds": None, "iterations": count, "repetitions": 1},
        "steady_state": steady,
        "validity": _validity(detail, audits, build),
    }


def _validity(detail: dict[str, Any], audits: dict[str, bool], build: Build) -> dict[str, Any]:
    checks = {name: detail[key] for key, name in VALIDITY_KEYS.items() if isinstance(detail.get(key), bool)}
    for key, name in (
        ("early_stopping_ttft_result", "ttft_early_stopping"),
        ("early_stopping_tpot_result", "tpot_early_stopping"),
    ):
        text = str(detail.get(key, "")).strip()
        if text == "* Run successful.":
            checks[name] = True
        elif text:
            build.flag(f"detail.{key}", text, "LoadGen's early-stopping text is not the known success line")
    if isinstance(detail.get("num_errors"), int):
        checks["loadgen_no_errors"] = detail["num_errors"] == 0
    checks.update(audits)  # the audit tests (audit.py): TEST06's test06_* keys as before, audit_test* beside them
    return {"valid": detail["result_validity"] == "VALID", "checks": checks}


def _rate(detail: dict[str, Any], key: str, unit: str) -> dict[str, Any]:
    if key not in detail:
        raise SourceError(f"has no {key} record", where="detail")
    return {"value": _number(detail[key]), "unit": unit}


def _distribution(
    detail: dict[str, Any], count: int, low: str, mean: str, high: str, pct: str, build: Build
) -> dict[str, Any] | None:
    """A LoadGen latency distribution in ms; percentiles the sample count cannot support are left out."""
    dist: dict[str, Any] = {"count": count, "method": "loadgen", "unit": "ms"}
    for name, key in (("min", low), ("mean", mean), ("max", high)):
        if isinstance(detail.get(key), int | Decimal):
            dist[name] = _ms(detail[key])
    if "mean" in dist and not dist.get("min", 0) <= dist["mean"] <= dist.get("max", dist["mean"]):
        # LoadGen's Offline logs can carry a mean outside [min, max] (it times the one query, not samples):
        # an impossible value is not typed; it is kept verbatim and flagged.
        del dist["mean"]
        build.flag(f"detail.{mean}", str(detail[mean]), "a mean outside LoadGen's own [min, max]")
    for text, name in PERCENTILES.items():
        key = pct.format(p=text)
        if isinstance(detail.get(key), int | Decimal) and rules.percentile_allowed(name, count):
            dist[name] = _ms(detail[key])
    return dist if len(dist) > 3 else None


def _published(detail: dict[str, Any], headline: Headline) -> Any:
    """The record MLCommons publishes; a log without it is refused (the checker could not score it either)."""
    if headline.field not in detail:
        raise SourceError(
            f"has no {headline.field} record, which MLCommons publishes ({headline.rule})", where="detail"
        )
    return detail[headline.field]


def _most_precise(
    detail: dict[str, Any], headline: Headline, summary: dict[str, str] | None, build: Build
) -> dict[str, Any]:
    """The detail log with the published rate taken from the summary where the summary prints it with more digits
    (the detail log prints doubles to 6 significant digits: 21605.8 where the summary says 21605.79). cross_check has
    already held the two equal to the detail log's precision; the report says which source was used."""
    label = next((k for k, v in SUMMARY_KEYS.items() if v == headline.field), None)
    printed = (summary or {}).get(label or "")
    logged = detail.get(headline.field)
    if printed is None or isinstance(logged, bool) or not isinstance(logged, int | float | Decimal):
        return detail
    try:
        text = Decimal(printed)
    except ArithmeticError:
        return detail
    if len(text.normalize().as_tuple().digits) <= len(Decimal(str(logged)).normalize().as_tuple().digits):
        return detail
    build.warnings.append(
        f"{headline.field}: {printed} from mlperf_log_summary.txt ('{label}'), which prints more digits than the "
        f"detail log's {logged}"
    )
    return {**detail, headline.field: text}


def _metrics(
    detail: dict[str, Any],
    scenario: str,
    rules_model: tuple[RoundRules, str],
    count: int,
    accuracy: dict[str, Any] | None,
    build: Build,
    summary: dict[str, str] | None = None,
) -> dict[str, Any]:
    played, model = rules_model
    headline = played.headline(model, str(detail["effective_scenario"]), scenario)
    llm = "result_tokens_per_second" in detail or "result_completed_tokens_per_second" in detail
    metrics: dict[str, Any] = {"primary": "throughput"}
    if headline.kind == "rate":
        metrics.update(_throughput_headline(_most_precise(detail, headline, summary, build), headline, played, llm))
    else:
        metrics.update(_latency_headline(detail, headline))
    metrics["latency_ms"] = _latency(detail, scenario, count, build)
    if llm and scenario != "Offline":
        metrics.update(_token_latencies(detail, count, build))
    if accuracy is not None:
        metrics["quality"] = quality_section(accuracy, played.accuracy(model, scenario), model, build)
    return {k: v for k, v in metrics.items() if v is not None}


# The tokens/s record beside a samples/s headline, per LoadGen scenario.
_TOKENS_BESIDE = {"Offline": "result_tokens_per_second", "Server": "result_completed_tokens_per_second"}


def _throughput_headline(detail: dict[str, Any], headline: Headline, played: RoundRules, llm: bool) -> dict[str, Any]:
    """Offline/Server/Interactive: the published rate, and the other rate beside it (samples/s as
    requests/s beside a tokens/s headline, tokens/s beside a samples/s one where the log has it)."""
    loadgen = str(detail["effective_scenario"])
    out = {"throughput": {"value": _number(_published(detail, headline)), "unit": headline.unit}}
    samples = played.data["result_field"].get(loadgen)
    if headline.unit == "tokens/s" and samples in detail:
        out["request_rate"] = _rate(detail, samples, "requests/s")
    elif headline.unit != "tokens/s" and llm and _TOKENS_BESIDE.get(loadgen) in detail:
        out["tokens_per_second"] = _rate(detail, _TOKENS_BESIDE[loadgen], "tokens/s")
    return out


def _latency_headline(detail: dict[str, Any], headline: Headline) -> dict[str, Any]:
    """SingleStream and MultiStream: the published latency, LoadGen's early-stopping estimate
    (latency_estimate_ms) or, where the round publishes an observed percentile, that percentile."""
    value = _published(detail, headline)
    out: dict[str, Any] = {}
    if "result_qps_with_loadgen_overhead" in detail:
        out["throughput"] = _rate(detail, "result_qps_with_loadgen_overhead", "queries/s")
    elif "result_samples_per_second" in detail:
        out["throughput"] = _rate(detail, "result_samples_per_second", "samples/s")
    if headline.field in ESTIMATE_PERCENTILE:
        percentile = ESTIMATE_PERCENTILE[headline.field]
        out["latency_estimate_ms"] = _early_stopping_estimate(detail, headline.field, percentile)
        out["primary"] = "latency_estimate_ms"
        return out
    observed = re.fullmatch(r"result_(\d+\.\d+)_percentile_latency_ns", headline.field)
    if not observed or observed[1] not in PERCENTILES or not isinstance(value, int | Decimal):
        raise SourceError(f"{headline.field} ({headline.rule}) is not a latency the importer can state", where="rules")
    out["primary"] = f"latency_ms.{PERCENTILES[observed[1]]}"
    return out


def _early_stopping_estimate(detail: dict[str, Any], key: str, percentile: str) -> dict[str, Any]:
    return {
        "value": _ms(detail[key]),
        "unit": "ms",
        "percentile": percentile,
        "method": "loadgen-early-stopping",
        "count": detail["result_query_count"],
    }


# LoadGen's record names of each latency distribution: (min, mean, max, percentile pattern)
_SAMPLE_LATENCY = (
    "result_min_latency_ns",
    "result_mean_latency_ns",
    "result_max_latency_ns",
    "result_{p}_percentile_latency_ns",
)
_QUERY_LATENCY = (
    "result_min_query_latency_ns",
    "result_mean_query_latency_ns",
    "result_max_query_latency_ns",
    "result_{p}_percentile_per_query_latency_ns",
)
_FIRST_TOKEN = (
    "result_first_token_min_latency_ns",
    "result_first_token_mean_latency_ns",
    "result_first_token_max_latency_ns",
    "result_first_token_{p}_percentile_latency_ns",
)
_PER_OUTPUT_TOKEN = (
    "result_time_to_output_token_min",
    "result_time_to_output_token_mean",
    "result_time_to_output_token_max",
    "result_time_per_output_token_{p}_percentile_ns",
)


def _token_latencies(detail: dict[str, Any], count: int, build: Build) -> dict[str, Any]:
    """Time to first token and time per output token, as LLM benchmarks outside Offline log them."""
    return {
        "ttft_ms": _distribution(detail, count, *_FIRST_TOKEN, build),
        "tpot_ms": _distribution(detail, count, *_PER_OUTPUT_TOKEN, build),
    }


def _latency(detail: dict[str, Any], scenario: str, count: int, build: Build) -> dict[str, Any] | None:
    if scenario == "MultiStream" and "result_99.00_percentile_per_query_latency_ns" in detail:
        # MultiStream is judged per query (8 samples), so the distribution is over queries.
        return _distribution(detail, detail["result_query_count"], *_QUERY_LATENCY, build)
    return _distribution(detail, count, *_SAMPLE_LATENCY, build)


def _provenance(
    src: dict[str, Any],
    where: dict[str, str],
    rules_model: tuple[RoundRules, str],
    files: dict[str, str],
    build: Build,
) -> dict[str, Any]:
    """provenance; `where` holds the run's system_id, benchmark and scenario."""
    submitter = submitter_of(src["system"])
    origin = _origin(src, submitter, where, rules_model, files, build)
    return {
        "runner": {"name": "mlperf-loadgen", "version": str(src["detail"]["loadgen_version"])},
        "submitter": submitter,
        "source": "import",
        "started_at": str(src["detail"]["test_datetime"]),
        "finished_at": None,
        "origin": origin,
    }


def submitter_of(system: dict[str, Any]) -> str:
    submitter = str(system.get("submitter", "")).strip()
    if not submitter:
        raise SourceError("the system description names no submitter", where="system")
    return submitter


def _origin(
    src: dict[str, Any],
    submitter: str,
    where: dict[str, str],
    rules_model: tuple[RoundRules, str],
    files: dict[str, str],
    build: Build,
) -> dict[str, Any]:
    """provenance.origin: the publication facets, where the run lies, the rules it was read by (and the MLPerf
    model its benchmark folder maps to, when the folder is named otherwise)."""
    played, model = rules_model
    return {
        "kind": "mlperf-inference",
        "round": played.round,
        "submitter": submitter,
        **publication_facets(src["system"], build),
        **where,
        "mapped_benchmark": model if model != where["benchmark"] else None,
        "rules_source": played.rules_source(),
        "loadgen_version": str(src["detail"]["loadgen_version"]),
        "files": files,
        **_origin_notes(src["detail"], build),
    }


def _origin_notes(detail: dict[str, Any], build: Build) -> dict[str, Any]:
    """The accuracy targets applied and the values kept verbatim (LoadGen's power markers among them)."""
    notes: dict[str, Any] = {}
    if build.targets:
        notes["targets"] = dict(sorted(build.targets.items()))
    for key in ("power_begin", "power_end"):  # LoadGen's run markers, written without a time zone
        if isinstance(detail.get(key), str):
            build.unparsed[f"detail.{key}"] = detail[key]
    if build.unparsed:
        notes["unparsed"] = dict(sorted(build.unparsed.items()))
    return notes
