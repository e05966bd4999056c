"""MLPerf's own rules, as tables: scenarios, number formats, accuracy references and bounds, the figure each
benchmark publishes, and the closed vocabularies of system descriptions (Training's rules are data per round:
training_rules.py).

Data only (plus the two lookups `accuracy_rule` and `model_of`): every value is MLPerf's (its submission
checker and result summarizer), cited beside it. The importer's code reads these tables and never restates them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# MLPerf scenario directory -> protocol scenario kind. LoadGen runs Interactive as Server with tighter SLOs.
SCENARIOS = {
    "SingleStream": "single-stream",
    "MultiStream": "multi-stream",
    "Server": "server",
    "Offline": "offline",
    "Interactive": "interactive",
}


# MLPerf's submission checker accepts scenario folders in any case ("offline", "singlestream").
SCENARIO_FOLDERS = {name.lower(): name for name in SCENARIOS}


LOADGEN_SCENARIO = {"Interactive": "Server"}


# Arrival process of each scenario as MLPerf's inference rules define it (not a measured value).
ARRIVAL = {
    "SingleStream": "closed-loop",
    "MultiStream": "closed-loop",
    "Server": "poisson",
    "Interactive": "poisson",
    "Offline": None,
}


PERCENTILES = {"50.00": "p50", "90.00": "p90", "95.00": "p95", "97.00": "p97", "99.00": "p99", "99.90": "p999"}


# Precision words in measurements.json -> protocol formats. Plain "fp8" stays "fp8": the files do not say
# which variant (e4m3 or e5m2, OCP or FNUZ encoding), and guessing one would change what is compared.
FORMATS = {
    "fp64": "fp64",
    "fp32": "fp32",
    "tf32": "tf32",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "fp8": "fp8",
    "fp8-e4m3": "fp8-e4m3",
    "fp8_e4m3": "fp8-e4m3",
    "e4m3": "fp8-e4m3",
    "fp8-e5m2": "fp8-e5m2",
    "fp8_e5m2": "fp8-e5m2",
    "e5m2": "fp8-e5m2",
    "int32": "int32",
    "int8": "int8",
    "int4": "int4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "mxfp8": "mxfp8",
}


QUANTIZED = frozenset({"fp8", "fp8-e4m3", "fp8-e5m2", "int8", "int4", "nvfp4", "mxfp4", "mxfp8"})


UNSPECIFIED = "unspecified"  # schema sentinel: the source does not state one format of the closed list


@dataclass(frozen=True)
class Accuracy:
    """How MLPerf judges a model's accuracy: metrics in the order its checker lists them (the first is the
    headline), each with its published reference and pass bounds.

    `checks` maps a value name of accuracy.txt to (reference, lower bound, upper bound); a bound is None
    where the checker has none. Bounds are the checker's own products (reference × 0.99, × 0.9, ...), so
    `passed` is exactly MLPerf's verdict on the printed values.
    """

    checks: dict[str, tuple[float | None, float | None, float | None]]
    reference_precision: str = "fp32"


# From MLPerf's submission checker (mlcommons/inference tools/submission/submission_checker/constants.py,
# MODEL_CONFIG["v5.1"]["accuracy-target"] and ["accuracy-upper-limit"]; v4.x used the same references for
# the benchmarks it had). Keys are accuracy.txt's value names. The -99 / -99.9 suffix sets the ratio of the
# reference a value must reach; the other bounds (tokens per sample ±10%, SDXL's CLIP/FID window) are fixed.
def _llm(ratio: float, refs: dict[str, float], **fixed: tuple[float | None, float | None]) -> Accuracy:
    checks: dict[str, tuple[float | None, float | None, float | None]] = {
        name: (ref, ref * ratio, None) for name, ref in refs.items()
    }
    for name, (low, high) in fixed.items():
        checks[name] = (None, low, high)
    return Accuracy(checks)


def accuracy_rule(model: str, ratio: float) -> Accuracy | None:
    """MLPerf's accuracy rule for a model at a target ratio (0.99 or 0.999), None when not known."""
    rules_by_model: dict[str, Accuracy] = {
        "resnet": _llm(ratio, {"accuracy": 76.46}),
        "retinanet": _llm(ratio, {"mAP": 37.55}),
        "bert": _llm(ratio, {"f1": 90.874}),
        "dlrm-v2": _llm(ratio, {"AUC": 80.31}),
        "3d-unet": _llm(ratio, {"DICE": 0.86170}),
        "rgat": _llm(ratio, {"accuracy": 72.86}),
        "whisper": _llm(ratio, {"accuracy": 97.9329}),
        "gptj": _llm(ratio, {"rouge1": 42.9865, "rouge2": 20.1235, "rougeL": 29.9881}, gen_len=(4016878 * 0.9, None)),
        "llama2-70b": _llm(
            ratio,
            {"rouge1": 44.4312, "rouge2": 22.0352, "rougeL": 28.6162},
            tokens_per_sample=(294.45 * 0.9, 294.45 * 1.1),
        ),
        "mixtral-8x7b": _llm(
            ratio,
            {"rouge1": 45.5989, "rouge2": 23.3526, "rougeL": 30.4608, "gsm8k": 73.66, "mbxp": 60.16},
            tokens_per_sample=(144.84 * 0.9, 145.9 * 1.1),
        ),
        "llama3.1-405b": _llm(
            ratio, {"rougeL": 21.6666, "exact_match": 90.1335}, tokens_per_sample=(684.68 * 0.9, 684.68 * 1.1)
        ),
        "llama3.1-8b": _llm(
            ratio,
            {"rouge1": 38.7792, "rouge2": 15.9075, "rougeL": 24.4957, "rougeLsum": 35.793},
            gen_len=(8167644 * 0.9, 8167644 * 1.1),
        ),
        "deepseek-r1": _llm(ratio, {"exact_match": 81.3582}, tokens_per_sample=(3886.2274 * 0.9, 3886.2274 * 1.1)),
        # SDXL has no ratio: both scores must fall in a fixed window around the reference.
        "stable-diffusion-xl": Accuracy(
            {"CLIP_SCORE": (None, 31.68631873, 31.81331801), "FID_SCORE": (None, 23.01085758, 23.95007626)}
        ),
    }
    return rules_by_model.get(model)


