"""Semantic rules: what a document can satisfy the schema with and still be wrong about (docs/protocol.md, section 4).

Each rule yields Errors and reads the document defensively: it may run on a document that also failed the
schema, because every problem is reported at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import datetime
from itertools import pairwise
from typing import Any

import numpy as np

from . import checks_distributed, rules
from .checks_collectives import (
    collective_bandwidth_follows,
    collective_names_its_workload,
    collective_summaries_follow,
    topology_holds_together,
)
from .checks_serving import (
    gamma_arrival_states_burstiness,
    requests_add_up,
    streaming_metrics_need_streaming,
    sweep_level_states_its_load,
)
from .errors import Error, pointer
from .lookup import value_at
from .parsing import MAX_EXACT_INTEGER
from .percentiles import NUMPY_METHOD, quantile
from .schema import FROZEN_SCHEMA_FILES, known_minors, minor_number, schema_errors

Rule = Callable[[dict[str, Any]], Iterator[Error]]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


_UNREPRESENTABLE = {
    "non-finite-number": "NaN and Infinity are not numbers JSON allows",
    "integer-out-of-range": "integers beyond ±2^53 cannot be represented exactly in the canonical form",
}


def _unrepresentable(value: Any) -> str | None:
    """The code of the problem a scalar has in the canonical form, or None (the one test both walks share)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else "non-finite-number"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_EXACT_INTEGER:
        return "integer-out-of-range"
    return None


def numbers_are_representable(doc: Any, path: tuple[str | int, ...] = ()) -> Iterator[Error]:
    """No NaN/Infinity (possible when a caller passes Python values) and no integer beyond 2**53."""
    if path == () and _all_representable(doc):
        return  # nearly every document: one flat walk, and the pointers are built only when there is a problem
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from numbers_are_representable(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from numbers_are_representable(value, (*path, i))
    elif (code := _unrepresentable(doc)) is not None:
        yield Error(pointer(path), code, _UNREPRESENTABLE[code])


def _all_representable(doc: Any) -> bool:
    """Whether `numbers_are_representable` would find nothing (a stack, not recursive generators: ~5× faster)."""
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif _unrepresentable(value) is not None:
            return False
    return True


def fields_fit_declared_minor(doc: dict[str, Any]) -> Iterator[Error]:
    """A document declaring an earlier minor uses only what that minor had (docs/protocol.md, section 1).

    The live schema accepts every minor's fields, so a 1.0 document using a 1.1 field or format would otherwise be
    stored as 1.0 and read by a 1.0 reader that refuses it. Each use is found by validating against the declared
    minor's frozen schema: whatever it refuses and the live schema accepts was added later, and the error names the
    first minor that has it.
    """
    declared = _declared_minor(doc)
    if declared not in FROZEN_SCHEMA_FILES:
        return  # the live minor, a later one (its unknown fields are refused as such) or no valid version at all
    older = schema_errors(doc, declared)  # nearly always [] (the fast validator alone)
    live = _problems(doc, rules.PROTOCOL_VERSION_LATEST) if older else set()
    for err in older:
        if (err.pointer, err.code) in live:
            continue  # wrong under every minor: the schema's own error says so
        needed = _first_minor_accepting(doc, err, declared)
        yield Error(err.pointer, "needs-newer-minor", _newer_minor_words(doc, err, declared, needed))


def _declared_minor(doc: dict[str, Any]) -> str | None:
    """The "1.N" of `/protocol` when it is a well-formed version of this protocol's major 1, else None."""
    declared = doc.get("protocol")
    prefix = f"{rules.PROTOCOL_NAME}/1."
    if not isinstance(declared, str) or not declared.startswith(prefix) or not declared[len(prefix) :].isdigit():
        return None
    return declared.removeprefix(f"{rules.PROTOCOL_NAME}/")


def _problems(doc: dict[str, Any], version: str) -> set[tuple[str, str]]:
    return {(e.pointer, e.code) for e in schema_errors(doc, version)}


def _first_minor_accepting(doc: dict[str, Any], err: Error, declared: str) -> str:
    later = [v for v in known_minors() if minor_number(v) > minor_number(declared)]
    return next(v for v in later if (err.pointer, err.code) not in _problems(doc, v))


def _newer_minor_words(doc: dict[str, Any], err: Error, declared: str, needed: str) -> str:
    says = f"this document declares {rules.PROTOCOL_NAME}/{declared}: declare {rules.PROTOCOL_NAME}/{needed} to use it"
    if err.code == "unknown-field":
        name = err.pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        return f"'{name}' is a field of protocol {needed}, not {declared}; {says}"
    value = _at(doc, err.pointer)
    shown = f"'{value}'" if isinstance(value, str) else repr(value)
    return f"{shown} is a value of protocol {needed} here, not of {declared}; {says}"


def _at(doc: Any, at: str) -> Any:
    """The value a JSON pointer names, through objects and arrays; None where there is none."""
    for part in at.split("/")[1:] if at else []:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict):
            doc = doc.get(key)
        elif isinstance(doc, list) and key.isdigit() and int(key) < len(doc):
            doc = doc[int(key)]
        else:
            return None
    return doc


