"""`benchreg run collectives`: collective benchmarks on PyTorch's own distributed engine, reported as nccl-tests does.

    benchreg run collectives --nproc-per-node 2 --min-bytes 8 --max-bytes 1M

The processes are started by torch.distributed's launcher (`elastic_launch`, what `torch.distributed.run` uses, with
its c10d rendezvous); each joins the default process group from the launcher's environment: gloo on CPUs, NCCL where
CUDA is available. Per collective and message size, as nccl-tests' BenchTime: warm-up calls (not timed), a barrier,
`iters` timed calls (with a device synchronisation before the clock stops on CUDA), each rank's mean time per call,
then the maximum over ranks (nccl-tests' `-a 3`; its default `-a 1` is the mean; the slowest rank is what a training
step waits for). Algorithm and bus bandwidth come from protocol/collectives.py. Output: nccl-tests' table, one per
collective (printed and written as <out>/<collective>.txt, which registry/importers/nccl_tests.py reads back), and
one JSON file with every rank's time. Sides torch does not offer are left blank as nccl-tests leaves a side not run:
all-reduce and broadcast are in place only in torch, all-to-all out of place only (gloo's in-place all_to_all_single
returns wrong data).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import protocol
from protocol import collectives as formulas

from . import collectives_document, nccl_table, record, topology
from .arguments import PROCESSES, count
from .rendezvous import Rendezvous, launch_config
from .rendezvous import add_arguments as add_rendezvous_arguments
from .rendezvous import from_arguments as rendezvous_from

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall")
DTYPES = {"float": 4, "half": 2, "bfloat16": 2, "double": 8}
FORMAT = "benchreg-collectives/1"


@dataclass(frozen=True)
class Options:
    collectives: tuple[str, ...] = COLLECTIVES
    min_bytes: int = 8
    max_bytes: int = 1 << 20
    step_factor: int = 2
    warmup: int = 5
    iters: int = 20
    dtype: str = "float"
    device: str = "auto"  # "cpu" (gloo), "cuda" (NCCL), or auto: cuda where available
    delay_rank: int | None = None  # truth tests: this rank sleeps `delay_s` before each call
    delay_s: float = 0.0


@dataclass
class Measured:
    collective: str
    side: str  # "out-of-place" or "in-place"
    size: int
    count: int
    time_us: float  # the max over ranks of each rank's mean per call
    algbw: float
    busbw: float
    rank_times_us: list[float] = field(default_factory=list)


def parse_size(text: str) -> int:
    """nccl-tests' parsesize: a number with an optional K, M or G (powers of 1024)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip()
    scale = units.get(text[-1:].lower(), 1)
    number = text[:-1] if scale > 1 else text
    try:
        value = int(float(number) * scale)
    except (ValueError, OverflowError):  # not a number; NaN; infinity
        raise ValueError(f"a size is a number of bytes with an optional K, M or G, not {text!r}") from None
    if value < 1:
        raise ValueError(f"a size must be at least 1 byte, not {text!r}")
    return value


