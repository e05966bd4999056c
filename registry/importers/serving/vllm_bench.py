"""vLLM's `vllm bench serve --save-result` result JSON as a load level: one file is one level (one request rate, or
one max concurrency), several files of one sweep share its id. Known: the files of vLLM 0.33.0's
vllm/benchmarks/serve.py. The file records no version of its own, so it is known by its keys: a key 0.33.0 does not
write (other than its --metadata text) or a missing one is refused. docs/serving.md says what each field becomes."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from protocol import rules
from protocol.errors import pointer

from .errors import ServingImportError
from .levels import Level, agrees, linear_quantile, non_negative, sha256_of
from .reading import json_value

TOOL = "vllm-bench-serve"
KNOWN = "0.33.0"
# software.serving.tool.version: what can be said of a file that names no version.
VERSION_WORDS = f"unrecorded; keys of {KNOWN}"
METHOD = "linear"  # numpy.percentile's default, which serve.py calls
NUMBER = (int, float)
# Every generation result of 0.33.0 has these, with these types (None: JSON null allowed).
REQUIRED: dict[str, tuple[type, ...]] = {
    "date": (str,),
    "endpoint_type": (str,),
    "backend": (str,),
    "label": (str, type(None)),
    "model_id": (str,),
    "tokenizer_id": (str, type(None)),
    "num_prompts": (int,),
    "request_rate": (int, float, str),
    "burstiness": NUMBER,
    "max_concurrency": (int, type(None)),
    "duration": NUMBER,
    "completed": (int,),
    "failed": (int,),
    "total_input_tokens": (int,),
    "total_output_tokens": (int,),
    "request_throughput": NUMBER,
    "request_goodput": (int, float, type(None)),
    "output_throughput": NUMBER,
    "total_token_throughput": NUMBER,
    "latencies": (list,),
    "queue_times": (list,),
    "max_output_tokens_per_s": NUMBER,
    "max_concurrent_requests": (int,),
    "rtfx": NUMBER,
}
DETAILED = ("input_lens", "output_lens", "ttfts", "itls", "start_times", "generated_texts", "errors")
# Other keys 0.33.0 writes on some runs (per-metric statistics, server timings, probes, speculative decoding).
OPTIONAL = re.compile(
    r"(mean|median|std|p\d+(\.\d+)?)_(ttft|tpot|itl|e2el|client_queue_time|e2el_including_client_queue)_ms"
    r"|server_queue_times|server_ttfts|rps_change_events|probe_\w+|spec_decode_\w+|diffusion_\w+"
)
BACKENDS = {"openai": "completions", "vllm": "completions", "openai-chat": "chat"}  # all stream (serve.py)
# vLLM's metric -> the protocol's distribution. ITL is taken only when the per-request arrays show token gaps.
DISTRIBUTIONS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "e2el": "latency_ms", "itl": "itl_ms"}
PERCENTILES = {"50": "p50", "90": "p90", "95": "p95", "97": "p97", "99": "p99", "99.9": "p999"}


def is_vllm(data: dict[str, Any]) -> bool:
    return {"endpoint_type", "backend", "num_prompts", "duration"} <= data.keys()


SWEEP = "vllm bench sweep serve"
WARMUP = "warmup.json"  # the sweep's unmeasured run before a combination's first (--warmup-num-prompts)
MAX_WARMUP_BYTES = 64 * 1024 * 1024
# Keys `vllm bench sweep serve` adds to each run's result besides the combination's overrides: the run's number
# (-1: its warm-up run) and the combination's name.
SWEEP_KEYS = ("run_number", "_benchmark_name")
MAX_OVERRIDES = 100  # software.settings holds 200 values, and each is named in provenance.origin.fields (200 too)
MAX_POINTER = 200  # the protocol's longest pointer in provenance.origin.fields
# `vllm bench serve` arguments that set the requests (their dataset and lengths), not the engine: a sweep override
# of one is kept as a note, never as an engine setting, and an import whose levels differ in one is refused (the
# deployment states one request shape for every file of an import).
WORKLOAD_ARGS = frozenset(
    {
        "dataset_name", "dataset_path", "input_len", "output_len", "random_input_len", "random_output_len",
        "random_range_ratio", "random_prefix_len", "random_batch_size", "sharegpt_output_len", "custom_output_len",
        "sonnet_input_len", "sonnet_output_len", "sonnet_prefix_len", "hf_output_len", "hf_subset", "hf_split",
        "prefix_repetition_prefix_len", "prefix_repetition_suffix_len", "prefix_repetition_num_prefixes",
        "prefix_repetition_output_len", "spec_bench_output_len", "speed_bench_output_len",
    }
)  # fmt: skip
WORKLOAD_NOTE = "workload override "
NEXT_RESULT = re.compile(rb"\}[ \t\r]*\n\s*\{")  # one result's end, then (blank lines between) the next's opening
COMBINATION = re.compile(r"(SERVE|BENCH)-")  # the driver's folder of one combination: SERVE--<name>-BENCH--<name>
# serve.py builds its result with "date" first and writes it with json.dump: every result file, whatever its name
# (--result-filename), opens with these bytes (`vllm bench sweep serve` writes its runs again indented: the same key
# after a newline and spaces). A folder's other JSON files are told apart by them unread.
OPENING = b'{"date": "'
OPENS = re.compile(rb'\{\s*"date": "')


def opens_as_result(path: Path) -> bool:
    """Whether the file at `path` opens as vLLM's result JSON does (its first bytes; the parse decides the rest)."""
    try:
        if not path.is_file():  # a FIFO or a device named *.json would block the read
            return False
        with path.open("rb") as file:
            return OPENS.match(file.read(64)) is not None
    except OSError:
        return False