def scenario_fits_phase(doc: dict[str, Any]) -> Iterator[Error]:
    phase, kind = doc.get("phase"), value_at(doc, "scenario", "kind")
    allowed = rules.SCENARIOS_BY_PHASE.get(phase) if isinstance(phase, str) else None
    if allowed is not None and isinstance(kind, str) and kind not in allowed:
        yield Error(
            "/scenario/kind",
            "scenario-phase-mismatch",
            f"'{kind}' is not a scenario of the {phase} phase (allowed: {', '.join(sorted(allowed))})",
        )


def required_metrics_present(doc: dict[str, Any]) -> Iterator[Error]:
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        return
    phase, kind = doc.get("phase"), value_at(doc, "scenario", "kind")
    for options in _needed_metrics(phase, kind):
        if not any(metrics.get(name) is not None for name in options):
            message = f"{phase} runs must report {' or '.join(options)}"
            yield Error(f"/metrics/{options[0]}", "missing-required-metric", message)


def _needed_metrics(phase: Any, kind: Any) -> list[tuple[str, ...]]:
    """The metrics a run of this phase and scenario must report (one of each tuple)."""
    if phase == "inference" and kind in ("single-stream", "multi-stream"):
        # Latency is what these scenarios measure; MLPerf's MultiStream logs carry no rate at all.
        return [("latency_ms", "latency_estimate_ms")]
    if phase == "inference":
        return [("throughput",), ("latency_ms", "ttft_ms")]
    if phase == "training" and kind == "time-to-quality":
        return [("time_to_quality",)]
    if phase == "training":
        return [("throughput",), ("step_time_ms",)]
    if phase == "collective":
        return [("collectives",)]
    return []


def primary_metric_present(doc: dict[str, Any]) -> Iterator[Error]:
    primary = value_at(doc, "metrics", "primary")
    metrics = doc.get("metrics")
    if not isinstance(primary, str) or not isinstance(metrics, dict):
        return
    name, _, field = primary.partition(".")
    value = metrics.get(name)
    if value is None or (field and value_at(value, field) is None):
        yield Error("/metrics/primary", "primary-metric-absent", f"the headline metric '{primary}' is not in metrics")
    elif not field and name in rules.DISTRIBUTION_METRICS:
        yield Error(
            "/metrics/primary",
            "primary-metric-ambiguous",
            f"name the statistic of '{name}' that is the headline, e.g. '{name}.p99'",
        )


def percentiles_ordered_and_supported(doc: dict[str, Any]) -> Iterator[Error]:
    where = [(name,) for name in (*rules.DISTRIBUTION_METRICS, *rules.SERVING_DISTRIBUTIONS)]
    for path in [*where, ("client", "dispatch_lag_ms")]:
        dist = value_at(doc, "metrics", *path)
        if not isinstance(dist, dict):
            continue
        base = "/metrics/" + "/".join(path)
        yield from _too_few_for_percentiles(base, dist)
        yield from _out_of_order(base, dist)


