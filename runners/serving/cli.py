"""`benchreg run serving`: measure an OpenAI-compatible endpoint over a load sweep, one document per level.

    benchreg run serving --endpoint http://gpu-host:8000 --model meta-llama/Llama-3.1-8B-Instruct --api chat \\
        --input-tokens 1024 --output-tokens 256 --request-rates 1,2,4,8 --ttft-slo-ms 2000 --tpot-slo-ms 100 \\
        --deployment deploy.toml --out results/
    benchreg run serving ... --concurrency 1,8,32,64          # closed loop
    benchreg run serving ... --auto --auto-start 1 --auto-factor 1.5   # raise the rate until an objective fails
    benchreg run serving ... --warmup 32                      # 32 requests before each level, thrown away
    benchreg run serving ... --workload sharegpt --dataset sharegpt.json --request-rates 2,4   # local files only
    benchreg run serving ... --workload sharegpt --dataset sharegpt.json --max-turns 5 --concurrency 8  # sessions
    benchreg run serving ... --workload sonnet --dataset sonnet.txt --input-tokens 550 --sonnet-prefix-tokens 200
    benchreg run serving ... --workload trace --dataset mooncake.jsonl --trace-speedups 1,2   # replay its times

Each level writes its document and, beside it, its per-request export (`...-requests-<sha>.jsonl`, named in the
document by sha256); `benchreg recompute-serving DOC.json` recomputes the level's figures from it.

Exit status: 0 every level written, 1 a level could not be written or submitted (the levels before it were), 2
refused before any load was sent.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from protocol import sizing

from .. import interrupts
from ..arguments import MILLISECONDS, SECONDS, SEED, count, number
from . import deployment as deploy
from .datasets import MOONCAKE_BLOCK_TOKENS, TIME_UNITS
from .document import Context, file_name
from .export import write_export
from .levels import Objectives
from .runner import MAX_LEVELS, LevelRefused, LoadPlan, Refused, run_sync
from .shapes import DISTRIBUTIONS, MAX_TOKENS, TokenLaw
from .spec import FILE_LENGTHS, ServingSpec
from .workload import SOURCES


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated numbers, not {text!r}") from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--endpoint", required=True, help="base URL of the server, e.g. http://host:8000")
    p.add_argument("--model", required=True, help="served model name, as /v1/models lists it")
    p.add_argument(
        "--api",
        choices=("chat", "completions"),
        default="chat",
        help="chat (default): /v1/chat/completions; completions: /v1/completions",
    )
    p.add_argument(
        "--timeout", type=number(above=0, high=3600), default=300.0, help="seconds one request may take (then: timeout)"
    )
    shape = p.add_argument_group("request shape")
    for side, mean in (("input", 512), ("output", 128)):
        shape.add_argument(f"--{side}-tokens", type=number(1, MAX_TOKENS), default=mean, help=f"mean {side} tokens")
        shape.add_argument(
            f"--{side}-stdev",
            type=number(0, MAX_TOKENS),
            default=0.0,
            help=f"standard deviation of {side} tokens (normal, lognormal)",
        )
        shape.add_argument(
            f"--{side}-dist",
            choices=DISTRIBUTIONS,
            default="constant",
            help=f"how {side} token counts are drawn (default constant: the mean; uniform: each count from "
            f"--{side}-min to --{side}-max alike, which set its mean and stdev)",
        )
        shape.add_argument(
            f"--{side}-min",
            type=count(0, MAX_TOKENS),
            default=None,
            help=f"fewest {side} tokens a request draws (default 1)",
        )
        shape.add_argument(
            f"--{side}-max",
            type=count(1, MAX_TOKENS),
            default=None,
            help=f"most {side} tokens a request draws (default {MAX_TOKENS:,})",
        )
    shape.add_argument("--prompts", type=Path, default=None, help='JSONL: {"prompt": ..., "max_tokens"?: n}')
    _workload_arguments(p.add_argument_group("file workloads (local files, read before any load; docs/serving.md)"))
    load = p.add_argument_group("load").add_mutually_exclusive_group(required=True)
    load.add_argument("--request-rates", type=_floats, help="open loop, requests/s per level")
    load.add_argument("--concurrency", type=_floats, help="closed loop, users per level")
    load.add_argument("--auto", action="store_true", help="open loop, raise the rate until the sweep stops")
    load.add_argument("--trace-speedups", type=_floats, help="--workload trace: replay at these speed-ups per level")
    p.add_argument("--auto-start", type=number(above=0, high=1e6), default=1.0, help="first rate of --auto (req/s)")
    p.add_argument(
        "--auto-factor", type=number(above=1, high=100), default=1.5, help="rate multiplier between --auto levels"
    )
    p.add_argument(
        "--max-levels",
        type=count(1, MAX_LEVELS),
        default=12,
        help=f"most levels of --auto (default 12, at most {MAX_LEVELS})",
    )
    p.add_argument(
        "--arrival",
        choices=("poisson", "gamma"),
        default="poisson",
        help="open loop: Poisson arrivals (default), or gamma with shape --burstiness",
    )
    p.add_argument(
        "--burstiness", type=number(above=0, high=1e3), default=None, help="gamma shape k (1 = Poisson, < 1 burstier)"
    )
    p.add_argument(
        "--duration", type=SECONDS, default=60.0, help="seconds per level (open loop: its schedule; closed: sending)"
    )
    p.add_argument(
        "--warmup",
        type=count(0, 1_000_000),
        default=0,
        help="requests sent before each level and thrown away (stated in it)",
    )
    p.add_argument(
        "--warmup-seconds", type=number(0, 86_400), default=0.0, help="... or for this long (with --warmup: both)"
    )
    p.add_argument(
        "--min-requests",
        type=count(1, 1_000_000),
        default=100,
        help="fewest requests a level sends, past --duration if need be (default 100); a trace replay sends the "
        "trace's requests within --duration instead",
    )
    p.add_argument(
        "--max-requests",
        type=count(1, 1_000_000),
        default=20_000,
        help="most requests a level sends, ending it before --duration if need be (default 20000)",
    )
    for name in ("ttft", "tpot", "latency"):
        p.add_argument(
            f"--{name}-slo-ms", type=MILLISECONDS, default=None, help=f"p99 {name} objective (goodput, sweep)"
        )
    _deployment_arguments(p.add_argument_group("deployment (what the endpoint cannot tell)"))
    told = p.add_argument_group("server telemetry (scraped during each level; docs/serving.md)")
    told.add_argument("--metrics-url", default=None, help="the engine's Prometheus /metrics (vLLM, SGLang)")
    told.add_argument("--dcgm-url", default=None, help="a dcgm-exporter's /metrics: power, energy, utilisation")
    # finite; its range is the spec's check, which names the field
    told.add_argument("--telemetry-interval", type=number(), default=1.0, help="seconds between scrapes")
    p.add_argument("--seed", type=SEED, default=1234, help="seed of the prompts and arrival times (level i: seed + i)")


def _workload_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--workload", choices=SOURCES, default=None,
                   help="sharegpt: first human turns, the reply's length as output; sonnet: fixed prefix plus "
                   "sampled lines to --input-tokens; trace: arrival times and lengths replayed")  # fmt: skip
    g.add_argument("--dataset", type=Path, default=None, help="the workload's local file (JSON, text, JSONL or CSV)")
    g.add_argument(
        "--max-turns",
        type=count(1, 10_000),
        default=None,
        help="sharegpt: whole conversations as multi-turn sessions of up to N turns (--concurrency)",
    )
    g.add_argument(
        "--sonnet-prefix-tokens",
        type=count(0, MAX_TOKENS),
        default=200,
        help="sonnet: fixed prefix tokens (vLLM's 200)",
    )
    g.add_argument("--trace-time-unit", choices=tuple(TIME_UNITS), default="ms", help="trace: numeric timestamps")
    g.add_argument("--trace-block-tokens", type=count(1, MAX_TOKENS), default=MOONCAKE_BLOCK_TOKENS,
                   help="trace: tokens per hash_ids block (Mooncake's 512)")  # fmt: skip
    g.add_argument(
        "--shared-prefix",
        type=number(),  # finite; "from 0 to below 1" is the spec's check, which names the field
        default=None,
        help="share of each prompt's input tokens that is a prefix common to its group (0 to < 1)",
    )
    g.add_argument(
        "--prefix-groups", type=count(1, 1_000_000), default=1, help="distinct shared prefixes, one drawn per request"
    )


# The deployment flags (runners/serving/deployment.py), each overriding the --deployment file's key of the same
# meaning, and what each says in --help.
_TEXT_FLAGS = {
    "accelerator-vendor": "accelerator vendor, e.g. NVIDIA",
    "accelerator-model": 'accelerator model as the document names it, e.g. "H100 80GB HBM3"',
    "system-name": 'the system\'s name (default: "<count>x <model>")',
    "engine": "serving engine, e.g. vllm",
    "engine-version": "the engine's version (default: the one the endpoint reports, if it does)",
    "image": "container image the engine ran in, e.g. vllm/vllm-openai:v0.11.0",
    "engine-args": "the engine's launch command line; its capacity flags (--max-num-seqs ...) become settings",
    "weights": "weight format as the protocol names it, e.g. bf16, fp8-e4m3, nvfp4",
    "activations": "activation format, e.g. bf16",
    "kv-cache": "KV-cache format, e.g. fp8-e4m3",
    "quantization-method": 'quantization method in words, e.g. "fp8 dynamic"',
    "speculative": 'speculative decoding in words, e.g. "eagle3, 3 tokens"',
    "kv-offload": 'KV-cache offload in words, e.g. "lmcache, 200 GiB DRAM"',
}
# What `benchreg import serving` calls the same facts (registry/importers/serving/deployment.py): taken here too, so
# one deployment's flags work for both commands.
_IMPORT_NAMES = {"image": "engine-image", "quantization-method": "quantization"}
_COUNT_FLAGS = {
    "accelerator-count": "accelerators serving the model, all nodes together",
    "nodes": "machines the deployment spans",
    "tensor-parallel": "tensor-parallel size",
    "expert-parallel": "expert-parallel size",
    "pipeline-parallel": "pipeline-parallel stages",
    "data-parallel": "data-parallel replicas",
}


def _deployment_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--deployment",
        type=Path,
        default=None,
        help="YAML, TOML or JSON file (docs/serving.md); a flag overrides its key",
    )
    for name, words in _TEXT_FLAGS.items():
        also = [f"--{_IMPORT_NAMES[name]}"] if name in _IMPORT_NAMES else []
        g.add_argument(f"--{name}", *also, default=None, help=words)
    for name, words in _COUNT_FLAGS.items():
        g.add_argument(f"--{name}", type=int, default=None, help=words)
    g.add_argument(
        "--accelerator-memory-gib", type=number(above=0, high=1e6), default=None, help="memory of one accelerator, GiB"
    )
    g.add_argument(
        "--data-parallel-attention",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether attention runs data-parallel (default: not said)",
    )


def _law(args: argparse.Namespace, side: str) -> TokenLaw:
    return TokenLaw(*(getattr(args, f"{side}_{key}") for key in ("tokens", "stdev", "dist", "min", "max")))


def _plan(args: argparse.Namespace) -> LoadPlan:
    mode = "automatic" if args.auto else "request-rate" if args.request_rates else "concurrency"
    mode = "trace" if args.trace_speedups else mode
    loads = args.request_rates or args.concurrency or args.trace_speedups or ()
    return LoadPlan(
        mode, loads, args.duration, args.min_requests, args.max_requests,
        args.auto_start, args.auto_factor, args.max_levels, warmup_requests=args.warmup,
        warmup_seconds=args.warmup_seconds,
    )  # fmt: skip


def spec_from_args(args: argparse.Namespace) -> ServingSpec:
    """The run the flags describe, as the ServingSpec an agent job would hold (runners/serving/spec.py).

    ValueError (SpecInvalid names the field) for anything wrong; the deployment file's values give way to flags."""
    base = deploy.load(args.deployment) if args.deployment else deploy.Deployment()
    from_file = args.prompts is not None or args.workload in FILE_LENGTHS
    return ServingSpec(
        endpoint=args.endpoint, model=args.model, load=_plan(args), deployment=base.merged(vars(args)),
        input_tokens=None if from_file else _law(args, "input"), output_tokens=_law(args, "output"),
        prompts=str(args.prompts) if args.prompts is not None else None, api=args.api, timeout_s=args.timeout,
        arrival=args.arrival, burstiness=args.burstiness,
        objectives=Objectives(args.ttft_slo_ms, args.tpot_slo_ms, args.latency_slo_ms),
        seed=args.seed, submitter=args.submitter,
        workload=args.workload, dataset=str(args.dataset) if args.dataset is not None else None,
        max_turns=args.max_turns, sonnet_prefix_tokens=args.sonnet_prefix_tokens,
        trace_time_unit=args.trace_time_unit, trace_block_tokens=args.trace_block_tokens,
        shared_prefix=args.shared_prefix, prefix_groups=args.prefix_groups,
        metrics_url=args.metrics_url, dcgm_url=args.dcgm_url, telemetry_interval_s=args.telemetry_interval,
    )  # fmt: skip


