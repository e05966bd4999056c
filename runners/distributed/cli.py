"""`benchreg run distributed-training` and `benchreg run scaling`: DDP or FSDP on torch.distributed, one document a run.

    benchreg run distributed-training --workload mlp-tiny --parallelism ddp --nproc-per-node 4 --batch 16
    benchreg run scaling --workload mlp-tiny --devices 1,2,4 --mode weak --batch 16 --runs 2

Several nodes form one world when each runs the same command with `--nnodes N --node-rank R --rdzv-endpoint
host:port --rdzv-id ID` (runners/rendezvous.py, as `benchreg run collectives`): node 0 hosts the rendezvous and
writes the one document with every rank's figures; the others print one line and write nothing.

A scaling plan runs one configuration at each device count, in one series (scenario.distributed.scaling: one id, the
mode, the sizes, this run's index) and prints its efficiency against the 1-device runs (protocol/scaling.py).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import protocol
from protocol import scaling as scaling_law

from .. import record, rendezvous
from ..arguments import LEARNING_RATE, PROCESSES, REPETITIONS, SAMPLES, SEED, THREADS, count, number
from ..backends import get_backend
from ..rendezvous import Rendezvous
from ..spec import RunSpec, available_threads
from ..workloads import WORKLOADS
from .options import MAX_INJECTED_S, PARALLELISMS, SCALING_MODES, Injected, Options, Scaling


def _counts(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--devices takes comma-separated integers, not {text!r}") from None
    if not values or min(values) < 1 or len(set(values)) != len(values) or len(values) > 64:
        raise argparse.ArgumentTypeError("--devices takes distinct positive counts (at most 64)")
    return sorted(values)


INJECTED_MS = number(0, MAX_INJECTED_S * 1000)  # Injected's own bound


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workload", required=True, choices=sorted(WORKLOADS), help="bundled model to train, on synthetic data"
    )
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16"), help="numeric format (default fp32)")
    p.add_argument(
        "--parallelism", choices=PARALLELISMS, default="ddp", help="ddp: DistributedDataParallel; fsdp: FSDP2"
    )
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu: gloo; cuda: NCCL, one GPU a rank")
    p.add_argument("--threads", type=THREADS, default=None, help="intra-op threads a rank (default: CPUs ÷ ranks)")
    p.add_argument("--accumulation", type=count(1, 1024), default=1, help="micro-batches per optimizer step")
    p.add_argument("--steps", type=count(1, 100_000), default=30, help="measured optimizer steps")
    p.add_argument("--warmup-steps", type=count(0, 100_000), default=5, help="optimizer steps before the clock starts")
    p.add_argument(
        "--repetitions", type=REPETITIONS, default=3, help="the measured steps are split into this many windows"
    )
    p.add_argument(
        "--sequence-length",
        type=SAMPLES,
        default=None,
        help="tokens per sample, transformer workloads (default: the workload's)",
    )
    p.add_argument("--seed", type=SEED, default=1234, help="seed of the synthetic weights and data")
    p.add_argument("--learning-rate", type=LEARNING_RATE, default=3e-4, help="AdamW learning rate (default 3e-4)")
    p.add_argument(
        "--isolation",
        choices=("dedicated", "shared"),
        default=None,
        help="state whether the machine ran nothing else (not detectable, so not guessed)",
    )
    p.add_argument(
        "--inject-communication-ms", type=INJECTED_MS, default=0.0, help="truth tests: sleep in the gradient sync"
    )
    p.add_argument(
        "--inject-compute-ms", type=INJECTED_MS, default=0.0, help="truth tests: sleep per micro-batch, all ranks"
    )
    p.add_argument(
        "--slow-rank", type=count(0, 1_000_000), default=None, help="truth tests: this rank sleeps --slow-rank-ms more"
    )
    p.add_argument(
        "--slow-rank-ms", type=INJECTED_MS, default=0.0, help="truth tests: the slow rank's extra ms per micro-batch"
    )


def add_training_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--nproc-per-node", type=PROCESSES, default=2, help="ranks on this node (one device each)")
    p.add_argument("--batch", type=SAMPLES, default=None, help="per-device micro-batch (default: the workload's)")
    rendezvous.add_arguments(p, "benchreg-training")


def add_scaling_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--devices", type=_counts, default=[1, 2, 4], help="device counts, e.g. 1,2,4 (1 is the reference)")
    p.add_argument("--mode", choices=SCALING_MODES, required=True, help="weak: --batch per device; strong: global")
    p.add_argument("--batch", type=SAMPLES, default=None, help="weak: per-device micro-batch")
    p.add_argument("--global-batch", type=SAMPLES, default=None, help="strong: the global batch every size shares")
    p.add_argument("--runs", type=count(1, 100), default=1, help="runs at each size")


def options_from(
    args: argparse.Namespace, nproc: int, batch: int | None, plan: Scaling | None = None, nnodes: int = 1
) -> Options:
    """The Options of one run (ValueError names what is wrong)."""
    threads = args.threads or max(1, available_threads() // nproc)
    spec = RunSpec(
        phase="training",
        workload=args.workload,
        precision=args.precision,
        batch_size=batch,
        device=args.device,
        threads=threads,
        sequence_length=args.sequence_length,
        seed=args.seed,
        learning_rate=args.learning_rate,
        isolation=args.isolation,
        submitter=args.submitter,
    )
    injected = Injected(
        communication_s=args.inject_communication_ms / 1e3,
        compute_s=args.inject_compute_ms / 1e3,
        slow_rank=args.slow_rank,
        slow_s=args.slow_rank_ms / 1e3,
    )
    return Options(
        spec=spec,
        parallelism=args.parallelism,
        nproc_per_node=nproc,
        nnodes=nnodes,
        accumulation=args.accumulation,
        warmup_steps=args.warmup_steps,
        steps=args.steps,
        repetitions=args.repetitions,
        injected=injected,
        scaling=plan,
    )


def check_device(options: Options) -> None:
    import torch

    if options.spec.device != "cuda":
        return
    if not torch.cuda.is_available():
        raise ValueError(f"--device cuda: CUDA is not available here (torch {torch.__version__})")
    if options.nproc_per_node > torch.cuda.device_count():  # NCCL refuses two ranks on one device
        raise ValueError(f"{options.nproc_per_node} ranks on NCCL need as many GPUs; {torch.cuda.device_count()} here")


def run(options: Options, meet: Rendezvous | None = None) -> dict[str, Any] | None:
    """Launch this node's ranks (alone, or one of `meet.nnodes`) and return the validated document; None on a node
    other than 0, whose ranks' figures are in node 0's document."""
    from .document import RUNNER, VERSION, build  # PyTorch, loaded only when a run starts (`--help` stays light)
    from .launch import launch

    check_device(options)
    backend = get_backend("torch", options.spec.device)
    recorder = record.Recorder(backend, "training", options.spec.submitter, runner=RUNNER, version=VERSION)
    outcome = launch(options, meet)
    return build(options, backend, recorder, outcome) if outcome else None


def strong_batch(global_batch: int, devices: int, accumulation: int) -> int:
    """The per-device batch of a strong-scaling size; ValueError where the global batch does not divide."""
    if global_batch % (devices * accumulation):
        raise ValueError(
            f"--global-batch {global_batch} does not divide over {devices} device(s) × {accumulation} accumulation"
        )
    return global_batch // (devices * accumulation)


def plan_options(args: argparse.Namespace) -> list[Options]:
    """Every run of a scaling plan, smallest size first, all of one plan id."""
    if args.mode == "strong" and args.global_batch is None:
        raise ValueError("strong scaling needs --global-batch (the batch every size shares)")
    if args.mode == "weak" and args.global_batch is not None:
        raise ValueError("weak scaling fixes the per-device batch: give --batch, not --global-batch")
    if not 1 <= args.runs <= 100:
        raise ValueError("--runs must be between 1 and 100")
    plan_id = f"scaling-{uuid.uuid4().hex[:12]}"
    out = []
    for index, n in enumerate(args.devices):
        batch = strong_batch(args.global_batch, n, args.accumulation) if args.mode == "strong" else args.batch
        for repeat in range(args.runs):
            plan = Scaling(plan_id, args.mode, index, tuple(args.devices), repeat)
            out.append(options_from(args, n, batch, plan))
    return out


def main(args: argparse.Namespace, submit: Callable[[dict[str, Any], Path], bool] | None) -> int:
    """Run `benchreg run distributed-training` or `scaling`: write each document, submit it if asked."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    try:
        one = args.phase != "scaling"
        meet = rendezvous.from_arguments(args) if one else None
        nnodes = meet.nnodes if meet is not None else 1
        runs = [options_from(args, args.nproc_per_node, args.batch, None, nnodes)] if one else plan_options(args)
        for options in runs:
            check_device(options)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    documents = []
    for options in runs:
        print(f"training {options.parallelism} on {options.world_size} rank(s)…", file=sys.stderr, flush=True)
        try:
            doc = run(options, meet)
        except ChildFailedError as exc:  # a rank died: this run fails, nothing is written for it
            print(f"error: a rank failed, no result written: {exc.get_first_failure()[1].message}", file=sys.stderr)
            return 1
        except protocol.Invalid as exc:
            print(f"error: the runner produced an invalid document: {exc}", file=sys.stderr)
            return 1
        if doc is None:
            print(f"node {args.node_rank} of {nnodes}: its ranks ran; node 0 writes the run with every rank's figures")
            return 0
        path = record.write(doc, args.out)
        print(f"wrote {path}")
        documents.append(doc)
        if submit is not None and not submit(doc, path):
            return 1
    if args.phase == "scaling":
        for plan in scaling_law.points(documents):
            print(scaling_law.table(plan, scaling_law.efficiency(plan)))
    return 0