def _too_few_for_percentiles(base: str, dist: dict[str, Any]) -> Iterator[Error]:
    count = dist.get("count")
    if isinstance(count, int):
        for key, minimum in rules.MIN_SAMPLES_FOR_PERCENTILE.items():
            if dist.get(key) is not None and count < minimum:
                message = f"{key} needs at least {minimum} samples, this has {count}: omit it"
                yield Error(f"{base}/{key}", "too-few-samples-for-percentile", message)


def _out_of_order(base: str, dist: dict[str, Any]) -> Iterator[Error]:
    order = ["min", *rules.PERCENTILES, "max"]
    present = [(k, _num(dist.get(k))) for k in order if _num(dist.get(k)) is not None]
    for (lo_key, lo), (hi_key, hi) in pairwise(present):
        if hi < lo:  # type: ignore[operator]
            message = f"{hi_key} ({hi:g}) is below {lo_key} ({lo:g})"
            yield Error(f"{base}/{hi_key}", "percentiles-out-of-order", message)
    lo, mean, hi = _num(dist.get("min")), _num(dist.get("mean")), _num(dist.get("max"))
    if mean is not None and ((lo is not None and mean < lo) or (hi is not None and mean > hi)):
        yield Error(f"{base}/mean", "percentiles-out-of-order", "the mean lies outside [min, max]")


def times_ordered(doc: dict[str, Any]) -> Iterator[Error]:
    started = _time(value_at(doc, "provenance", "started_at"))
    finished = _time(value_at(doc, "provenance", "finished_at"))
    if started and finished:
        if (started.tzinfo is None) != (finished.tzinfo is None):
            yield Error("/provenance/finished_at", "bad-format", "give both times with a time zone")
        elif finished < started:
            yield Error("/provenance/finished_at", "finished-before-started", "the run finished before it started")


def _elapsed_seconds(doc: dict[str, Any]) -> float | None:
    started = _time(value_at(doc, "provenance", "started_at"))
    finished = _time(value_at(doc, "provenance", "finished_at"))
    if started and finished and (started.tzinfo is None) == (finished.tzinfo is None):
        return (finished - started).total_seconds()
    return None


def window_long_enough(doc: dict[str, Any]) -> Iterator[Error]:
    window = value_at(doc, "conditions", "window")
    if not isinstance(window, dict):
        return
    seconds, iterations = _num(window.get("seconds")), _num(window.get("iterations"))
    warm = _num(value_at(doc, "conditions", "warmup", "seconds"))
    if seconds is not None and seconds < rules.MIN_WINDOW_SECONDS:
        message = f"a measurement window must last at least {rules.MIN_WINDOW_SECONDS:g} s"
        yield Error("/conditions/window/seconds", "window-too-short", message)
    elif seconds is not None and warm is not None and seconds < warm:
        message = f"the measurement window ({seconds:g} s) is shorter than its warm-up ({warm:g} s)"
        yield Error("/conditions/window/seconds", "window-too-short", message)
    if iterations is not None and iterations < rules.MIN_WINDOW_ITERATIONS:
        message = f"a measurement window needs at least {rules.MIN_WINDOW_ITERATIONS} timed iterations"
        yield Error("/conditions/window/iterations", "window-too-short", message)
    yield from _window_exceeds_run(doc, seconds, warm)


def _window_exceeds_run(doc: dict[str, Any], seconds: float | None, warm: float | None) -> Iterator[Error]:
    elapsed = _elapsed_seconds(doc)
    if elapsed is not None and seconds is not None and (warm or 0.0) + seconds > elapsed * 1.01 + 1.0:
        yield Error(
            "/conditions/window/seconds",
            "window-exceeds-run",
            f"warm-up plus window ({(warm or 0.0) + seconds:g} s) is longer than the run "
            f"({elapsed:g} s from started_at to finished_at)",
        )