def prepare(args: argparse.Namespace) -> tuple[Context, LoadPlan, Objectives]:
    """(context, plan, objectives) from parsed arguments; ValueError says which argument is wrong."""
    return spec_from_args(args).prepare()


def _client_words(doc: dict[str, Any]) -> str:
    """The level's client verdict in words: kept up, or fell behind with what the client measured of itself."""
    if doc["metrics"]["client"]["kept_up"]:
        return "client kept up"
    reasons = doc["conditions"]["steady_state"].get("reasons") or []
    return "client fell behind (" + "; ".join(r.removeprefix("client fell behind: ") for r in reasons) + ")"


def _energy_words(doc: dict[str, Any]) -> str:
    """The level's measured energy per output token (protocol.sizing, as decisions read it), where it has one."""
    if not doc["metrics"].get("energy"):
        return ""
    derived = sizing.energy_per_output(doc)
    joules = doc["metrics"]["energy"]["joules"]
    return f", {joules:g} J" + (f", {derived.value:.4g} {derived.unit}" if derived.value is not None else "")


def main(args: argparse.Namespace, submit: Any) -> int:
    """Run the sweep; `submit(doc, path) -> bool` sends a written document when --submit is given."""
    try:
        ctx, plan, objectives = prepare(args)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failures = 0

    def emit(doc: dict[str, Any], requests: bytes | None) -> None:
        nonlocal failures
        if requests is not None:  # first: a document is never left naming an export that is not beside it
            write_export(args.out, doc, requests)
        path = _write(doc, args.out)
        m = doc["metrics"]
        print(
            f"wrote {path}: {m['throughput']['value']:g} tok/s, {m['requests']['completed']}/{m['requests']['sent']} "
            f"completed, {_client_words(doc)}{_energy_words(doc)}"
            + (
                f"; sweep stopped: {doc['scenario']['sweep']['stop_reason']}"
                if doc["scenario"]["sweep"]["stop_reason"]
                else ""
            )
        )
        if args.submit and not submit(doc, path):
            failures += 1

    try:
        with interrupts.doing(
            f"the serving sweep against {args.endpoint}",
            left=f"the level under way was not written (a level is written whole, once measured); those before stay "
            f"in {args.out}",
        ):
            run_sync(ctx, plan, objectives, emit)
    except Refused as exc:
        print("refused before any load was sent:", file=sys.stderr)
        for reason in exc.reasons:
            print(f"  {reason}", file=sys.stderr)
        return 2
    except LevelRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 1 if failures else 0


def _write(doc: dict[str, Any], out: Path) -> Path:
    path = out / file_name(doc)
    _write_bytes(path, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode())
    return path


def _write_bytes(path: Path, data: bytes) -> None:
    """Written whole or not at all: to a temporary name, then moved into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
