"""`benchreg run inference|training ...`: run the bundled benchmarks, write validated documents, submit.

    benchreg run inference --workload decoder-small --precision bf16 --batch 1,8,32 \\
        --scenario server --target-qps 20 --out results/
    benchreg run training --workload encoder-small --precision bf16 --batch 32 --steps 500 --out results/
    benchreg run serving --endpoint http://host:8000 --model NAME --request-rates 1,2,4 --deployment d.toml
    benchreg run collectives --nproc-per-node 2 --min-bytes 8 --max-bytes 1M
    benchreg run distributed-training --workload mlp-tiny --parallelism fsdp --nproc-per-node 4 --batch 16
    benchreg run scaling --workload mlp-tiny --devices 1,2,4 --mode weak --batch 16 --runs 2

One document is written per batch size. `main(argv)` takes the arguments after the program name.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import protocol
from runners.arguments import server_url

from . import collectives, interrupts, record
from .api import execute
from .backends import UnsupportedRun, default_backend
from .distributed import cli as distributed_cli
from .serving import cli as serving_cli
from .spec import FIELD_RANGES, INFERENCE_SCENARIOS, PRECISIONS, RunSpec
from .uploads import upload_named
from .workloads import WORKLOADS


def _batches(text: str) -> list[int]:
    """Batch sizes, comma-separated, each in RunSpec's range for batch_size. An empty item ("1,,2") is refused, not
    skipped: it is a typo for a size the reader meant to run."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--batch takes comma-separated whole numbers, not {text!r}") from None
    for value in values:
        if why := FIELD_RANGES["batch_size"].problem(value):
            raise argparse.ArgumentTypeError(f"a batch size: {why}")
    return values


def _common(p: argparse.ArgumentParser) -> None:
    _workload_arguments(p)
    _measurement_arguments(p)
    _output_arguments(p)


def _workload_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workload", required=True, choices=sorted(WORKLOADS), help="bundled model to run, on synthetic data"
    )
    p.add_argument(
        "--precision",
        default="fp32",
        choices=PRECISIONS,
        help="numeric format (default fp32); the numpy backend runs fp32 only, int8 (CPU) and fp8 (CUDA) are "
        "inference only",
    )
    p.add_argument("--batch", type=_batches, default=None, help="batch size(s), comma-separated: one run each")
    p.add_argument(
        "--backend",
        choices=("numpy", "torch"),
        default=None,
        help=f"default: torch if installed, else numpy (here: {default_backend()})",
    )
    p.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="cpu (default) or cuda, which needs the torch backend"
    )
    p.add_argument(
        "--threads", type=FIELD_RANGES["threads"], default=None, help="intra-op threads (default: CPUs in affinity)"
    )


def _measurement_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--repetitions",
        type=FIELD_RANGES["repetitions"],
        default=None,
        help="measurement windows (default 5; 3 with --quick and for training: the fewest a "
        "comparison forms a verdict on)",
    )
    p.add_argument(
        "--min-seconds", type=FIELD_RANGES["min_seconds"], default=None, help="minimum duration of each repetition"
    )
    p.add_argument(
        "--warmup-max-seconds",
        type=FIELD_RANGES["warmup_max_seconds"],
        default=None,
        help="warm-up cap (default 30 s, quick 3 s)",
    )
    p.add_argument(
        "--sequence-length",
        type=FIELD_RANGES["sequence_length"],
        default=None,
        help="tokens per sample, transformer workloads (default: the workload's)",
    )
    p.add_argument(
        "--seed",
        type=FIELD_RANGES["seed"],
        default=1234,
        help="seed of the synthetic weights and data, and of server arrivals",
    )
    p.add_argument("--quick", action="store_true", help="short windows, for demos and tests")
    p.add_argument(
        "--isolation",
        choices=("dedicated", "shared"),
        default=None,
        help="state whether the machine ran nothing else (not detectable, so not guessed)",
    )