def quantization_described(doc: dict[str, Any]) -> Iterator[Error]:
    weights = value_at(doc, "precision", "weights")
    if (
        isinstance(weights, str)
        and weights in rules.QUANTIZED_FORMATS
        and value_at(doc, "precision", "quantization") is None
    ):
        yield Error(
            "/precision/quantization",
            "quantization-missing",
            f"{weights} weights are quantized: describe how in precision.quantization",
        )


def units_fit_metrics(doc: dict[str, Any]) -> Iterator[Error]:
    expected = {
        "tokens_per_second": {"tokens/s"},
        "request_rate": {"requests/s", "queries/s"},
        "goodput": {"requests/s", "queries/s", "tokens/s"},
    }
    for name, units in expected.items():
        unit = value_at(doc, "metrics", name, "unit")
        if isinstance(unit, str) and unit not in units:
            yield Error(
                f"/metrics/{name}/unit",
                "unit-mismatch",
                f"{name} is measured in {' or '.join(sorted(units))}, not {unit}",
            )


def steady_state_explained(doc: dict[str, Any]) -> Iterator[Error]:
    steady = value_at(doc, "conditions", "steady_state")
    if isinstance(steady, dict) and steady.get("reached") is False and not steady.get("reasons"):
        yield Error(
            "/conditions/steady_state/reasons",
            "steady-state-reasons-missing",
            "a run that did not reach steady state must say why in reasons",
        )


def derived_values_consistent(doc: dict[str, Any]) -> Iterator[Error]:
    yield from _mfu_consistent(doc)
    yield from _loss_consistent(doc)
    yield from _energy_consistent(doc)
    yield from _scaled_time_consistent(doc)


def _mfu_consistent(doc: dict[str, Any]) -> Iterator[Error]:
    flops = value_at(doc, "metrics", "flops")
    if isinstance(flops, dict):
        achieved, peak, mfu = (_num(flops.get(k)) for k in ("achieved_tflops", "peak_tflops", "mfu"))
        if achieved is not None and peak and mfu is not None and abs(achieved / peak - mfu) > 0.01 + 0.02 * mfu:
            message = f"mfu {mfu:g} does not equal achieved/peak = {achieved / peak:.4f}"
            yield Error("/metrics/flops/mfu", "inconsistent-derived-value", message)


def _loss_consistent(doc: dict[str, Any]) -> Iterator[Error]:
    loss = value_at(doc, "metrics", "loss")
    if isinstance(loss, dict):
        first, last, decreased = _num(loss.get("first")), _num(loss.get("last")), loss.get("decreased")
        if first is not None and last is not None and isinstance(decreased, bool) and decreased != (last < first):
            message = f"decreased is {str(decreased).lower()} but loss went from {first:g} to {last:g}"
            yield Error("/metrics/loss/decreased", "inconsistent-derived-value", message)


def _energy_consistent(doc: dict[str, Any]) -> Iterator[Error]:
    energy = value_at(doc, "metrics", "energy")
    elapsed = _elapsed_seconds(doc)
    if isinstance(energy, dict) and elapsed is not None:
        joules, watts = _num(energy.get("joules")), _num(energy.get("average_power_w"))
        if joules is not None and watts and joules / watts > elapsed * 1.01 + 1.0:
            message = f"{joules:g} J at {watts:g} W lasts {joules / watts:g} s, longer than the run"
            yield Error("/metrics/energy/joules", "inconsistent-derived-value", message)


# A published time to quality is rounded (MLPerf: minutes to two or three decimals) before the importer multiplies it
# back into seconds, so the scaled time may differ from unscaled × factor by that rounding: 1% plus half a second.
SCALED_TIME_TOLERANCE = (0.01, 0.5)


