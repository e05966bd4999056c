"""ServingSpec: one serving run as a frozen value, what `benchreg run serving` parses and what an agent job holds.

Both reach the runner through `ServingSpec.prepare()` (runners/serving/runner.py measures), so an agent job
measures exactly what the command would. The JSON form a plan states (docs/serving.md, "As an agent job"):

    {"endpoint": "http://10.0.0.5:8000", "model": "meta-llama/Llama-3.1-8B-Instruct", "api": "chat",
     "input_tokens": {"mean": 1024}, "output_tokens": {"mean": 256},
     "load": {"mode": "request-rate", "loads": [1, 2, 4], "duration_s": 60},
     "objectives": {"ttft_ms": 2000, "tpot_ms": 100},
     "deployment": {"system": {"accelerators": {"vendor": "NVIDIA", "model": "H100 SXM", "count": 8}}, ...}}

`from_fields` reads it, refusing every unknown, missing or mistyped field with its JSON pointer (SpecInvalid);
`fields()` writes it back. An agent job adds `sweep_id` (the plan's, shared by the sweep's jobs) and `level`
(the one load of `load.loads` the job measures).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..arguments import MILLISECONDS, SEED
from . import deployment as deploy
from .datasets import MOONCAKE_BLOCK_TOKENS, SharedPrefix
from .deployment import Deployment
from .document import Context, skeleton_errors
from .export import write_export
from .levels import Objectives
from .loadgen import Target
from .probe import EndpointInfo, public_url
from .runner import LoadPlan, context, new_sweep, run_sync
from .shapes import RequestShape, TokenLaw, read_prompts
from .telemetry import Sources
from .workload import Workload

APIS = ("chat", "completions")
ARRIVALS = ("poisson", "gamma")
# The command's defaults (runners/serving/cli.py): 512 input and 128 output tokens a request, no objective.
DEFAULT_INPUT = TokenLaw(512)
DEFAULT_OUTPUT = TokenLaw(128)
NO_OBJECTIVES = Objectives()
FILE_LENGTHS = ("sharegpt", "trace")  # file workloads that state each request's input length


class SpecInvalid(ValueError):
    """A field of a serving spec is wrong: `pointer` (JSON pointer into the spec) and why."""

    def __init__(self, pointer: str, message: str) -> None:
        self.pointer, self.message = pointer, message
        super().__init__(f"{pointer or '/'}: {message}")


@dataclass(frozen=True)
class ServingSpec:
    """An endpoint, its request shape, the load, the objectives and the deployment the endpoint cannot tell."""

    endpoint: str
    model: str
    load: LoadPlan
    deployment: Deployment
    input_tokens: TokenLaw | None = DEFAULT_INPUT  # None with `prompts`
    output_tokens: TokenLaw = DEFAULT_OUTPUT
    prompts: str | None = None  # a JSONL file of prompts, on the machine that runs the spec
    api: str = "chat"
    timeout_s: float = 300.0
    arrival: str = "poisson"
    burstiness: float | None = None
    objectives: Objectives = NO_OBJECTIVES
    seed: int = 1234
    submitter: str = "local"
    sweep_id: str | None = None  # a planned sweep's id; None: a new one for this run
    level: int | None = None  # an agent job's one level (index into load.loads); None: every level
    # A file workload (runners/serving/workload.py), on the machine that runs the spec: sharegpt, sonnet or trace.
    workload: str | None = None
    dataset: str | None = None
    max_turns: int | None = None  # sharegpt: whole conversations as multi-turn sessions (closed loop, chat)
    sonnet_prefix_tokens: int = 200
    trace_time_unit: str = "ms"
    trace_block_tokens: int = MOONCAKE_BLOCK_TOKENS
    shared_prefix: float | None = None  # the share of each prompt's input tokens common to its group
    prefix_groups: int = 1
    metrics_url: str | None = None  # the engine's Prometheus /metrics, scraped during each level
    dcgm_url: str | None = None  # a dcgm-exporter's /metrics, scraped during each level
    telemetry_interval_s: float = 1.0

    def __post_init__(self) -> None:
        _checked("/endpoint", public_url, self.endpoint)
        if not 1 <= len(self.model) <= 200:
            raise SpecInvalid("/model", "the served model's name, as /v1/models lists it (1 to 200 characters)")
        if self.api not in APIS:
            raise SpecInvalid("/api", f"one of {', '.join(APIS)}, not {self.api!r}")
        if not (math.isfinite(self.timeout_s) and 0 < self.timeout_s <= 3600):
            raise SpecInvalid(
                "/timeout_s", f"seconds one request may take, above 0 and at most 3600, not {self.timeout_s!r}"
            )
        self._check_arrival()
        self._check_workload()
        # The ranges `run serving` reads --seed and --*-slo-ms with: a job's spec from the registry is held to them too
        if why := SEED.problem(self.seed):
            raise SpecInvalid("/seed", why)
        for name in ("ttft_ms", "tpot_ms", "latency_ms"):
            value = getattr(self.objectives, name)
            if value is not None and (why := MILLISECONDS.problem(value)):
                raise SpecInvalid(f"/objectives/{name}", why)
        if self.input_tokens is None and not self.lengths_from_file:
            raise SpecInvalid("/input_tokens", "required: the synthetic prompts' (or sonnet prompts') input length")
        if self.input_tokens is not None and self.lengths_from_file:
            raise SpecInvalid("/input_tokens", "the file gives the input lengths: give input_tokens or the file")
        if self.sweep_id is not None and not 1 <= len(self.sweep_id) <= 100:
            raise SpecInvalid("/sweep_id", "1 to 100 characters")
        _checked("/level", lambda level: replace(self.load, only=level), self.level)
        _checked("/metrics_url", lambda url: Sources(metrics_url=url), self.metrics_url)
        _checked("/dcgm_url", lambda url: Sources(dcgm_url=url), self.dcgm_url)
        _checked("/telemetry_interval_s", lambda seconds: Sources(interval_s=seconds), self.telemetry_interval_s)

    def telemetry(self) -> Sources | None:
        """What to scrape during each level; None where no source is given."""
        sources = Sources(self.metrics_url, self.dcgm_url, self.telemetry_interval_s)
        return sources if sources.urls() else None

    def _check_arrival(self) -> None:
        if self.arrival not in ARRIVALS:
            raise SpecInvalid("/arrival", f"one of {', '.join(ARRIVALS)}, not {self.arrival!r}")
        if self.arrival == "gamma" and self.burstiness is None:
            raise SpecInvalid("/burstiness", "arrival gamma needs burstiness (the gamma shape k; 1 is Poisson)")
        if self.burstiness is not None and (self.arrival != "gamma" or not self.burstiness > 0):
            raise SpecInvalid("/burstiness", "a positive gamma shape, with arrival gamma")

    @property
    def lengths_from_file(self) -> bool:
        """The input lengths come from a file (JSONL prompts, ShareGPT, a trace), not from input_tokens."""
        return self.prompts is not None or self.workload in ("sharegpt", "trace")

    def _check_workload(self) -> None:
        if (self.workload is None) != (self.dataset is None):
            raise SpecInvalid("/dataset", "a file workload (--workload) and its file (--dataset) go together")
        if self.workload is not None and self.prompts is not None:
            raise SpecInvalid("/prompts", "give prompts (a JSONL file) or a file workload, not both")
        if (self.workload == "trace") != (self.load.mode == "trace"):
            raise SpecInvalid("/load/mode", "a trace is replayed at its own times: workload trace with load mode "
                              "trace (--trace-speedups), and that mode only with a trace")  # fmt: skip
        if self.max_turns is not None and (self.load.mode != "concurrency" or self.api != "chat"):
            raise SpecInvalid("/max_turns", "multi-turn sessions run closed loop (--concurrency) on the chat API: "
                              "each turn waits for the answer before it")  # fmt: skip
        if self.workload == "sonnet" and self.shared_prefix is not None:
            raise SpecInvalid("/shared_prefix", "sonnet prompts have their own fixed prefix (sonnet_prefix_tokens)")
        _checked("/workload", lambda _: self.file_workload(), None)
        _checked("/shared_prefix", lambda _: self.prefix(), None)

    def file_workload(self) -> Workload | None:
        if self.workload is None or self.dataset is None:
            return None
        return Workload(self.workload, Path(self.dataset), self.sonnet_prefix_tokens, self.max_turns,
                        self.trace_time_unit, self.trace_block_tokens)  # fmt: skip

    def prefix(self) -> SharedPrefix | None:
        return SharedPrefix(self.shared_prefix, self.prefix_groups) if self.shared_prefix is not None else None

    def shape(self) -> RequestShape:
        if self.prompts is not None:
            return RequestShape(None, self.output_tokens, Path(self.prompts), prefix=self.prefix())
        return RequestShape(self.input_tokens, self.output_tokens, workload=self.file_workload(), prefix=self.prefix())

    def prepare(self) -> tuple[Context, LoadPlan, Objectives]:
        """What the runner takes (context, load plan, objectives). A prompt or dataset file is read now: a missing
        or bad one is refused (ValueError, OSError) before any load is sent."""
        if self.prompts is not None:
            read_prompts(Path(self.prompts))
        workload = self.file_workload()
        if workload is not None:
            workload.check(int(self.input_tokens.mean if self.input_tokens else 0), int(self.output_tokens.mean))
        if workload is not None and self.load.mode == "trace":
            workload.check_replay(self.load.loads, self.load.duration_s, self.load.max_requests)
        plan = replace(self.load, only=self.level)
        target = Target(public_url(self.endpoint), self.model, self.api, self.timeout_s)
        sweep = new_sweep(plan, self.arrival, self.burstiness, self.sweep_id)
        ctx = context(target=target, deployment=self.deployment, shape=self.shape(), sweep=sweep,
                      submitter=self.submitter, seed=self.seed, telemetry=self.telemetry())  # fmt: skip
        return ctx, plan, self.objectives

    def fields(self) -> dict[str, Any]:
        """The JSON form (`from_fields` reads it back)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in ("load", "input_tokens", "output_tokens", "objectives"):
            out[name] = dataclasses.asdict(out[name]) if out[name] is not None else None
        out["load"]["loads"] = list(out["load"]["loads"])
        out["load"].pop("only")  # the job's `level` says it
        out["deployment"] = deploy.to_mapping(self.deployment)
        return out