def _output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--submitter",
        default=os.environ.get("BENCHREG_SUBMITTER", "local"),
        help="who the documents name as submitter (default: BENCHREG_SUBMITTER, else local)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("results"),
        help="folder the documents (and serving's per-request exports) are written to (default results)",
    )
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bars (inference and training; the others draw none)"
    )
    p.add_argument("--submit", action="store_true", help="send each result to the registry")
    p.add_argument(
        "--server", type=server_url, default=os.environ.get("BENCHREG_SERVER"), help="registry URL (BENCHREG_SERVER)"
    )
    p.add_argument("--token", default=os.environ.get("BENCHREG_TOKEN"), help="API token (BENCHREG_TOKEN)")


def _inference_arguments(inf: argparse.ArgumentParser) -> None:
    _common(inf)
    inf.add_argument(
        "--scenario",
        choices=INFERENCE_SCENARIOS,
        default="offline",
        help="offline (default): throughput of back-to-back queries; single-stream: their latency; server: "
        "Poisson arrivals at --target-qps",
    )
    inf.add_argument("--target-qps", type=FIELD_RANGES["target_qps"], default=None, help="server: Poisson arrival rate")
    inf.add_argument(
        "--concurrency", type=FIELD_RANGES["concurrency"], default=None, help="server: requests in flight at most"
    )
    inf.add_argument(
        "--latency-slo-ms", type=FIELD_RANGES["latency_slo_ms"], default=None, help="server: p99 latency objective"
    )
    inf.add_argument(
        "--ttft-slo-ms", type=FIELD_RANGES["ttft_slo_ms"], default=None, help="server, decoders: TTFT objective"
    )
    inf.add_argument(
        "--tpot-slo-ms", type=FIELD_RANGES["tpot_slo_ms"], default=None, help="server, decoders: TPOT objective"
    )
    inf.add_argument(
        "--output-tokens", type=FIELD_RANGES["output_tokens"], default=None, help="decoders: tokens generated per query"
    )


def _training_arguments(train: argparse.ArgumentParser) -> None:
    _common(train)
    train.add_argument(
        "--steps",
        type=FIELD_RANGES["steps"],
        default=None,
        help="fewest measured steps, split over the repetitions (default 500, quick 30)",
    )
    train.add_argument(
        "--learning-rate", type=FIELD_RANGES["learning_rate"], default=3e-4, help="AdamW learning rate (default 3e-4)"
    )
    train.add_argument("--peak-tflops", type=FIELD_RANGES["peak_tflops"], default=None, help="stated peak for MFU ...")
    train.add_argument("--peak-source", default=None, help="... and where that number comes from")


def _with_output(add: Callable[[argparse.ArgumentParser], None]) -> Callable[[argparse.ArgumentParser], None]:
    def both(p: argparse.ArgumentParser) -> None:
        add(p)
        _output_arguments(p)

    return both


Submit = Callable[[dict[str, Any], Path], bool]


@dataclass(frozen=True)
class Runner:
    """One `benchreg run PHASE`: its help line, its options, and what runs it. `main(args, submit)` returns the exit
    status; `submit(doc, path)` sends a written document (None: --submit was not given). `submits`: False for a
    runner that writes files only and refuses nothing about --submit."""

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    main: Callable[[argparse.Namespace, Submit | None], int]
    submits: bool = True