def appended(raw: bytes, where: str) -> list[tuple[int, dict[str, Any]]] | None:
    """The results of a file `vllm bench serve --append-result` wrote, each with its line (from 1, blank lines
    counted, as an editor shows them): one result JSON a line, each run appending its line (a sweep in one file);
    None when `raw` is not such a file (one result, or another tool's file)."""
    if not raw.startswith(OPENING) or NEXT_RESULT.search(raw) is None:
        return None
    results = []
    for n, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json_value(line, where, line=n)
        except json.JSONDecodeError as exc:
            raise ServingImportError(f"line {n} of vLLM's appended results is not JSON ({exc})", where=where) from None
        if not isinstance(value, dict) or not is_vllm(value):
            raise ServingImportError(f"line {n} of vLLM's appended results is not a result of vLLM's", where=where)
        results.append((n, value))
    return results


def read(path: Path, data: dict[str, Any], raw: bytes, line: int | None = None) -> Level:
    """One level from a vLLM result file (already parsed from `raw`); `line`: its line (from 1) in a file of
    appended results, every one of which is a level of its own."""
    where, name = (str(path), path.name) if line is None else (f"{path} line {line}", f"{path.name} line {line}")
    run = _sweep_run(data, where)
    metadata, overrides = _check_shape(data, where, swept=run is not None)
    api = BACKENDS.get(data["backend"]) or _refuse(
        f"backend {data['backend']!r} is not one this importer reads ({', '.join(sorted(BACKENDS))})", where
    )
    fields: dict[str, str] = {}
    notes: dict[str, str] = {f"metadata.{k}": v for k, v in metadata.items()}
    mode, concurrency, rate, arrival, burstiness = _load(data, where, name, fields, notes)
    _check_window(data, where)
    detail = _detail(data, where) if "errors" in data else None
    metrics = _metrics(data, where, name, detail, fields, notes)
    files = {path.name: sha256_of(raw)}
    group = _group(data, mode, metadata)
    warmup = None
    if run is not None:
        # each run of a combination is a repetition, a sweep of its own; the combinations of one experiment (the
        # driver's folder above them) are read together for the overrides that set engines apart (regroup_swept)
        # (the folder's path, not its name: two experiments may share a name under two parents; the sweep id is
        # the files' content, so the path never reaches a document)
        experiment = str(path.parent.parent if COMBINATION.match(path.parent.name) else path.parent)
        group = json.dumps([group, run, experiment])
        notes["repetition"] = (
            f"run {run} of {SWEEP}'s combination {data.get('_benchmark_name')!r} ({path.parent.name}): the runs of "
            "one combination repeat it, and each run's levels are a sweep of their own"
        )
        for key in [k for k in overrides if k in WORKLOAD_ARGS]:  # what was asked, not how it was served
            notes[f"{WORKLOAD_NOTE}{key}"] = json.dumps(overrides.pop(key))
        for key in overrides:
            fields[pointer(("software", "settings", key))] = f"{name}: {key} ({SWEEP}'s override of the combination)"
        warmup = _sweep_warmup(path, run, files, fields)
    return Level(
        tool=TOOL,
        tool_version=VERSION_WORDS,
        path=where,
        files=files,
        mode=mode,
        concurrency=concurrency,
        target_qps=rate,
        arrival=arrival,
        burstiness=burstiness,
        model=data["model_id"],
        api=api,
        streaming=True,
        endpoint=None,
        metrics=metrics,
        window_s=float(data["duration"]),
        started_at=None,
        finished_at=None,
        dataset=None,
        group=group,
        warmup=warmup,
        settings=overrides,
        fields={**fields, "/conditions/window/seconds": f"{name}: duration (s)"},
        notes={**notes, **_general_notes(data)},
        # the lines of one file share its digest: the registry tells their measurements apart by the line
        scenario=None
        if line is None
        else f"line {line}: " + (f"{rate:g} req/s" if rate else f"concurrency {concurrency}"),
        lines_of_one_file=line is not None,
    )