def _checked(pointer: str, check: typing.Callable[[Any], Any], value: Any) -> None:
    try:
        check(value)
    except ValueError as exc:
        raise SpecInvalid(pointer, str(exc)) from None


def measure_level(spec: ServingSpec, folder: Path | None = None) -> dict[str, Any]:
    """Measure the one level an agent job names and return its document, through the command's own path. With a
    `folder`, the level's per-request export is written there first and the document names it (the agent uploads
    it once the run is stored); without one the document names no export, as no file would be kept.

    Raises runner.Refused (with every reason) when the run cannot start: nothing is sent, nothing written."""
    if spec.level is None:
        raise SpecInvalid("/level", "an agent job measures one level of its sweep: give its index")
    documents: list[dict[str, Any]] = []

    def emit(doc: dict[str, Any], requests: bytes | None) -> None:
        if folder is not None and requests is not None:
            write_export(folder, doc, requests)
        documents.append(doc)

    run_sync(*spec.prepare(), emit, export=folder is not None)
    assert len(documents) == 1, "one level, one document"
    return documents[0]


def unrunnable(spec: ServingSpec) -> list[str]:
    """What stops the spec's documents from passing the protocol, found without the endpoint (a plan checks this
    before it stores anything): "pointer: why" each, by the skeleton check the runner makes before load.

    Not checked here, because only the machine that runs it can: the endpoint (reached, lists the model,
    streams), a prompt file (on that machine; a synthetic shape stands in), and an engine version left to the
    endpoint's /version (vLLM's; a run whose endpoint does not tell it is refused there, before any load)."""
    stand_in = spec.prompts is not None or spec.workload is not None  # the file is on the machine that runs it
    shape = RequestShape(DEFAULT_INPUT, spec.output_tokens) if stand_in else spec.shape()
    plan = replace(spec.load, only=spec.level)
    target = Target(public_url(spec.endpoint), spec.model, spec.api, spec.timeout_s)
    ctx = context(target=target, deployment=spec.deployment, shape=shape,
                  sweep=new_sweep(plan, spec.arrival, spec.burstiness, spec.sweep_id), submitter=spec.submitter,
                  seed=spec.seed)  # fmt: skip
    told = None if spec.deployment.engine_version else "told by the endpoint"
    mode = "concurrency" if spec.load.mode == "concurrency" else "request-rate"
    first = spec.load.start if spec.load.mode == "automatic" else spec.load.loads[spec.level or 0]
    return skeleton_errors(ctx, EndpointInfo([spec.model], told, None), mode, first, spec.objectives.section())


