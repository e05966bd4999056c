"""The bundled inference runner (`benchreg.runners.inference`): single-stream, offline and server.

single-stream and offline are closed loops (the next query is issued when the previous one finished):
single-stream reports latency per query, offline throughput of back-to-back batches. server is open-loop
(runners/server.py). All three warm up closed-loop until steady, then measure `repetitions` windows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import stats
from .backends import Backend
from .measure import Policy, Warmup, Window, measure, repetition_seconds, warm_up
from .progress import Reporter
from .queries import Paused, Query, make_query, quality
from .record import Recorder
from .server import ServerRun, requests_for, run_server
from .spec import RunSpec
from .stats import SteadyVerdict

ARRIVAL_TOLERANCE = 0.05  # issued rate vs target: the schedule's own rate is exact (server.poisson_arrivals)
# Queueing makes server latencies legitimately dispersed; block spread and IQR are judged more loosely,
# while the trend test (a growing queue is a drift) is unchanged.
# Queueing gives server latencies a long tail by nature: it is not a slow path.
SERVER_CRITERIA = stats.SteadyCriteria(block_spread_max=0.25, iqr_over_median_max=1.0, slow_share_max=None)


def _samples(reps: list[list[float]]) -> dict[str, Any]:
    return {"unit": "ms", "repetitions": [[round(x, 6) for x in rep] for rep in reps]}


def _closed_loop(
    query: Query, policy: Policy, warm: Warmup, report: Reporter, recorder: Recorder
) -> tuple[list[list[float]], dict[str, list[list[float]]], Window]:
    recorder.window_start()
    window = measure(_per_repetition(query), policy, report, warm)
    recorder.window_stop()
    extra = {"ttft_ms": _split(query.ttft_ms, window.repetitions), "tpot_ms": _split(query.tpot_ms, window.repetitions)}
    return [list(r) for r in window.repetitions], extra, window


def _per_repetition(query: Query) -> Any:
    query.clear()  # warm-up queries are not part of the window
    return query.timed


def _split(values: list[float], reps: tuple[tuple[float, ...], ...]) -> list[list[float]]:
    out, i = [], 0
    for rep in reps:
        out.append(values[i : i + len(rep)])
        i += len(rep)
    return out if values else []


def _server_loop(
    spec: RunSpec, query: Query, policy: Policy, warm: Warmup, report: Reporter, recorder: Recorder
) -> tuple[list[ServerRun], float]:
    assert spec.target_qps is not None and spec.concurrency is not None
    count = requests_for(spec.target_qps, repetition_seconds(policy, warm), policy.min_iterations)
    runs = []
    recorder.window_start()
    for index in range(policy.repetitions):
        report.stage(f"server {index + 1}/{policy.repetitions} ({count} req)", None)
        runs.append(_serve_repetition(spec, query, policy, count, index))
        report.advance(1.0, f"{runs[-1].arrival_rate:.1f} req/s issued")
    recorder.window_stop()
    return runs, sum(r.seconds for r in runs)


def _serve_repetition(spec: RunSpec, query: Query, policy: Policy, count: int, index: int) -> ServerRun:
    assert spec.target_qps is not None and spec.concurrency is not None
    max_seconds = policy.max_seconds / policy.repetitions
    return run_server(query.run, spec.target_qps, count, spec.concurrency, spec.seed + index, max_seconds=max_seconds)


def _server_series(runs: list[ServerRun], decoder_tokens: int | None) -> dict[str, list[list[float]]]:
    latency = [[r.latency_ms for r in run.requests] for run in runs]
    if decoder_tokens is None:
        return {"latency_ms": latency}
    ttft = [[r.ttft_ms or 0.0 for r in run.requests] for run in runs]
    tpot = [
        [(lat - first) / (decoder_tokens - 1) for lat, first in zip(lr, tr, strict=True)]
        for lr, tr in zip(latency, ttft, strict=True)
    ]
    return {"latency_ms": latency, "ttft_ms": ttft, "tpot_ms": tpot}


def _goodput(series: dict[str, list[list[float]]], slo: dict[str, float], seconds: float) -> float:
    """Requests per second that met every per-request objective (the vLLM goodput definition)."""
    flat = {k: np.concatenate([np.asarray(r) for r in v]) for k, v in series.items()}
    if "ttft_p99" in slo:
        ok = (flat["ttft_ms"] <= slo["ttft_p99"]) & (flat["tpot_ms"] <= slo["tpot_p99"])
    else:
        ok = flat["latency_ms"] <= slo["latency_p99"]
    return float(ok.sum()) / seconds


def _throughput(spec: RunSpec, samples_per_s: float) -> dict[str, Any]:
    output_tokens = spec.shape().output_tokens
    if not spec.definition.is_decoder:
        return {"throughput": {"value": round(samples_per_s, 4), "unit": "samples/s"}}
    assert output_tokens is not None
    tokens = round(samples_per_s * output_tokens, 4)
    return {
        "throughput": {"value": tokens, "unit": "tokens/s"},
        "tokens_per_second": {"value": tokens, "unit": "tokens/s"},
    }


def _metrics(spec: RunSpec, series: dict[str, list[list[float]]], seconds: float) -> dict[str, Any]:
    shape = spec.shape()
    queries = sum(len(r) for r in series["latency_ms"])
    samples_per_s = queries * shape.batch_size / seconds
    out = _throughput(spec, samples_per_s)
    for name, reps in series.items():
        if reps:
            out[name] = stats.distribution(np.concatenate([np.asarray(r) for r in reps]))
    if spec.scenario == "server":
        out["request_rate"] = {"value": round(queries / seconds, 4), "unit": "requests/s"}
        out["goodput"] = {"value": round(_goodput(series, spec.slo(), seconds), 4), "unit": "requests/s"}
        out["primary"] = "throughput"
    elif spec.scenario == "single-stream":
        out["primary"] = "latency_ms.p90" if "p90" in out["latency_ms"] else "latency_ms.p50"
    else:
        out["primary"] = "throughput"
    return out


def _scenario(spec: RunSpec) -> dict[str, Any]:
    if spec.scenario != "server":
        return {"kind": spec.scenario}
    return {
        "kind": "server",
        "arrival": "poisson",
        "target_qps": spec.target_qps,
        "concurrency": spec.concurrency,
        "latency_slo_ms": spec.slo(),
    }


def server_checks(runs: list[ServerRun], spec: RunSpec) -> tuple[dict[str, bool], list[str], str]:
    assert spec.target_qps is not None
    ok, reasons, note = _arrival_check(runs, spec.target_qps, spec.seed)
    # Completions per second between first and last completion: below the arrival rate, the queue grew.
    served = min(r.completion_rate for r in runs)
    kept_up = served >= (1.0 - ARRIVAL_TOLERANCE) * spec.target_qps
    if not kept_up:
        reasons.append(
            f"overloaded: completed {served:.2f} req/s against {spec.target_qps:g} arriving, "
            "so latency reflects a growing queue"
        )
    checks = {"arrival_rate_within_tolerance": ok, "kept_up_with_arrivals": kept_up}
    truncated = [r for r in runs if r.truncated]
    if truncated:  # the run is kept, marked by a failed validity check and the reason
        checks["finished_within_time_cap"] = False
        cap = truncated[0].max_seconds or 0.0
        reasons.append(_truncation_reason(runs, truncated, cap))
        note += f"; time cap {cap:g} s per repetition: truncated"
    return checks, reasons, note


def _arrival_check(runs: list[ServerRun], target_qps: float, seed: int) -> tuple[bool, list[str], str]:
    """(arrival rate within tolerance, the reasons if not, the load generator's note)."""
    rates = [r.arrival_rate for r in runs]
    ok = all(abs(rate / target_qps - 1.0) <= ARRIVAL_TOLERANCE for rate in rates)
    lag = max(r.max_dispatch_lag_ms for r in runs)
    note = (
        f"poisson arrivals, seed {seed}+repetition; issued {', '.join(f'{x:.2f}' for x in rates)} "
        f"req/s against {target_qps:g}; max dispatch lag {lag:.2f} ms; latency from scheduled arrival"
    )
    reasons = (
        []
        if ok
        else [
            f"achieved arrival rate {min(rates):.2f}-{max(rates):.2f} req/s is not within "
            f"{ARRIVAL_TOLERANCE:.0%} of the target {target_qps:g}"
        ]
    )
    return ok, reasons, note


def _truncation_reason(runs: list[ServerRun], truncated: list[ServerRun], cap: float) -> str:
    return (
        f"truncated: {len(truncated)} of {len(runs)} repetitions hit the time cap of {cap:g} s; "
        f"served {sum(len(r.requests) for r in truncated)} of {sum(r.planned for r in truncated)} "
        "scheduled requests in them"
    )


Series = dict[str, list[list[float]]]
Section = dict[str, Any]  # a section of the run document
Notes = dict[str, str]
# What a scenario's measurement gives: (series, seconds, validity checks or None, reasons, software notes).
Measured = tuple[Series, float, dict[str, bool] | None, list[str], Notes]


def run(spec: RunSpec, backend: Backend, report: Reporter) -> dict[str, Any]:
    """Measure one inference configuration and return its validated document."""
    spec = spec.resolved()
    assert spec.threads is not None
    policy = spec.policy()
    recorder, model, query = _prepare(spec, backend)
    warm = warm_up(query.timed, policy, report)
    reasons = warm.reasons(policy)
    scenario_measure = _measure_server if spec.scenario == "server" else _measure_closed
    series, seconds, validity, more_reasons, notes = scenario_measure(spec, query, policy, warm, report, recorder)
    reasons += more_reasons
    criteria = SERVER_CRITERIA if spec.scenario == "server" else stats.SteadyCriteria()
    verdict = stats.assess(np.concatenate([np.asarray(r) for r in series["latency_ms"]]), criteria)
    report.note(verdict_line(verdict, reasons))
    iterations = sum(len(r) for r in series["latency_ms"])
    steady = verdict.as_document(reasons)
    conditions = recorder.conditions(policy, warm, seconds, iterations, steady, spec.isolation, validity)
    return _document(spec, recorder, model, series, seconds, conditions, notes)


def _prepare(spec: RunSpec, backend: Backend) -> tuple[Recorder, Any, Query]:
    """(the recorder, the model, the query to time), the backend configured for the run."""
    assert spec.threads is not None
    workload = spec.definition
    backend.check("inference", workload, spec.precision)
    backend.configure(spec.threads, spec.precision)
    recorder = Recorder(backend, "inference", spec.submitter)
    model = backend.build(workload, spec.precision, spec.seed)
    query: Query = make_query(backend, model, workload, spec.shape(), spec.seed)
    if spec.sleep_ms:
        query = Paused(query, spec.sleep_ms)
    return recorder, model, query


def _measure_server(
    spec: RunSpec, query: Query, policy: Policy, warm: Warmup, report: Reporter, recorder: Recorder
) -> Measured:
    runs, seconds = _server_loop(spec, query, policy, warm, report, recorder)
    series = _server_series(runs, spec.shape().output_tokens if spec.definition.is_decoder else None)
    validity, reasons, note = server_checks(runs, spec)
    return series, seconds, validity, reasons, {"load_generator": note}


def _measure_closed(
    spec: RunSpec, query: Query, policy: Policy, warm: Warmup, report: Reporter, recorder: Recorder
) -> Measured:
    latency, extra, window = _closed_loop(query, policy, warm, report, recorder)
    series = {"latency_ms": latency, **{k: v for k, v in extra.items() if v}}
    capped, cap_reasons = window.truncation(policy)  # a query too slow to time its minimum count
    if not capped:
        return series, window.total_seconds, None, [], {}
    notes = {"time_cap": f"time cap {window.cap_seconds:g} s per repetition: truncated"}
    return series, window.total_seconds, capped, cap_reasons, notes


def verdict_line(verdict: SteadyVerdict, reasons: list[str]) -> str:
    if verdict.reached and not reasons:
        return f"steady state: reached (block spread {verdict.block_spread}, trend z {verdict.trend_statistic})"
    return "steady state: NOT reached: " + "; ".join([*verdict.reasons, *reasons])


def _document(
    spec: RunSpec, recorder: Recorder, model: Any, series: Series, seconds: float, conditions: Section, notes: Notes
) -> dict[str, Any]:
    backend, workload = recorder.backend, spec.definition
    metrics = _metrics(spec, series, seconds)
    metrics["memory"] = recorder.memory()
    metrics["energy"] = recorder.energy(seconds)
    reference = backend.build(workload, "fp32", spec.seed)
    metrics["quality"] = quality(backend, workload, spec.shape(), model, reference, spec.seed, spec.precision)
    return recorder.document(
        workload=workload_section(spec, "inference"),
        scenario=_scenario(spec),
        precision=_precision(spec, backend),
        conditions=conditions,
        metrics=metrics,
        samples={k: _samples(v) for k, v in series.items() if v},
        framework=framework_versions(backend),
        software_notes=notes,
        settings={"runner.sleep_ms": float(spec.sleep_ms)},
    )


def _precision(spec: RunSpec, backend: Backend) -> dict[str, Any]:
    precision = backend.precision_section("inference", spec.precision)
    if spec.definition.is_decoder:
        precision["kv_cache"] = backend.kv_cache_format(spec.precision)
    return precision


def workload_section(spec: RunSpec, phase: str) -> dict[str, Any]:
    w = spec.definition
    model: dict[str, Any] = {
        "architecture": w.architecture,
        "parameters": w.parameters(),
        "layers": w.layers,
        "hidden_size": w.hidden_size,
        "digest": None,
    }
    if w.is_transformer:
        model.update(attention_heads=w.attention_heads, vocabulary_size=w.vocabulary_size)
    return {
        "name": w.name,
        "version": w.version,
        "task": w.task,
        "model": model,
        "dataset": {"name": w.dataset, "version": "1", "seed": spec.seed},
        "shape": spec.shape().section(phase),
    }


def framework_versions(backend: Backend) -> dict[str, str | None]:
    """The framework that ran the model, at its exact version."""
    if backend.name == "torch":
        import torch

        return {"torch": str(torch.__version__)}
    return {"numpy": np.__version__}