def size_argument(text: str) -> int:
    """parse_size as argparse's `type=`: its message shown (argparse would say only "invalid parse_size value")."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def sizes(options: Options) -> list[int]:
    if options.step_factor < 2:
        raise ValueError(f"--step-factor must be at least 2, not {options.step_factor}")
    if options.min_bytes > options.max_bytes:
        raise ValueError(f"--min-bytes ({options.min_bytes:,}) must not exceed --max-bytes ({options.max_bytes:,})")
    out, size = [], options.min_bytes
    while size <= options.max_bytes:
        out.append(size)
        size *= options.step_factor
    return out


def element_count(collective: str, size: int, typesize: int, nranks: int) -> int:
    """nccl-tests' per-call count for `size` bytes (*GetCollByteCount): per rank, 16-byte aligned, for the gathers."""
    count = size // typesize
    if formulas.collective(collective).bytes_scale(nranks) == 1:
        return count
    return (count // nranks) & ~(16 // typesize - 1)


# --- inside each process -----------------------------------------------------------------------------------------


def worker(options: Options, leader: bool = True) -> dict[str, Any]:
    """Run in every process the launcher starts; local rank 0 of the leading node (node rank 0 of a group, the only
    node otherwise) returns the results, which every rank holds; the others return an empty dict."""
    import torch
    import torch.distributed as dist

    use_cuda = options.device == "cuda" or (options.device == "auto" and torch.cuda.is_available())
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if use_cuda:
        torch.cuda.set_device(local_rank)
    if use_cuda:  # device_id binds the communicator to this rank's GPU now (torch >= 2.3), not at the first call
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    else:
        dist.init_process_group("gloo")
    try:
        device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
        devices = _gather_devices(device)
        hosts = _gather_topology(devices, local_rank)
        results = [m for name in options.collectives for m in _sweep(name, options, device)]
        environment = _environment(dist.get_backend(), use_cuda)
        mine = {"devices": devices, "hosts": hosts, "results": results, "environment": environment}
        return mine if leader and local_rank == 0 else {}
    finally:
        dist.destroy_process_group()


def _gather_devices(device: Any) -> list[dict[str, Any]]:
    import torch
    import torch.distributed as dist

    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        bus = f"{getattr(props, 'pci_domain_id', 0):04x}:{getattr(props, 'pci_bus_id', 0):02x}:"
        bus += f"{getattr(props, 'pci_device_id', 0):02x}"
        mine = {"device": device.index, "bus_id": bus, "name": props.name}
    else:  # a CPU rank: no bus id; the processor model names it
        mine = {"device": 0, "bus_id": "cpu", "name": platform.processor() or platform.machine()}
    mine |= {"rank": dist.get_rank(), "pid": os.getpid(), "host": socket.gethostname()}
    everyone: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    return everyone


def _gather_topology(devices: list[dict[str, Any]], local_rank: int) -> list[dict[str, Any]]:
    """Each host's topology (read by its local rank 0) with every rank's CPU affinity, gathered on every rank."""
    import torch.distributed as dist

    host = socket.gethostname()
    bus_ids = [d["bus_id"] for d in devices if d["host"] == host and d["bus_id"] != "cpu"]
    mine = {
        "host": host,
        "node": int(os.environ.get("GROUP_RANK", "0")),  # the launcher's node: two agents may share one host
        "rank": dist.get_rank(),
        "cpus": topology.cpu_affinity(),
        "entry": topology.host_entry(host, bus_ids) if local_rank == 0 else None,
    }
    everyone: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    hosts = [dict(r["entry"]) for r in everyone if r["entry"] is not None]
    nodes = [r["node"] for r in everyone if r["entry"] is not None]
    for entry, node in zip(hosts, nodes, strict=True):
        ranks = [r for r in everyone if r["node"] == node]
        entry["ranks"] = [r["rank"] for r in ranks]
        entry["cpu_affinity"] = [{"rank": r["rank"], "cpus": r["cpus"]} for r in ranks]
    return hosts


def _sweep(name: str, options: Options, device: Any) -> list[Measured]:
    import torch.distributed as dist

    typesize = DTYPES[options.dtype]
    nranks = dist.get_world_size()
    out = []
    for size in sizes(options):
        count = element_count(name, size, typesize, nranks)
        if count == 0:
            continue  # fewer elements than ranks (or than 16-byte blocks): nothing to move
        for side, call in _calls(name, count, options, device).items():
            out.append(_measure(name, side, count, typesize, call, options, device))
    return out


def _calls(name: str, count: int, options: Options, device: Any) -> dict[str, Callable[[], None]]:
    """The forms torch offers for `name`: buffers allocated once, outside the timed loop."""
    import torch
    import torch.distributed as dist

    dtype = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16, "double": torch.float64}
    n, rank = dist.get_world_size(), dist.get_rank()

    def buffer(elements: int) -> Any:
        return torch.zeros(elements, dtype=dtype[options.dtype], device=device)  # zeros: sums never overflow

    if name == "all_reduce":
        data = buffer(count)
        return {"in-place": lambda: dist.all_reduce(data)}
    if name == "broadcast":
        data = buffer(count)
        return {"in-place": lambda: dist.broadcast(data, src=0)}
    if name == "alltoall":
        send, receive = buffer(count * n), buffer(count * n)
        return {"out-of-place": lambda: dist.all_to_all_single(receive, send)}
    big, small, whole = buffer(count * n), buffer(count), buffer(count * n)
    mine = whole[rank * count : (rank + 1) * count]
    if name == "all_gather":
        return {
            "out-of-place": lambda: dist.all_gather_into_tensor(big, small),
            "in-place": lambda: dist.all_gather_into_tensor(whole, mine),
        }
    return {
        "out-of-place": lambda: dist.reduce_scatter_tensor(small, big),
        "in-place": lambda: dist.reduce_scatter_tensor(mine, whole),
    }