def _refuse(message: str, where: str) -> Any:
    raise ServingImportError(message, where=where)


def _check_shape(data: dict[str, Any], where: str, *, swept: bool = False) -> tuple[dict[str, str], dict[str, Any]]:
    """Refuse a file that is not the shape 0.33.0 writes for a generation benchmark; its --metadata (text) back, and
    where `vllm bench sweep serve` wrote it (`swept`), the combination's overrides: every other key, whatever its
    type (the file does not tell the server's --serve-params from the benchmark's --bench-params, nor either from
    --metadata text), as software.settings values."""
    for key, kinds in REQUIRED.items():
        if key not in data:
            raise ServingImportError(
                f"has no {key}: not a generation result of vllm bench serve {KNOWN} (the file records no version; "
                "it is known by its keys); nothing was imported",
                where=where,
            )
        value = data[key]
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise ServingImportError(f"{key} is {value!r}, not what vllm bench serve {KNOWN} writes", where=where)
    if "ramp_up_strategy" in data:
        raise ServingImportError(
            f"ramp_up_strategy {data['ramp_up_strategy']!r}: the request rate changed during the run, so the file "
            "is no single load level",
            where=where,
        )
    metadata: dict[str, str] = {}
    overrides: dict[str, Any] = {}
    for key, value in data.items():
        if key in REQUIRED or key in DETAILED or OPTIONAL.fullmatch(key):
            continue
        if swept:
            if key not in SWEEP_KEYS:
                if not key or len(pointer(("software", "settings", key))) > MAX_POINTER:
                    raise ServingImportError(
                        f"override {key[:60]!r} of {SWEEP}: not a setting's name (empty, or longer than a field's "
                        f"pointer holds: {MAX_POINTER} characters)",
                        where=where,
                    )
                scalar = value is None or isinstance(value, str | int | float | bool)
                kept = (
                    (value[:2000] if isinstance(value, str) else value)
                    if scalar
                    else json.dumps(value, sort_keys=True)[:2000]
                )
                # the flag's name as argparse keeps it (--max-num-seqs is max_num_seqs), as the deployment's
                # launch command gives its capacity settings (runners/serving/deployment.launch_settings)
                setting = key.replace("-", "_")
                if setting in overrides and overrides[setting] != kept:
                    raise ServingImportError(
                        f"override {setting!r} of {SWEEP} is given twice with different values ({key!r})", where=where
                    )
                overrides[setting] = kept
            continue
        if not isinstance(value, str):  # --metadata KEY=VALUE writes text; anything else is another version's field
            raise ServingImportError(
                f"key {key!r} is not one vllm bench serve {KNOWN} writes: a file of another version may mean "
                "something else by its fields; nothing was imported",
                where=where,
            )
        metadata[key] = value[:2000]
    if len(overrides) > MAX_OVERRIDES:
        raise ServingImportError(
            f"{len(overrides)} overrides of {SWEEP} (keys not in vLLM's result): a level's software.settings holds at "
            f"most {MAX_OVERRIDES}",
            where=where,
        )
    return metadata, overrides