# --- the JSON form -----------------------------------------------------------------------------------------


def from_fields(data: Any) -> ServingSpec:
    """A ServingSpec from its JSON form; SpecInvalid names the first wrong field by JSON pointer."""
    from_file = isinstance(data, dict) and (data.get("prompts") is not None or data.get("workload") in FILE_LENGTHS)
    if from_file and "input_tokens" not in data:
        data = {**data, "input_tokens": None}  # a prompt file, ShareGPT or a trace replaces the synthetic input law
    spec = _build(ServingSpec, data, "")
    assert isinstance(spec, ServingSpec)
    return spec


_SCALARS: dict[Any, tuple[type, ...]] = {float: (int, float), int: (int,), str: (str,), bool: (bool,)}


def _build(kind: type, data: Any, pointer: str) -> Any:
    """`kind` (a dataclass) from a JSON object: unknown and missing fields refused, each value type-checked."""
    if not isinstance(data, dict):
        raise SpecInvalid(pointer, "must be an object")
    known = {f.name: f for f in dataclasses.fields(kind) if f.name != "only"}
    hints = typing.get_type_hints(kind)
    for name in data:
        if name not in known:
            raise SpecInvalid(f"{pointer}/{name}", f"unknown field (known: {', '.join(known)})")
    for name, f in known.items():
        if name not in data and f.default is dataclasses.MISSING:
            raise SpecInvalid(f"{pointer}/{name}", "required")
    values = {name: _value(value, hints[name], f"{pointer}/{name}") for name, value in data.items()}
    try:
        return kind(**values)
    except SpecInvalid as exc:
        raise SpecInvalid(pointer + exc.pointer, exc.message) from None
    except (TypeError, ValueError) as exc:
        raise SpecInvalid(pointer, str(exc)) from None