def _measure(
    name: str, side: str, count: int, typesize: int, call: Callable[[], None], options: Options, device: Any
) -> Measured:
    import torch
    import torch.distributed as dist

    rank, nranks = dist.get_rank(), dist.get_world_size()
    delay = options.delay_s if options.delay_rank == rank else 0.0
    on_cuda = device.type == "cuda"

    def sync() -> None:
        if on_cuda:
            torch.cuda.synchronize(device)

    for _ in range(options.warmup):
        call()
    sync()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(options.iters):
        if delay:
            time.sleep(delay)  # the injected delay: a slow rank holds the collective back by this much per call
        call()
    sync()
    mine = (time.perf_counter() - start) / options.iters
    times = torch.tensor([mine], dtype=torch.float64, device=device)
    every = [torch.zeros_like(times) for _ in range(nranks)]
    dist.all_gather(every, times)
    per_rank = [float(t.item()) for t in every]
    seconds = max(per_rank)
    bw = formulas.bandwidth(name, count=count, typesize=typesize, seconds=seconds, nranks=nranks)
    size = formulas.collective(name).printed_bytes(count, typesize, nranks)
    return Measured(name, side, size, count, seconds * 1e6, bw.algbw, bw.busbw, [t * 1e6 for t in per_rank])


def _environment(backend: str, use_cuda: bool) -> dict[str, Any]:
    import torch

    nccl = None
    if use_cuda:
        version = torch.cuda.nccl.version()  # type: ignore[no-untyped-call]
        nccl = ".".join(str(part) for part in version) if isinstance(version, tuple) else str(version)
    return {
        "backend": backend,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl,
        "nccl_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")},
    }


# --- the launcher side -------------------------------------------------------------------------------------------


def launch(options: Options, nproc_per_node: int, rendezvous: Rendezvous | None = None) -> dict[str, Any]:
    """Start `nproc_per_node` processes with torch.distributed's launcher on this node (one of `rendezvous.nnodes`
    meeting at its endpoint, or alone); the results on the leading node, {} on the others."""
    from torch.distributed.launcher.api import elastic_launch

    if nproc_per_node < 1:
        raise ValueError("--nproc-per-node must be at least 1")
    config = launch_config(nproc_per_node, rendezvous, "collectives")
    returned = elastic_launch(config, worker)(options, rendezvous is None or rendezvous.leads)
    return next((dict(value) for value in returned.values() if value), {})


def tables(options: Options, outcome: dict[str, Any]) -> dict[str, str]:
    """nccl-tests' table for each collective, from rank 0's results."""
    nranks = len(outcome["devices"])
    out = {}
    for name in options.collectives:
        rows = _rows(name, options, outcome["results"], nranks)
        lines = nccl_table.header_lines(
            collective=name,
            min_bytes=options.min_bytes,
            max_bytes=options.max_bytes,
            step_factor=options.step_factor,
            warmup=options.warmup,
            iters=options.iters,
        )
        lines += [nccl_table.device_line(nccl_table.DeviceLine(**d)) for d in outcome["devices"]]
        lines += nccl_table.column_lines() + [nccl_table.row_line(r) for r in rows]
        lines += nccl_table.footer_lines(rows, name)
        out[name] = "\n".join(lines) + "\n"
    return out