def _sweep_run(data: dict[str, Any], where: str) -> int | None:
    """The run's number where `vllm bench sweep serve` wrote the file (None where plain `vllm bench serve` did); its
    warm-up run (-1) is refused: its requests warmed the server up and were not measured."""
    if "run_number" not in data:
        return None
    run = data["run_number"]
    if not isinstance(run, int) or isinstance(run, bool) or run < -1:
        raise ServingImportError(f"run_number {run!r} is not a run of {SWEEP} (0, 1, …; -1 its warm-up)", where=where)
    if run == -1:
        raise ServingImportError(
            f"run_number -1: {SWEEP}'s warm-up run ({WARMUP}), whose requests were not measured; it is stated as the "
            "warm-up of the combination's first run (run=0.json beside it), never a level of its own",
            where=where,
        )
    return run


def _sweep_warmup(path: Path, run: int, files: dict[str, str], fields: dict[str, str]) -> dict[str, Any] | None:
    """conditions.warmup of a combination's first run: the unmeasured run `vllm bench sweep serve` made just before
    it (--warmup-num-prompts, kept as warmup.json beside it), whose file joins the level's files. None otherwise
    (a later run follows a measured one, not a declared warm-up)."""
    beside = path.with_name(WARMUP)
    if run != 0 or not beside.is_file() or beside.stat().st_size > MAX_WARMUP_BYTES:
        return None
    raw = beside.read_bytes()
    try:
        data = json_value(raw, str(beside))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or data.get("run_number") != -1 or not is_vllm(data):
        return None
    completed, seconds = data.get("completed"), non_negative(data.get("duration"))
    if not isinstance(completed, int) or isinstance(completed, bool) or completed < 0 or seconds is None:
        raise ServingImportError(
            f"completed {completed!r} and duration {data.get('duration')!r}: not the requests and seconds of a "
            "warm-up run",
            where=str(beside),
        )
    files[WARMUP] = sha256_of(raw)
    fields["/conditions/warmup"] = f"{WARMUP}: completed, duration ({SWEEP}'s unmeasured run before this one)"
    return {"iterations": completed, "seconds": seconds}


def regroup_swept(levels: list[Level]) -> None:
    """Split the runs of `vllm bench sweep serve` into sweeps by the overrides that set its engines apart.

    One run of an experiment holds a level for every combination: its overrides either set one engine apart from
    another (--serve-params {"max_num_seqs": 64} and 128, each measured at every load) or were tuned with the load
    (--link-vars max_num_seqs=max_concurrency: one value at each load). An override with two values at one load
    sets engines apart: the levels are split by it. One with a value a load is the sweep's tuning, disclosed per
    level (software.settings) and read by decisions as one engine tuned per load (protocol.serving.tuned_settings).
    """
    runs: dict[str, list[Level]] = {}
    asked: dict[str, dict[str, Level]] = {}
    for level in levels:
        if level.tool == TOOL and "repetition" in level.notes:
            runs.setdefault(level.group, []).append(level)
            for note, value in level.notes.items():
                if note.startswith(WORKLOAD_NOTE):
                    asked.setdefault(note.removeprefix(WORKLOAD_NOTE), {}).setdefault(value, level)
    for key, seen in asked.items():
        if len(seen) > 1:
            first, second = list(seen.items())[:2]
            raise ServingImportError(
                f"{SWEEP}'s levels differ in {key} ({first[0]} in {first[1].path}, {second[0]}): they asked for "
                "different requests, and the deployment states one request shape for every file of an import; "
                "import each shape with a deployment of its own",
                where=second[1].path,
            )
    for members in runs.values():
        keys = sorted({key for level in members for key in level.settings})
        values: dict[str, dict[float, set[str]]] = {}
        for level in members:
            for key in keys:  # a combination without the override (the driver adds only what it sets): a value too
                said = json.dumps(level.settings[key]) if key in level.settings else "not set"
                values.setdefault(key, {}).setdefault(level.load, set()).add(said)
        apart = [key for key in keys if any(len(seen) > 1 for seen in values[key].values())]
        for level in members:
            level.group = json.dumps(
                [level.group, {key: [key in level.settings, level.settings.get(key)] for key in apart}]
            )


