"""A software setting (`software.settings` key and value) in words a reader knows: "samples per query 1,024",
"target QPS 0.2 in user.conf", "torch threads 4", never the raw key "loadgen.generated_samples_per_query=1024".

Keys come from the load generators and runners that write them: LoadGen's effective settings (importers/mlperf:
`loadgen.<name>`, the detail log's `effective_<name>`), the submitter's user.conf (`user.conf:<model>.<scenario>.
<name>`), MLCommons' endpoints client (`endpoints.<name>`), and the registry's runners (`torch.num_threads`,
`numpy.blas_threads`, `env.OMP_NUM_THREADS`, ...). A key none of them names is still said in words: its parts
split at dots, colons and underscores ("vendor.max_batch_tokens" -> "vendor max batch tokens").
"""

from __future__ import annotations

import re
from typing import Any

from ..numbers import Style, number

# "{}" is the value; "{ms}" and "{ns}" a duration held in ms or ns, said in ms, s or min; "{pct}" a fraction said as a
# percentile; "{seed}" a number said as its digits. One table for LoadGen's names, whether read from the
# detail log (loadgen.*) or from user.conf (its keys name the same settings, a few without the unit suffix).
LOADGEN = {
    "scenario": "scenario {}",
    "test_mode": "test mode {}",
    "target_qps": "target QPS {}",
    "target_latency_ns": "target latency {ns}",
    "target_latency": "target latency {ms}",
    "target_latency_percentile": "{pct} percentile latency target",
    "target_duration_ms": "target duration {ms}",
    "min_duration_ms": "min duration {ms}",
    "min_duration": "min duration {ms}",
    "max_duration_ms": "max duration {ms}",
    "max_duration": "max duration {ms}",
    "min_query_count": "min queries {}",
    "max_query_count": "max queries {}",
    "min_sample_count": "min samples {}",
    "performance_sample_count": "performance sample count {}",
    "performance_sample_count_override": "performance sample count {}",
    "samples_per_query": "samples per query {}",
    "multi_stream_samples_per_query": "MultiStream samples per query {}",
    "offline_expected_qps": "expected QPS {}",
    "server_target_qps": "target QPS {}",
    "server_target_latency_ns": "target latency {ns}",
    "server_target_latency_percentile": "{pct} percentile latency target",
    "single_stream_expected_latency_ns": "expected latency {ns}",
    "multi_stream_expected_latency_ns": "expected latency {ns}",
    "multi_stream_target_latency_ns": "target latency {ns}",
    "generated_samples_per_query": "samples per query {} as generated",
    "max_async_queries": "max queries in flight {}",
    "server_coalesce_queries": "coalesced queries {}",
    "coalesce_queries": "coalesced queries {}",
    "use_token_latencies": "token latencies {}",
    "ttft_latency": "TTFT bound {ms}",
    "tpot_latency": "TPOT bound {ms}",
    "qsl_rng_seed": "sample library seed {seed}",
    "sample_index_rng_seed": "sample index seed {seed}",
    "schedule_rng_seed": "schedule seed {seed}",
    "accuracy_log_rng_seed": "accuracy log seed {seed}",
    "accuracy_log_probability": "accuracy log probability {}",
    "accuracy_log_sampling_target": "accuracy log sampling target {}",
    "performance_issue_same": "same sample issued {}",
    "performance_issue_same_index": "same sample index {}",
    "performance_issue_unique": "unique samples issued {}",
    "print_timestamps": "timestamps printed {}",
    "sample_concatenate_permutation": "sample concatenation permutation {}",
}
ENDPOINTS = {
    "type": "endpoints test type {}",
    "load_pattern": "load pattern {}",
    "target_qps": "target QPS {}",
    "min_duration_ms": "min duration {ms}",
    "max_duration_ms": "max duration {ms}",
    "n_samples_to_issue": "samples to issue {}",
    "scheduler_random_seed": "scheduler seed {seed}",
    "dataloader_random_seed": "data loader seed {seed}",
    "streaming": "streaming {}",
    "early_stopping": "early stopping {}",
    "api_type": "API type {}",
    "n_samples_issued": "samples issued {}",
    "n_samples_completed": "samples completed {}",
    "n_samples_failed": "samples failed {}",
    "duration_ns": "duration {ns}",
    "state": "endpoints state {}",
    "version": "endpoints client {}",
}
RUNNER = {  # the registry's runners (runners/backends, runners/environment.py)
    "runner.backend": "backend {}",
    "runner.sleep_ms": "sleep {ms}",
    "torch.num_threads": "torch threads {}",
    "torch.num_interop_threads": "torch inter-op threads {}",
    "torch.float32_matmul_precision": "float32 matmul precision {}",
    "torch.backends.cuda.matmul.allow_tf32": "TF32 matmul {}",
    "torch.backends.cudnn.allow_tf32": "cuDNN TF32 {}",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": "bf16 reduced-precision reduction {}",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": "fp16 reduced-precision reduction {}",
    "torch.backends.mkldnn.enabled": "oneDNN {}",
    "torch.backends.quantized.engine": "quantized engine {}",
    "numpy.dtype": "numpy dtype {}",
    "numpy.blas": "BLAS {}",
    "numpy.blas_threads": "BLAS threads {}",
    "numpy.blas_threads_note": "BLAS threads: {}",
    "process.cpu_affinity_count": "CPUs in affinity {}",
    "cpu.scaling_governor": "CPU governor {}",
    "cpu.intel_pstate.no_turbo": "Intel P-state no-turbo {}",
    "cpu.boost": "CPU boost {}",
    "kernel.numa_balancing": "NUMA balancing {}",
    "mm.transparent_hugepage": "transparent huge pages {}",
    # serving engines' launch flags, as the serving importer stores them (registry/importers/serving/inferencex.py)
    "max_num_seqs": "max sequences {}",
    "max_num_batched_tokens": "max batched tokens {}",
    "max_running_requests": "max running requests {}",
    "chunked_prefill_size": "chunked prefill size {}",
    "prefill_decode_disaggregated": "prefill/decode disaggregated {}",
}
# Parts of a key written as a reader writes them, in the fallback's words.
ACRONYMS = {
    "qps": "QPS",
    "rng": "RNG",
    "kv": "KV",
    "tp": "TP",
    "pp": "PP",
    "ep": "EP",
    "dp": "DP",
    "gpu": "GPU",
    "cpu": "CPU",
    "ttft": "TTFT",
    "tpot": "TPOT",
    "api": "API",
    "num": "number of",
}