def _rows(name: str, options: Options, results: list[Measured], nranks: int) -> list[nccl_table.TableRow]:
    by_size: dict[int, dict[str, Measured]] = {}
    for m in results:
        if m.collective == name:
            by_size.setdefault(m.size, {})[m.side] = m
    redop = "sum" if name in ("all_reduce", "reduce_scatter") else "none"
    root = 0 if name == "broadcast" else -1

    def side(m: Measured | None) -> nccl_table.Side | None:
        return None if m is None else nccl_table.Side(m.time_us, m.algbw, m.busbw)

    return [
        nccl_table.TableRow(
            size,
            next(iter(sides.values())).count,
            options.dtype,
            redop,
            root,
            side(sides.get("out-of-place")),
            side(sides.get("in-place")),
        )
        for size, sides in sorted(by_size.items())
    ]


def document(options: Options, outcome: dict[str, Any], nproc_per_node: int) -> dict[str, Any]:
    """The JSON written beside the tables: every measurement with each rank's time, and small-message latency."""
    results: list[Measured] = outcome["results"]
    latency: dict[str, float] = {}
    for m in results:  # the smallest size measured, as nccl-tests' small sizes read as latency
        smallest = min(r.size for r in results if r.collective == m.collective)
        if m.size == smallest:
            latency[m.collective] = min(latency.get(m.collective, m.time_us), m.time_us)
    return {
        "format": FORMAT,
        "options": asdict(options),
        "world_size": len(outcome["devices"]),
        "nproc_per_node": nproc_per_node,
        "environment": outcome["environment"],
        "devices": outcome["devices"],
        "definitions": {name: formulas.collective(name).source for name in options.collectives},
        "time": "max over ranks of each rank's mean time per call (nccl-tests -a 3)",
        "small_message_latency_us": latency,
        "results": [asdict(m) for m in results],
    }


@dataclass(frozen=True)
class Written:
    texts: dict[str, str]  # nccl-tests' table per collective ({} on a node other than 0 of a group)
    json_path: Path | None
    runs: list[Path]  # one protocol 1.3 run document per collective
    refused: str = ""  # why no run document was written (protocol.check's errors), "" when they were


def run(
    options: Options, nproc_per_node: int, out: Path, submitter: str = "local", rendezvous: Rendezvous | None = None
) -> Written:
    """Launch, write <out>/<collective>.txt, <out>/collectives.json and one protocol 1.3 run document per
    collective (<out>/<collective>.run.json), each checked by protocol.check; a measurement the protocol refuses
    (e.g. fewer timed calls than a window needs) keeps its tables and JSON and says why it has no document."""
    started = record.now()
    outcome = launch(options, nproc_per_node, rendezvous)
    if not outcome:  # another node of the group leads: it writes the one run, with this node's ranks in it
        return Written({}, None, [])
    context = collectives_document.Context(submitter, started, record.now(), nproc_per_node)
    out.mkdir(parents=True, exist_ok=True)
    texts = tables(options, outcome)
    for name, text in texts.items():
        (out / f"{name}.txt").write_text(text)
    path = out / "collectives.json"
    path.write_text(json.dumps(document(options, outcome, nproc_per_node), indent=1) + "\n")
    try:
        documents = {n: collectives_document.document(n, options.dtype, options, outcome, context) for n in texts}
    except protocol.Invalid as exc:
        return Written(texts, path, [], str(exc))
    runs = []
    for name, doc in documents.items():
        runs.append(out / f"{name}.run.json")
        runs[-1].write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return Written(texts, path, runs)