def _load(
    data: dict[str, Any], where: str, name: str, fields: dict[str, str], notes: dict[str, str]
) -> tuple[str, int | None, float | None, str, float | None]:
    """(mode, concurrency, target_qps, arrival, burstiness) from request_rate, burstiness and max_concurrency; the
    gamma shape belongs to the arrivals of a rate only (closed-loop users send when their last answer came)."""
    rate, cap, shape = data["request_rate"], data["max_concurrency"], float(data["burstiness"])
    if not math.isfinite(shape) or shape <= 0:
        raise ServingImportError(f"burstiness {shape!r} is no gamma shape (a positive number)", where=where)
    if rate == "inf" and isinstance(cap, int) and cap >= 1:
        fields["/scenario/concurrency"] = f"{name}: max_concurrency (request_rate inf)"
        return "concurrency", cap, None, "closed-loop", None
    if isinstance(rate, NUMBER) and math.isfinite(rate) and rate > 0:
        fields["/scenario/target_qps"] = f"{name}: request_rate"
        fields["/scenario/burstiness"] = f"{name}: burstiness"
        if cap is not None:
            notes["max_concurrency"] = f"{cap}: at most this many requests in flight; the offered load is the rate"
        return "request-rate", None, float(rate), "poisson" if shape == 1 else "gamma", shape
    raise ServingImportError(
        f"request_rate {rate!r} with max_concurrency {cap!r}: every request was sent at once, so the offered load "
        "is neither a rate nor a concurrency",
        where=where,
    )


def _check_window(data: dict[str, Any], where: str) -> None:
    """The protocol's least measurement window, refused here by field rather than after the parse."""
    if data["duration"] < rules.MIN_WINDOW_SECONDS:
        raise ServingImportError(
            f"duration {data['duration']:.3g} s: the protocol needs a measurement window of at least "
            f"{rules.MIN_WINDOW_SECONDS:g} s (run more prompts at this load)",
            where=where,
        )
    if data["completed"] < rules.MIN_WINDOW_ITERATIONS:
        raise ServingImportError(
            f"completed {data['completed']}: the protocol needs at least {rules.MIN_WINDOW_ITERATIONS} completed "
            "requests in a level",
            where=where,
        )


def _group(data: dict[str, Any], mode: str, metadata: dict[str, str]) -> str:
    """The run's settings without the load: levels with the same settings are one sweep (the file does not record
    the dataset or the lengths; the deployment states them for every file of one import)."""
    keys = ("endpoint_type", "backend", "label", "model_id", "tokenizer_id", "burstiness")
    settings = {key: data[key] for key in keys}
    settings["mode"] = mode
    if mode == "request-rate":
        settings["max_concurrency"] = data["max_concurrency"]
    settings["metadata"] = metadata
    return json.dumps(settings, sort_keys=True)