# MLPerf lets an edge submission derive Offline and MultiStream from a SingleStream run (the submission
# checker's inferred results: Offline = 1/latency, MultiStream = 8 × latency). Those folders hold the
# SingleStream log: the importer stores measured runs only, so it imports the SingleStream folder and skips these.
INFERRED = frozenset({"Offline", "MultiStream"})


VALIDITY_KEYS = {
    "result_perf_constraints_met": "performance_constraints_satisfied",
    "result_min_duration_met": "min_duration_satisfied",
    "result_min_queries_met": "min_queries_satisfied",
    "early_stopping_met": "early_stopping_satisfied",
}


TEST06_CHECKS = {
    "First token check pass": "test06_first_token",
    "EOS check pass": "test06_eos",
    "Sample length check pass": "test06_sample_length",
}


# The figure MLCommons publishes for each scenario (its submission checker's RESULT_FIELD_NEW and
# RESULT_FIELD_BENCHMARK_OVERWRITE, v5.0/v5.1): tokens/s for the LLM benchmarks below, samples/s otherwise,
# and LoadGen's early-stopping latency estimate for SingleStream (p90) and MultiStream (p99).
TOKEN_HEADLINE = {
    "llama2-70b": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "llama2-70b-interactive": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "llama3.1-8b": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "llama3.1-8b-edge": ("result_tokens_per_second", None),
    "llama3.1-405b": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "mixtral-8x7b": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "deepseek-r1": ("result_tokens_per_second", "result_completed_tokens_per_second"),
    "whisper": ("result_tokens_per_second", None),
    "gptj": ("result_inferred_tokens_per_second", "result_inferred_completed_tokens_per_second"),
}


EARLY_STOPPING = {
    "SingleStream": ("early_stopping_latency_ss", "p90"),
    "MultiStream": ("early_stopping_latency_ms", "p99"),
}


# Benchmarks whose published SingleStream figure is the observed p90, not the estimate.
OBSERVED_SINGLE_STREAM = frozenset({"llama3.1-8b-edge"})


def model_of(benchmark: str) -> str:
    """The MLPerf model a benchmark folder runs: 'llama2-70b-99.9' -> 'llama2-70b', 'llama3_1-8b' ->
    'llama3.1-8b' (the checker's model_mapping)."""
    base = re.sub(r"-(99|99\.9)$", "", benchmark)
    return {
        "llama3_1-405b": "llama3.1-405b",
        "llama3_1-8b": "llama3.1-8b",
        "llama3_1-8b-edge": "llama3.1-8b-edge",
        "resnet50": "resnet",
        "ssd-resnet34": "retinanet",
    }.get(base, base)


# MLPerf's closed vocabularies (submission checker VALID_DIVISIONS, VALID_AVAILABILITIES, system_type).
# "rdi" (research, development or internal) is MLPerf's name for the research category.
DIVISIONS = {"closed": "closed", "open": "open", "network": "network"}


AVAILABILITIES = {
    "available": "available",
    "preview": "preview",
    "rdi": "research",
    "research": "research",
    # MLPerf Training's words for available systems (result_summarizer config.yaml)
    "onprem": "available",
    "cloud": "available",
    "available on-premise": "available",
    "available cloud": "available",
}


CATEGORIES = {"datacenter": "datacenter", "edge": "edge"}