# --- `benchreg run collectives` ------------------------------------------------------------------------------------


def add_arguments(p: Any) -> None:
    """The arguments of `benchreg run collectives` (nccl-tests' -b, -e, -f, -w, -n under long names)."""
    p.add_argument("--nproc-per-node", type=PROCESSES, default=2, help="processes (ranks) on this node")
    p.add_argument("--collectives", default=",".join(COLLECTIVES), help=f"comma-separated, of {', '.join(COLLECTIVES)}")
    p.add_argument("--min-bytes", type=size_argument, default=8, help="smallest message, e.g. 8, 64K (nccl-tests -b)")
    p.add_argument("--max-bytes", type=size_argument, default=1 << 20, help="largest message, e.g. 1M (-e)")
    p.add_argument("--step-factor", type=count(2, 1024), default=2, help="size multiplier between messages (-f)")
    p.add_argument("--warmup-iters", type=count(0, 1_000_000), default=5, help="untimed calls per size (-w)")
    p.add_argument("--iters", type=count(1, 1_000_000), default=20, help="timed calls per size (-n)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float", help="element type of the messages (-d)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="auto: cuda (NCCL) if available")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("results/collectives"),
        help="folder for the tables, the JSON file and the run documents (default results/collectives)",
    )
    p.add_argument(
        "--submitter",
        default=os.environ.get("BENCHREG_SUBMITTER", "local"),
        help="who the documents name as submitter (default: BENCHREG_SUBMITTER, else local)",
    )
    add_rendezvous_arguments(p, "benchreg-collectives")


def _check_device(options: Options, nproc_per_node: int) -> None:
    import torch

    if options.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: CUDA is not available here (this torch: " + torch.__version__ + ")")
    gpus = torch.cuda.device_count() if options.device != "cpu" else 0
    if gpus and nproc_per_node > gpus:  # NCCL refuses two ranks on one device
        raise ValueError(
            f"--nproc-per-node {nproc_per_node} on NCCL needs as many GPUs, {gpus} here (--device cpu runs gloo)"
        )


def options_from(args: Any) -> Options:
    names = tuple(formulas.collective(n.strip()).name for n in args.collectives.split(",") if n.strip())
    unknown = [n for n in names if n not in COLLECTIVES]
    if unknown or not names:
        raise ValueError(f"--collectives takes {', '.join(COLLECTIVES)}, not {args.collectives!r}")
    if args.iters < 1 or args.warmup_iters < 0:
        raise ValueError("--iters must be >= 1 and --warmup-iters >= 0")
    options = Options(
        collectives=names,
        min_bytes=args.min_bytes,
        max_bytes=args.max_bytes,
        step_factor=args.step_factor,
        warmup=args.warmup_iters,
        iters=args.iters,
        dtype=args.dtype,
        device=args.device,
    )
    sizes(options)  # a clear error now rather than in every rank
    return options


def main(args: Any) -> int:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    try:
        options = options_from(args)
        _check_device(options, args.nproc_per_node)
        rendezvous = rendezvous_from(args)
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    try:
        written = run(options, args.nproc_per_node, args.out, args.submitter, rendezvous)
    except ChildFailedError as exc:  # a rank died: the run fails, nothing is written
        print(f"error: a rank failed, no result written: {exc.get_first_failure()[1].message}")
        return 1
    if written.json_path is None:
        print(f"node {args.node_rank} of {args.nnodes}: its ranks ran; node 0 writes the run with every rank's figures")
        return 0
    for text in written.texts.values():
        print(text, end="")
    tables_written = ", ".join(f"{n}.txt" for n in written.texts)
    print(f"wrote {written.json_path} and {tables_written} in {args.out}")
    if written.refused:
        print(f"no run document: the protocol refuses this measurement: {written.refused}")
        return 1
    print(f"run documents (protocol 1.3): {', '.join(p.name for p in written.runs)}")
    return 0