def _general_notes(data: dict[str, Any]) -> dict[str, str]:
    return {
        "tool_version": (
            f"the result file does not record vLLM's version; its keys are those vllm bench serve {KNOWN} writes"
        ),
        "date": (
            f"{data['date']}: vLLM's date, the client's local time without a time zone, taken when the run ended; "
            "not used as started_at or finished_at"
        ),
        "ttft_ms": (
            "vLLM measures TTFT, TPOT and end-to-end latency from the moment it sends each request, not from its "
            "scheduled arrival: time a request waited for the client (queue_times, max_concurrency) or behind a late "
            "client is not in them; no correction is applied"
        ),
        "requests": "vLLM counts every failed request (HTTP error, exception, no token) in failed: all are in errors",
        "total_token_throughput": f"{data['total_token_throughput']} tokens/s (input and output)",
        "max_output_tokens_per_s": (
            f"{data['max_output_tokens_per_s']} in vLLM's busiest second; max_concurrent_requests "
            f"{data['max_concurrent_requests']}"
        ),
    }


def _metrics(
    data: dict[str, Any],
    where: str,
    name: str,
    detail: dict[str, Any] | None,
    fields: dict[str, str],
    notes: dict[str, str],
) -> dict[str, Any]:
    completed, failed = data["completed"], data["failed"]
    if data["num_prompts"] != completed + failed:
        notes["num_prompts"] = (
            f"num_prompts {data['num_prompts']} but completed {completed} + failed {failed}: vLLM sent "
            f"{completed + failed} requests (the dataset gave that many samples)"
        )
    metrics = _totals(data)
    fields.update(_count_fields(name))
    if data["request_goodput"] is not None:
        metrics["goodput"] = {"value": float(data["request_goodput"]), "unit": "requests/s"}
        fields["/metrics/goodput/value"] = f"{name}: request_goodput (requests/s)"
        notes["goodput"] = (
            "vLLM's request_goodput: completed requests per second that met every --goodput objective; the file "
            "does not record the objectives"
        )
    counts = _counts(completed, detail)
    for metric, target in DISTRIBUTIONS.items():
        shown = _distribution(data, metric, counts.get(metric), name, f"/metrics/{target}", fields, notes, where)
        if shown is not None:
            metrics[target] = shown
    if detail is not None:
        _check_against_summary(data, detail, where)
        metrics["tokens_per_second_per_user"] = _per_user(detail, name, fields)
    _leftover_notes(data, metrics, notes)
    return metrics


def _totals(data: dict[str, Any]) -> dict[str, Any]:
    """The level's rates, request outcomes and token totals, as vLLM's summary gives them."""
    completed, failed = data["completed"], data["failed"]
    tokens_per_s = float(data["output_throughput"])
    return {
        "throughput": {"value": tokens_per_s, "unit": "tokens/s"},
        "tokens_per_second": {"value": tokens_per_s, "unit": "tokens/s"},
        "request_rate": {"value": float(data["request_throughput"]), "unit": "requests/s"},
        "requests": {
            "sent": completed + failed,
            "completed": completed,
            "errors": failed,
            "timeouts": 0,
            "incomplete": 0,
        },
        "token_counts": {
            "input_total": data["total_input_tokens"],
            "output_total": data["total_output_tokens"],
            "counted_by": "tool-report",
            "notes": (
                "vLLM's total_input_tokens and total_output_tokens: from the server's usage report where it sends "
                "one, else the prompt's length and the client tokenizer's count of the text; the file does not say "
                "which"
            ),
        },
    }


def _count_fields(name: str) -> dict[str, str]:
    return {
        "/metrics/throughput/value": f"{name}: output_throughput (tokens/s)",
        "/metrics/tokens_per_second/value": f"{name}: output_throughput (tokens/s)",
        "/metrics/request_rate/value": f"{name}: request_throughput (requests/s)",
        "/metrics/requests/completed": f"{name}: completed",
        "/metrics/requests/errors": f"{name}: failed",
        "/metrics/requests/sent": f"{name}: completed + failed",
        "/metrics/token_counts/input_total": f"{name}: total_input_tokens",
        "/metrics/token_counts/output_total": f"{name}: total_output_tokens",
    }