def _scaled_time_consistent(doc: dict[str, Any]) -> Iterator[Error]:
    ttq = value_at(doc, "metrics", "time_to_quality")
    if not isinstance(ttq, dict):
        return
    seconds, unscaled = _num(ttq.get("seconds")), _num(ttq.get("unscaled_seconds"))
    factor = _num(ttq.get("scaling_factor"))
    if seconds is None or unscaled is None or factor is None:
        return
    relative, absolute = SCALED_TIME_TOLERANCE
    expected = unscaled * factor
    if abs(seconds - expected) > relative * expected + absolute:
        message = (
            f"seconds {seconds:g} is not unscaled_seconds × scaling_factor = {unscaled:g} × {factor:g} = {expected:g}"
        )
        yield Error("/metrics/time_to_quality/seconds", "inconsistent-derived-value", message)


def shape_consistent(doc: dict[str, Any]) -> Iterator[Error]:
    shape = value_at(doc, "workload", "shape")
    if not isinstance(shape, dict):
        return
    batch, micro = shape.get("batch_size"), shape.get("micro_batch_size")
    accum = shape.get("gradient_accumulation_steps")
    if (
        isinstance(batch, int)
        and isinstance(micro, int)
        and isinstance(accum, int)
        and min(batch, micro, accum) > 0
        and batch % (micro * accum)
    ):
        yield Error(
            "/workload/shape/batch_size",
            "inconsistent-shape",
            f"batch_size {batch} is not a multiple of micro_batch_size × accumulation steps ({micro} × {accum})",
        )


def samples_match_metrics(doc: dict[str, Any]) -> Iterator[Error]:
    samples = doc.get("samples")
    if not isinstance(samples, dict):
        return
    for name, series in samples.items():
        metric = value_at(doc, "metrics", name)
        if metric is None:
            message = f"raw samples for '{name}' but no such metric is reported"
            yield Error(f"/samples/{name}", "samples-without-metric", message)
            continue
        reps = series.get("repetitions") if isinstance(series, dict) else None
        count = metric.get("count") if isinstance(metric, dict) else None
        if isinstance(reps, list) and isinstance(count, int) and name in rules.DISTRIBUTION_METRICS:
            total = sum(len(r) for r in reps if isinstance(r, list))
            if total != count:
                message = f"{total} raw samples but metrics.{name}.count says {count}"
                yield Error(f"/samples/{name}/repetitions", "samples-count-mismatch", message)


# A headline must follow from the run's own raw samples. Percentiles and means: within 0.5% (runners round
# to 6 significant digits; hand-rounded summaries keep 3). Throughput from per-batch times: the timer runs
# inside the wall-clock window, so reported throughput may be lower than the times imply (gaps between
# iterations) but not higher than 5% above, and not below half (that is a different measurement).
HEADLINE_TOLERANCE = 0.005
THROUGHPUT_FROM_TIMES = (0.5, 1.05)


def _pooled(doc: dict[str, Any], name: str) -> np.ndarray | None:
    series, metric = value_at(doc, "samples", name), value_at(doc, "metrics", name)
    if not isinstance(series, dict) or not isinstance(metric, dict) or series.get("unit") != metric.get("unit"):
        return None
    reps = series.get("repetitions")
    if not isinstance(reps, list):
        return None
    values = [_num(v) for r in reps if isinstance(r, list) for v in r]
    if not values or any(v is None for v in values):
        return None
    return np.asarray(values, dtype=np.float64)


def _percentile(pooled: np.ndarray, q: float, declared: str) -> float:
    return float(quantile(pooled, q, NUMPY_METHOD.get(declared, "linear")))


def _disagrees(reported: float, computed: float) -> bool:
    return abs(reported - computed) > HEADLINE_TOLERANCE * max(abs(computed), abs(reported), 1e-12)


def headline_follows_from_samples(doc: dict[str, Any]) -> Iterator[Error]:
    """Where raw samples are given, the reported headline is what they give by the declared method."""
    primary = value_at(doc, "metrics", "primary")
    if not isinstance(primary, str):
        return
    name, _, stat = primary.partition(".")
    metric = value_at(doc, "metrics", name)
    if not isinstance(metric, dict):
        return
    if name in rules.DISTRIBUTION_METRICS:
        yield from _statistic_follows_from_samples(doc, name, stat or "p50", metric)
    elif name == "throughput" and (stat or "value") == "value":
        yield from _throughput_follows_from_times(doc, metric)


