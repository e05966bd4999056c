"""Protocol constants shared by checks, runners and comparisons: what each phase allows and needs."""

from __future__ import annotations

PROTOCOL_NAME = "benchreg.submission"
# The version the bundled runners write: they use no field added after 1.0, and a run's document (so its digest)
# stays what it was. Writers that use a field or value of a later minor declare that minor.
PROTOCOL_VERSION = "1.0"
# The newest minor this code knows: the live schema (schemas/submission.v1.schema.json) is this version. Importers
# that write its fields (the MLPerf importer: fp4 formats, power windows, inferred results; the serving importer and
# runner: sweeps, request shapes, per-user rates) declare it.
PROTOCOL_VERSION_LATEST = "1.3"

INFERENCE_SCENARIOS = frozenset({"single-stream", "multi-stream", "server", "offline", "interactive"})
TRAINING_SCENARIOS = frozenset({"fixed-steps", "time-to-quality"})
# Since 1.3: a collective operation measured over message sizes (docs/interconnect.md).
COLLECTIVE_SCENARIOS = frozenset({"collective-sweep"})
SCENARIOS_BY_PHASE = {
    "inference": INFERENCE_SCENARIOS,
    "training": TRAINING_SCENARIOS,
    "collective": COLLECTIVE_SCENARIOS,
}

DISTRIBUTION_METRICS = ("latency_ms", "ttft_ms", "tpot_ms", "step_time_ms")
RATE_METRICS = ("throughput", "tokens_per_second", "request_rate", "goodput")
# Since 1.2: distributions of a served-model load level that are not headlines of the comparability contract (its
# directions are frozen with it): every inter-token gap (ms, lower is better) and the per-user rate (tokens/s,
# higher is better). The percentile rules apply to them as to DISTRIBUTION_METRICS.
# Since 1.3: the time to first output (answer) token, reasoning excluded (ms, lower is better).
SERVING_DISTRIBUTIONS = ("itl_ms", "tokens_per_second_per_user", "ttfot_ms")
# Since 1.2: metrics a served run reports only when it read the response as a stream (one TTFT needs a first token).
STREAMING_METRICS = ("ttft_ms", "itl_ms", "tokens_per_second_per_user", "ttfot_ms")
# Since 1.2: how each sweep mode states the offered load of one level (scenario.sweep.mode -> the scenario fields).
SWEEP_LOAD_FIELDS = {
    "request-rate": ("target_qps",),
    "concurrency": ("concurrency",),
    "automatic": ("target_qps", "concurrency"),
}

# Percentile keys in the order they must not decrease, with the value each stands for.
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p97": 97.0, "p99": 99.0, "p999": 99.9}

# Fewest samples a tail percentile may be claimed on (docs/protocol.md). Below this it is omitted, not guessed.
# The published rule keeps about 6.5 expected samples beyond the percentile (p90: 64, p95: 130, p99: 662);
# p97 and p99.9, which MLPerf logs also report, follow the same rule.
MIN_SAMPLES_FOR_PERCENTILE = {"p90": 64, "p95": 130, "p97": 217, "p99": 662, "p999": 6636}

# Weight formats that are quantized and so need a `precision.quantization` block describing how. The fp6 and fp4
# families (since protocol 1.1) are quantized like fp8, whether or not the source states the variant. Every format of
# the schema is in exactly one of QUANTIZED_FORMATS, UNQUANTIZED_FORMATS and "unspecified" (a test holds this), so a
# format added later must be placed, not defaulted.
FP8_FORMATS = frozenset({"fp8", "fp8-e4m3", "fp8-e5m2", "mxfp8"})
FP6_FORMATS = frozenset({"fp6", "fp6-e2m3", "fp6-e3m2", "mxfp6-e2m3", "mxfp6-e3m2"})
FP4_FORMATS = frozenset({"fp4", "fp4-e2m1", "nvfp4", "mxfp4"})
QUANTIZED_FORMATS = frozenset({"int8", "int4", *FP8_FORMATS, *FP6_FORMATS, *FP4_FORMATS})
UNQUANTIZED_FORMATS = frozenset({"fp64", "fp32", "tf32", "bf16", "fp16", "int32"})

# A measurement window must be at least this long (seconds) and this many timed iterations.
MIN_WINDOW_SECONDS = 1.0
MIN_WINDOW_ITERATIONS = 10

# Which direction is better for each metric family: used for headlines and comparisons.
LOWER_IS_BETTER = frozenset({*DISTRIBUTION_METRICS, "latency_estimate_ms", "time_to_quality"})


def percentile_allowed(key: str, count: int) -> bool:
    """Whether a percentile may be reported on `count` samples."""
    return count >= MIN_SAMPLES_FOR_PERCENTILE.get(key, 0)