def _counts(completed: int, detail: dict[str, Any] | None) -> dict[str, tuple[int, str] | None]:
    """How many values each of vLLM's statistics is over, and where that number comes from. TPOT leaves out
    requests of one output token and ITL counts gaps: only the per-request arrays say how many; without them TPOT
    is taken as over every completed request (noted) and ITL is not taken."""
    done = (completed, "completed")
    if detail is None:
        return {"ttft": done, "e2el": done, "tpot": (completed, "completed (see the note tpot_ms)"), "itl": None}
    arrays = "per-request arrays, completed requests"
    return {
        "ttft": done,
        "e2el": done,
        "tpot": (len(detail["tpots"]), f"{arrays} of more than one output token"),
        "itl": (len(detail["gaps"]), f"{arrays}, itls gaps") if detail["token_gaps"] else None,
    }


def _distribution(
    data: dict[str, Any],
    metric: str,
    counted: tuple[int, str] | None,
    name: str,
    at: str,
    fields: dict[str, str],
    notes: dict[str, str],
    where: str,
) -> dict[str, Any] | None:
    """The protocol distribution of one of vLLM's metrics (ms), from mean/median/std/p<N>_<metric>_ms; percentiles
    the count cannot support (protocol rules) are left out, and those with no protocol field are noted."""
    if f"mean_{metric}_ms" not in data:
        return None  # not among the run's --percentile-metrics
    if counted is None or counted[0] < 1:  # no gap or no request of two tokens: no distribution to state
        if metric == "itl":
            notes["itl_ms"] = (
                "not imported: vLLM's ITL times the gaps between stream chunks (a chunk may hold several tokens, "
                "and a closing chunk without text counts as a gap); only per-request arrays with one gap per output "
                f"token after the first would make them token gaps. vLLM's figures: mean {data['mean_itl_ms']} ms, "
                f"median {data.get('median_itl_ms')} ms"
            )
        return None
    count, source = counted
    out: dict[str, Any] = {"count": count, "method": METHOD, "unit": "ms"}
    fields[f"{at}/count"] = f"{name}: {source}"
    named = {"mean": "mean", "stdev": "std", "p50": "median"}
    for field, stat in named.items():
        out[field] = _ms(data, f"{stat}_{metric}_ms", where)
        fields[f"{at}/{field}"] = f"{name}: {stat}_{metric}_ms" + (" (numpy std, ddof 0)" if stat == "std" else "")
    for key in data:
        match = re.fullmatch(rf"p(\d+(?:\.\d+)?)_{metric}_ms", key)
        if match is None or match.group(1) == "50":
            continue
        percentile = PERCENTILES.get(match.group(1))
        if percentile is None or not rules.percentile_allowed(percentile, count):
            why = "no protocol field" if percentile is None else f"{count} values, under its minimum for {percentile}"
            notes[key] = f"{data[key]} ms: not imported ({why})"
            continue
        out[percentile] = _ms(data, key, where)
        fields[f"{at}/{percentile}"] = f"{name}: {key}"
    if "p50_" + metric + "_ms" in data and data[f"p50_{metric}_ms"] != data[f"median_{metric}_ms"]:
        raise ServingImportError(f"p50_{metric}_ms and median_{metric}_ms differ: both are numpy's median", where=where)
    return out


def _ms(data: dict[str, Any], key: str, where: str) -> float:
    value = data.get(key)
    if not isinstance(value, NUMBER) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ServingImportError(f"{key} is {value!r}, not a time in ms", where=where)
    return float(value)