def _statistic_follows_from_samples(
    doc: dict[str, Any], name: str, stat: str, metric: dict[str, Any]
) -> Iterator[Error]:
    pooled, reported = _pooled(doc, name), _num(metric.get(stat))
    if pooled is None or reported is None or (stat not in rules.PERCENTILES and stat != "mean"):
        return
    declared = str(metric.get("method") or "linear")
    computed = (
        float(pooled.mean()) if stat == "mean" else _percentile(pooled, rules.PERCENTILES[stat] / 100.0, declared)
    )
    if _disagrees(reported, computed):
        how = "mean" if stat == "mean" else f"{stat} by the declared method '{declared}'"
        yield Error(
            f"/metrics/{name}/{stat}",
            "headline-disagrees-with-samples",
            f"the headline metrics.{name}.{stat} is {reported:g} but the {pooled.size} raw samples "
            f"give {computed:g} ({how}; tolerance {HEADLINE_TOLERANCE:.1%})",
        )


def _throughput_follows_from_times(doc: dict[str, Any], metric: dict[str, Any]) -> Iterator[Error]:
    found = _batch_times(doc, metric)
    if found is None:
        return
    reported, batch, source, times = found
    implied = batch * 1000.0 * times.size / float(times.sum())
    low, high = THROUGHPUT_FROM_TIMES
    if not low * implied <= reported <= high * implied:
        yield Error(
            "/metrics/throughput/value",
            "headline-disagrees-with-samples",
            f"the headline throughput is {reported:g} samples/s but the {times.size} raw {source} samples "
            f"give {implied:g} (batch_size {batch} × 1000 ÷ mean time); it must lie between "
            f"{low:g}× and {high:g}× that",
        )


def _batch_times(doc: dict[str, Any], metric: dict[str, Any]) -> tuple[float, int, str, np.ndarray] | None:
    """(reported throughput, batch size, the times' metric, pooled per-batch times) of an offline or fixed-step
    throughput in samples/s with raw batch times; None otherwise."""
    reported, batch = _num(metric.get("value")), value_at(doc, "workload", "shape", "batch_size")
    kind = value_at(doc, "scenario", "kind")
    source = "step_time_ms" if doc.get("phase") == "training" else "latency_ms"
    times = _pooled(doc, source)
    if (
        reported is None
        or metric.get("unit") != "samples/s"
        or kind not in ("offline", "fixed-steps")
        or not isinstance(batch, int)
        or batch <= 0
        or times is None
        or times.sum() <= 0
    ):
        return None
    return reported, batch, source, times


RULES: tuple[Rule, ...] = (
    fields_fit_declared_minor,
    scenario_fits_phase,
    required_metrics_present,
    primary_metric_present,
    percentiles_ordered_and_supported,
    times_ordered,
    window_long_enough,
    quantization_described,
    units_fit_metrics,
    steady_state_explained,
    derived_values_consistent,
    shape_consistent,
    samples_match_metrics,
    headline_follows_from_samples,
    requests_add_up,
    streaming_metrics_need_streaming,
    sweep_level_states_its_load,
    gamma_arrival_states_burstiness,
    collective_names_its_workload,
    collective_bandwidth_follows,
    collective_summaries_follow,
    topology_holds_together,
    *checks_distributed.RULES,
)


def semantic_errors(document: Any, *, shape_is_valid: bool = True) -> list[Error]:
    """Every semantic problem in the document.

    Rules read defensively, but on a document that already failed the schema (`shape_is_valid=False`) a rule
    meeting a shape it cannot read is skipped: the schema errors already refuse the document. On a
    schema-valid document a failing rule is a bug and raises.
    """
    out = list(numbers_are_representable(document))
    if not isinstance(document, dict):
        return out
    for rule in RULES:
        try:
            out.extend(rule(document))
        except (TypeError, ValueError, AttributeError, KeyError):
            if shape_is_valid:
                raise
    return out
