"""What one telemetry scrape costs the serving client: CPU time to read the metrics benchreg keeps from an engine's
/metrics page and a DCGM exporter's, against prometheus_client parsing the whole page (the in-run baseline).

    python -m bench.serving_telemetry            # a vLLM page of 10 histograms × 4 engines (~140 KB), 8 GPUs, 200 reps
    python -m bench.serving_telemetry --smoke    # CI: it runs

The scrape thread shares the client's process (runners/serving/telemetry.py): its CPU is the client's, taken once per
--telemetry-interval, so it is read against the interval. Prints figures, no pass/fail.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from runners.serving import telemetry

HISTOGRAMS = (
    "time_to_first_token_seconds", "e2e_request_latency_seconds", "inter_token_latency_seconds",
    "request_queue_time_seconds", "request_prefill_time_seconds", "request_decode_time_seconds",
    "request_prompt_tokens", "request_generation_tokens", "iteration_tokens_total", "request_inference_time_seconds",
)  # fmt: skip


def vllm_page(engines: int) -> str:
    """A vLLM /metrics page: its histograms (30 buckets each, per engine), gauges, counters and cache config."""
    lines = []
    for name in HISTOGRAMS:
        lines.append(f"# HELP vllm:{name} Histogram.\n# TYPE vllm:{name} histogram")
        for engine in range(engines):
            for le in [*(f"{0.001 * 2**i:g}" for i in range(30)), "+Inf"]:
                labels = f'engine="{engine}",le="{le}",model_name="meta-llama/Llama-3.1-8B-Instruct"'
                lines.append(f"vllm:{name}_bucket{{{labels}}} 123.0")
    for engine in range(engines):
        labels = f'engine="{engine}",model_name="meta-llama/Llama-3.1-8B-Instruct"'
        for name, value in (("num_requests_running", 12), ("kv_cache_usage_perc", 0.4),
                            ("prefix_cache_hits_total", 1234), ("generation_tokens_total", 9e6)):  # fmt: skip
            lines.append(f"vllm:{name}{{{labels}}} {value}")
    lines.append('vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="30000"} 1.0')
    return "\n".join(lines) + "\n"


def dcgm_page(gpus: int) -> str:
    """A dcgm-exporter page of its default fields, per GPU."""
    fields = ("SM_CLOCK", "MEM_CLOCK", "GPU_TEMP", "POWER_USAGE", "TOTAL_ENERGY_CONSUMPTION", "PCIE_REPLAY_COUNTER",
              "GPU_UTIL", "MEM_COPY_UTIL", "ENC_UTIL", "DEC_UTIL", "XID_ERRORS", "FB_FREE", "FB_USED",
              "NVLINK_BANDWIDTH_TOTAL", "VGPU_LICENSE_STATUS")  # fmt: skip
    lines = []
    for field in fields:
        lines.append(f"# HELP DCGM_FI_DEV_{field} Field.\n# TYPE DCGM_FI_DEV_{field} gauge")
        for gpu in range(gpus):
            labels = f'gpu="{gpu}",UUID="GPU-{gpu:08x}",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3"'
            lines.append(f'DCGM_FI_DEV_{field}{{{labels},Hostname="node-1"}} {100 + gpu}')
    return "\n".join(lines) + "\n"


def cpu_ms(work: Callable[[], object], reps: int) -> float:
    started = time.process_time()
    for _ in range(reps):
        work()
    return (time.process_time() - started) / reps * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="CI: 3 repetitions")
    args = parser.parse_args()
    reps = 3 if args.smoke else args.reps
    print(f"Python {platform.python_version()}, {platform.machine()}, {reps} repetitions")
    for kind, page in (("engine", vllm_page(4)), ("dcgm", dcgm_page(8))):
        kept = len(telemetry.samples(page, telemetry.WANTED[kind], "bench"))
        ours = cpu_ms(lambda: telemetry.samples(page, telemetry.WANTED[kind], "bench"), reps)  # noqa: B023
        whole = cpu_ms(lambda: [s for f in text_string_to_metric_families(page) for s in f.samples], reps)  # noqa: B023
        print(
            f"{kind} page {len(page) / 1024:.0f} KiB, {kept} samples kept: benchreg {ours:.2f} ms CPU per scrape, "
            f"whole-page parse {whole:.2f} ms (baseline), ratio {whole / ours:.1f}x; at a 1 s interval "
            f"{ours / 10:.3f}% of one core"
        )


if __name__ == "__main__":
    main()