def _detail(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The per-request arrays of --save-detailed, checked for shape: the completed requests' TTFT, end-to-end
    latency, TPOT and inter-chunk gaps (s) and token counts."""
    sent = data["completed"] + data["failed"]
    for key in (*DETAILED, "latencies"):
        if not isinstance(data.get(key), list) or len(data[key]) != sent:
            raise ServingImportError(
                f"{key} holds {len(data.get(key) or [])} requests but completed + failed is {sent}", where=where
            )
    done = [i for i, error in enumerate(data["errors"]) if error == ""]
    if len(done) != data["completed"]:
        raise ServingImportError(
            f"errors has {len(done)} empty entries (requests without an error) but completed is {data['completed']}",
            where=where,
        )
    try:
        ttfts = [float(data["ttfts"][i]) for i in done]
        latencies = [float(data["latencies"][i]) for i in done]
        outputs = [int(data["output_lens"][i]) for i in done]
        gaps_each = [[float(g) for g in data["itls"][i]] for i in done]
        inputs = [int(data["input_lens"][i]) for i in done]
    except (TypeError, ValueError) as exc:
        raise ServingImportError(
            f"a per-request array holds a value that is not a number ({exc})", where=where
        ) from None
    tpots = [(e - t) / (n - 1) for t, e, n in zip(ttfts, latencies, outputs, strict=True) if n > 1]
    return {
        "ttfts": ttfts,
        "latencies": latencies,
        "outputs": outputs,
        "inputs": inputs,
        "tpots": tpots,
        "gaps": [g for gaps in gaps_each for g in gaps],
        # one gap per output token after the first: the gaps are token gaps (the protocol's ITL)
        "token_gaps": all(len(g) == n - 1 for g, n in zip(gaps_each, outputs, strict=True)),
    }


def _check_against_summary(data: dict[str, Any], detail: dict[str, Any], where: str) -> None:
    """vLLM's per-request arrays must give its own summary back (its means and medians, its token totals)."""
    agrees(where, "the sum of output_lens", float(sum(detail["outputs"])), float(data["total_output_tokens"]))
    agrees(where, "the sum of input_lens of completed requests", float(sum(detail["inputs"])),
            float(data["total_input_tokens"]))  # fmt: skip
    for metric, values in (("ttft", detail["ttfts"]), ("e2el", detail["latencies"]), ("tpot", detail["tpots"]),
                           ("itl", detail["gaps"])):  # fmt: skip
        if f"mean_{metric}_ms" not in data or not values:
            continue
        agrees(where, f"the mean of the per-request {metric}", 1000 * sum(values) / len(values),
                float(data[f"mean_{metric}_ms"]))  # fmt: skip
        agrees(where, f"the median of the per-request {metric}", 1000 * linear_quantile(values, 0.5),
                float(data[f"median_{metric}_ms"]))  # fmt: skip


def _per_user(detail: dict[str, Any], name: str, fields: dict[str, str]) -> dict[str, Any]:
    """The protocol's tokens per second per user, output tokens ÷ (e2e − TTFT) of each completed request, from
    vLLM's per-request arrays (vLLM's summary has no such figure)."""
    rates = [
        n / (e - t) for t, e, n in zip(detail["ttfts"], detail["latencies"], detail["outputs"], strict=True) if e > t
    ]
    at = "/metrics/tokens_per_second_per_user"
    source = f"{name}: output_lens[i] ÷ (latencies[i] − ttfts[i]) of the completed requests (errors[i] empty)"
    out: dict[str, Any] = {"count": len(rates), "method": METHOD, "unit": "tokens/s"}
    out["mean"] = round(sum(rates) / len(rates), 6)
    out["min"], out["max"] = round(min(rates), 6), round(max(rates), 6)
    for field, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)):
        if rules.percentile_allowed(field, len(rates)):
            out[field] = round(linear_quantile(rates, q), 6)
    for field in out:
        if field not in ("method", "unit"):
            fields[f"{at}/{field}"] = source + ("" if field == "count" else f", {field}")
    return out


def _leftover_notes(data: dict[str, Any], metrics: dict[str, Any], notes: dict[str, str]) -> None:
    if "tpot_ms" in metrics and "errors" not in data:
        notes["tpot_ms"] = (
            "count is completed: vLLM leaves out requests of one output token, and without the per-request arrays "
            "the file does not say how many there were"
        )
    if "tokens_per_second_per_user" not in metrics:
        notes["tokens_per_second_per_user"] = "not imported: it needs the per-request arrays of --save-detailed"
    if "errors" in data:
        errors = Counter(str(e)[:200] for e in data["errors"] if e != "")
        if errors:
            notes["errors"] = json.dumps(dict(errors.most_common(20)), sort_keys=True)[:2000]