def _bundled(args: argparse.Namespace, submit: Submit | None) -> int:
    """The bundled inference and training runners: one document per batch size."""
    failures = 0
    try:
        run_specs = specs(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for spec in run_specs:
        failed = _run_one(spec, args, submit)
        if failed is None:
            return 2
        failures += failed
    return 1 if failures else 0


# Every runner `benchreg run` knows, in the order --help lists them: adding a runner is one row here (and its
# module), not a branch in main (docs/architecture.md, "Adding a runner").
RUNNERS: dict[str, Runner] = {
    "inference": Runner("single-stream, offline or server inference", _inference_arguments, _bundled),
    "serving": Runner(
        "an OpenAI-compatible endpoint over a load sweep (docs/serving.md)",
        _with_output(serving_cli.add_arguments),
        lambda args, submit: serving_cli.main(args, submit or (lambda doc, path: True)),
    ),
    "collectives": Runner(
        "collective bandwidth, nccl-tests' table (docs/interconnect.md)",
        collectives.add_arguments,
        lambda args, submit: collectives.main(args),
        submits=False,
    ),
    "distributed-training": Runner(
        "DDP or FSDP on torch.distributed (docs/distributed-training.md)",
        _with_output(distributed_cli.add_training_arguments),
        distributed_cli.main,
    ),
    "scaling": Runner(
        "one distributed configuration at 1, 2, 4, … devices, as one series",
        _with_output(distributed_cli.add_scaling_arguments),
        distributed_cli.main,
    ),
    "training": Runner("fixed-steps training", _training_arguments, _bundled),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="benchreg", description="Run the bundled benchmarks.")
    run = top.add_subparsers(dest="command", required=True).add_parser("run", help="run a benchmark")
    phases = run.add_subparsers(dest="phase", required=True)
    for name, runner in RUNNERS.items():
        runner.arguments(phases.add_parser(name, help=runner.help))
    return top


_COMMON_FIELDS = (
    "phase",
    "workload",
    "precision",
    "backend",
    "device",
    "threads",
    "repetitions",
    "min_seconds",
    "warmup_max_seconds",
    "sequence_length",
    "seed",
    "quick",
    "isolation",
    "submitter",
)
_PHASE_FIELDS = {
    "inference": (
        "scenario",
        "target_qps",
        "concurrency",
        "latency_slo_ms",
        "ttft_slo_ms",
        "tpot_slo_ms",
        "output_tokens",
    ),
    "training": ("steps", "learning_rate", "peak_tflops", "peak_source"),
}


def specs(args: argparse.Namespace) -> list[RunSpec]:
    """One RunSpec per batch size."""
    phase_fields = _PHASE_FIELDS["inference" if args.phase == "inference" else "training"]
    fields: dict[str, Any] = {name: getattr(args, name) for name in _COMMON_FIELDS + phase_fields}
    return [RunSpec(batch_size=b, **fields) for b in (args.batch or [None])]


def _submit(doc: dict[str, Any], path: Path, server: str, token: str) -> bool:
    from .client import RegistryClient  # imported only when submitting: httpx is not needed otherwise

    with RegistryClient(server, token) as client:
        outcome = client.submit(doc)
        print(outcome.line(f"submitted {path.name}"))
        if outcome.status not in ("stored", "known"):
            return False
        uploads = upload_named(client, doc, path.parent, outcome.run_id)  # the files it names, from beside it
        for upload in uploads:
            print(upload.line())
        return all(upload.uploaded for upload in uploads)


def main(argv: list[str]) -> int:
    """Parse `argv` (after the program name) and run the phase it names (RUNNERS)."""
    args = parser().parse_args(argv)
    runner = RUNNERS[args.phase]
    if not runner.submits:
        return runner.main(args, None)
    if args.submit and not (args.server and args.token):
        print("--submit needs --server and --token (or BENCHREG_SERVER / BENCHREG_TOKEN)", file=sys.stderr)
        return 2
    submit = (lambda doc, path: _submit(doc, path, args.server, args.token)) if args.submit else None
    return runner.main(args, submit)


def _run_one(spec: RunSpec, args: argparse.Namespace, submit: Submit | None) -> int | None:
    """Run, write and (if asked) submit one document: 1 for a failure to count, 0 for none, None for a bad run."""
    what = f"measuring {spec.phase} {spec.workload} batch {spec.batch_size or 'default'}"
    try:
        with interrupts.doing(
            what,
            left=f"its document was not written (a document is written whole, once measured); those before stay in "
            f"{args.out}",
        ):
            # said inside the step, before the first bar: a log shows where a run began, and a Ctrl-C that comes
            # once the line is out names this run
            print(f"{what}…", file=sys.stderr, flush=True)
            doc = execute(spec, progress=not args.no_progress)
    except (UnsupportedRun, ValueError) as exc:  # UnsupportedRun is a ValueError: bad combination
        print(f"error: {exc}", file=sys.stderr)
        return None
    except protocol.Invalid as exc:  # a runner bug: say exactly what, write nothing
        print(f"error: the runner produced an invalid document: {exc}", file=sys.stderr)
        return 1
    path = record.write(doc, args.out)
    print(f"wrote {path}")
    if submit is not None and not submit(doc, path):
        return 1
    return 0