def setting_words(key: str, value: Any) -> str:
    """`key` (a software.settings name) with `value` in words: 'samples per query 1,024', 'target QPS 0.2 in
    user.conf', 'torch threads 4', 'environment OMP_NUM_THREADS 8'; an unknown key split into words."""
    if key.startswith("user.conf:"):
        name = key.removeprefix("user.conf:").rpartition(".")[2]  # <model>.<scenario>.<name>
        return _said(LOADGEN.get(name) or _fallback_template(name), value) + " in user.conf"
    for prefix, table in (("loadgen.", LOADGEN), ("endpoints.", ENDPOINTS)):
        if key.startswith(prefix):
            name = key.removeprefix(prefix)
            return _said(table.get(name) or _fallback_template(name), value)
    if key in RUNNER:
        return _said(RUNNER[key], value)
    if key.startswith("env."):  # an environment variable is read by its own name
        return f"environment {key.removeprefix('env.')} {_value(value)}"
    return _said(_fallback_template(key), value)


def _fallback_template(name: str) -> str:
    """'vendor.max_batch_tokens' -> 'vendor max batch tokens {}'; a name ending _ms or _ns is a duration."""
    parts = [p for p in re.split(r"[._:/\-\s]+", name) if p]
    unit = parts[-1].lower() if parts else ""
    if unit in ("ms", "ns") and len(parts) > 1:
        return " ".join(_word(p) for p in parts[:-1]) + " {" + unit + "}"
    return " ".join(_word(p) for p in parts) + " {}" if parts else "setting {}"


def _word(part: str) -> str:
    return ACRONYMS.get(part.lower(), part)


def _said(template: str, value: Any) -> str:
    if "{ms}" in template:
        return template.replace("{ms}", _duration(value, 1.0))
    if "{ns}" in template:
        return template.replace("{ns}", _duration(value, 1e6))
    if "{pct}" in template:
        return template.replace("{pct}", _percentile(value))
    if "{seed}" in template:
        return template.replace("{seed}", _value(value, grouped=False))
    return template.replace("{}", _value(value))


def _value(value: Any, grouped: bool = True) -> str:
    """A setting's value: 'not stated', yes/no, 1,024 (grouped unless a seed), 0.2, text as it is."""
    if value is None:
        return "not stated"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            value = int(value)
        return number(value, Style.GROUPED, digits=12) if grouped else str(value)
    if isinstance(value, list):
        return ", ".join(_value(v, grouped) for v in value) or "none"
    return str(value)


def _duration(value: Any, per_ms: float) -> str:
    """A duration held in units of 1/per_ms ms (1: ms, 1e6: ns) in the unit a reader counts it in: '7.3 ms',
    '2 s', '10 min' (600,000 ms), '160 min'."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return _value(value)
    ms = value / per_ms
    if abs(ms) >= 60_000:
        return f"{_value(ms / 60_000)} min"
    if abs(ms) >= 1_000:
        return f"{_value(ms / 1_000)} s"
    return f"{_value(ms)} ms"


def _percentile(value: Any) -> str:
    """0.99 (LoadGen's detail log) or 99 (user.conf) -> '99th'; anything else as it is."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 100:
        pct = round(value * 100 if value < 1 else value, 6)
        return f"{number(pct, Style.GENERAL, digits=6)}th"
    return _value(value)