def _value(value: Any, hint: Any, pointer: str) -> Any:
    """`value` checked against the field's type hint (X | None, tuple[float, ...], a dataclass, a scalar)."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        if value is None:
            return None
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is Deployment:
        return _checked_deployment(value, pointer)
    if dataclasses.is_dataclass(hint):
        return _build(typing.cast(type, hint), value, pointer)
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list):
            raise SpecInvalid(pointer, "must be a list")
        return tuple(_value(v, typing.get_args(hint)[0], f"{pointer}/{i}") for i, v in enumerate(value))
    wanted = _SCALARS[hint]
    if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
        raise SpecInvalid(pointer, f"must be {' or '.join(t.__name__ for t in wanted)}, not {value!r}")
    return value


def _checked_deployment(value: Any, pointer: str) -> Deployment:
    try:
        return deploy.from_mapping(value)
    except ValueError as exc:
        raise SpecInvalid(pointer, str(exc)) from None


# --- what a run of it must state -----------------------------------------------------------------------------


def expected_fields(spec: ServingSpec) -> dict[str, Any]:
    """What the document of an agent job's level must state, by JSON pointer (the registry holds the run to it:
    the endpoint, the load, the sweep, the request shape, the objectives and every stated deployment fact)."""
    open_loop = spec.load.mode != "concurrency"
    out: dict[str, Any] = {
        "/phase": "inference",
        "/scenario/kind": "server",
        "/scenario/arrival": ("trace" if spec.load.mode == "trace" else spec.arrival) if open_loop else "closed-loop",
        "/scenario/latency_slo_ms": spec.objectives.section(),
        "/scenario/sweep/mode": "request-rate" if spec.load.mode == "trace" else spec.load.mode,
        "/software/serving/endpoint": public_url(spec.endpoint),
        "/software/serving/model": spec.model,
        "/software/serving/api": spec.api,
    }
    if spec.workload in (None, "sonnet"):
        out["/workload/request_shape/output_tokens"] = spec.output_tokens.section()
    if spec.input_tokens is not None:
        out["/workload/request_shape/input_tokens"] = spec.input_tokens.section()
    if spec.workload is not None:
        out["/workload/request_shape/source"] = spec.workload
    if spec.shared_prefix:
        out["/workload/request_shape/shared_prefix"] = {"ratio": spec.shared_prefix, "groups": spec.prefix_groups}
    if spec.sweep_id is not None:
        out["/scenario/sweep/id"] = spec.sweep_id
    if spec.level is not None:
        load = spec.load.loads[spec.level]
        out["/scenario/sweep/index"] = spec.level
        out["/scenario/sweep/levels"] = len(spec.load.loads)
        if spec.load.mode != "trace":  # a replay's rate is the trace's, known when it is read
            out["/scenario/target_qps" if open_loop else "/scenario/concurrency"] = (
                round(load, 4) if open_loop else int(load)
            )
    if spec.telemetry() is not None:  # a job told to scrape the server states what it scraped, at that interval
        out["/metrics/server_telemetry/interval_s"] = spec.telemetry_interval_s
    out.update(deploy.stated_fields(spec.deployment))
    return out
