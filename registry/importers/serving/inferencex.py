"""The InferenceX harness's records beside aiperf's files: its flat per-level `bmk_agentic_<cfg>/<cfg>.json` and its
folder-wide `results_bmk/agg_bmk.json`. They state the deployment facts aiperf does not (engine, image, parallelism,
offloading, speculative decoding, the weight format family) and repeat some of aiperf's figures in other units; where
they repeat one, they must agree with aiperf beyond rounding or the level is refused with both values."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypeGuard

from runners.serving import deployment as shared

from .errors import ServingImportError
from .levels import Level, sha256_of
from .reading import json_value

AGG = "agg_bmk.json"
MAX_RECORD_BYTES = 16 * 1024 * 1024  # a level record is a few KB, the aggregate of a sweep ~60 KB
# The harness's figures that copy aiperf's summary: (harness key, aiperf key, statistic, harness unit per aiperf unit).
# The harness's itl/tpot, token totals and qps are left out: on vLLM levels they come from another source than
# aiperf's summary (they differ by up to 0.2% and 2%), so they are not the same figure (docs/serving.md).
SAME_FIGURES = [
    *[
        (f"{s}_ttft", "time_to_first_token", a, 1e-3)
        for s, a in (("mean", "avg"), ("p75", "p75"), ("p90", "p90"), ("p95", "p95"), ("std", "std"))
    ],
    *[
        (f"{s}_e2el", "request_latency", a, 1e-3)
        for s, a in (("mean", "avg"), ("p75", "p75"), ("p90", "p90"), ("p95", "p95"), ("std", "std"))
    ],
    *[
        (f"{s}_intvty", "output_token_throughput_per_user", a, 1.0)
        for s, a in (("mean", "avg"), ("p75", "p75"), ("p90", "p90"), ("p95", "p95"), ("std", "std"))
    ],
    ("mean_input_tokens", "input_sequence_length", "avg", 1.0),
    ("mean_output_tokens_actual", "output_sequence_length", "avg", 1.0),
    ("num_requests_successful", "request_count", "avg", 1.0),
    ("output_tput_tps", "output_token_throughput", "avg", 1.0),
    ("input_tput_tps", "input_token_throughput", "avg", 1.0),
    ("total_tput_tps", "total_token_throughput", "avg", 1.0),
    ("duration_seconds", "benchmark_duration", "avg", 1.0),
]
ROUNDING = 1e-9  # relative: the harness copies aiperf's doubles, converting ms to s
IDENTITY = (
    "hw",
    "conc",
    "image",
    "model",
    "framework",
    "precision",
    "tp",
    "ep",
    "dp_attention",
    "offloading",
    "spec_decoding",
    "disagg",
)


def records_for(summary: Path) -> list[Path]:
    """The harness records of the aiperf level whose summary is `summary` (none outside an InferenceX layout)."""
    level_dir = summary.parent.parent
    if not level_dir.name.startswith("agentic_"):
        return []
    cfg = level_dir.name.removeprefix("agentic_")
    found = [level_dir.parent / f"bmk_agentic_{cfg}" / f"{cfg}.json", level_dir.parent / "results_bmk" / AGG]
    return [p for p in found if p.is_file()]


# The engine launch command the harness keeps beside aiperf's artifacts, and its flags that change a deployment's
# capacity (the decision's candidate is the configuration with them: DECISIONS.md, "Which runs answer it"). Each
# becomes software.settings[<name>], traced to the file and flag. Parallelism and speculative decoding are the
# harness record's (software.serving); prefill/decode disaggregation is its `disagg`.
LAUNCH_COMMANDS = ("vllm_command.txt", "sglang_command.txt")
MAX_COMMAND_BYTES = 64 * 1024


def launch_settings(level: Level, summary: Path) -> None:
    """The capacity settings of the engine's launch command beside the level (InferenceX layout), if there is one:
    `--max-num-seqs 16` becomes settings max_num_seqs = 16. A flag given twice with two values is refused."""
    level_dir = summary.parent.parent
    for name in LAUNCH_COMMANDS:
        path = level_dir / name
        if not level_dir.name.startswith("agentic_") or not path.is_file():
            continue
        raw = path.read_bytes()[: MAX_COMMAND_BYTES + 1]
        if len(raw) > MAX_COMMAND_BYTES:
            raise ServingImportError(f"larger than {MAX_COMMAND_BYTES} bytes for an engine command", where=str(path))
        try:
            found = shared.launch_settings(raw.decode("utf-8", "replace"))
        except ValueError as exc:
            raise ServingImportError(str(exc), where=str(path)) from None
        for key, (value, flag) in found.items():
            level.settings[key] = value
            level.fields[f"/software/settings/{key}"] = f"inferencex:{name}: {flag}"
        level.files[f"inferencex:{name}"] = sha256_of(raw)


def cross_check(level: Level, summary: dict[str, Any], paths: list[Path]) -> None:
    """Check the harness's copies of aiperf's figures and take the deployment facts it states."""
    record: dict[str, Any] | None = None
    for path in paths:
        if path.stat().st_size > MAX_RECORD_BYTES:
            raise ServingImportError(f"larger than {MAX_RECORD_BYTES} bytes for an InferenceX record", where=str(path))
        raw = path.read_bytes()
        data = _json(path, raw)
        if path.name == AGG:
            mine = _in_aggregate(data, record, path) if record else None
            if mine is None:
                continue  # the aggregate covers other runs of the folder; it has no record of this one
            level.files[AGG] = sha256_of(raw)
            _agree_records(record or {}, mine, path)
            continue
        if not isinstance(data, dict):
            raise ServingImportError("an InferenceX level record must be one JSON object", where=str(path))
        record = data
        level.files[f"inferencex:{path.name}"] = sha256_of(raw)
        _agree_figures(record, summary, path, f"inferencex:{path.name}", level)
        _take_facts(record, level, path)


def _json(path: Path, raw: bytes) -> Any:
    try:
        return json_value(raw, str(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ServingImportError(f"not JSON ({exc})", where=str(path)) from None


def _in_aggregate(data: Any, record: dict[str, Any], path: Path) -> dict[str, Any] | None:
    if not isinstance(data, list):
        raise ServingImportError("agg_bmk.json must be a JSON list of level records", where=str(path))
    matches = [r for r in data if isinstance(r, dict) and all(r.get(k) == record.get(k) for k in IDENTITY)]
    if len(matches) > 1:
        raise ServingImportError(f"{len(matches)} records of agg_bmk.json match one level", where=str(path))
    return matches[0] if matches else None


def _agree_records(record: dict[str, Any], aggregate: dict[str, Any], path: Path) -> None:
    for key, value in record.items():
        if key in aggregate and aggregate[key] != value:
            raise ServingImportError(
                f"{key} is {aggregate[key]!r} here but {value!r} in the level's own record", where=str(path)
            )


def _agree_figures(record: dict[str, Any], summary: dict[str, Any], path: Path, name: str, level: Level) -> None:
    for key, aiperf_key, stat, scale in SAME_FIGURES:
        theirs = record.get(key)
        ours = summary.get(aiperf_key, {}).get(stat) if isinstance(summary.get(aiperf_key), dict) else None
        if not _is_number(theirs) or not _is_number(ours):
            continue
        expected = ours * scale
        if abs(theirs - expected) > ROUNDING * max(abs(expected), 1.0):
            unit = " s" if scale == 1e-3 else ""
            raise ServingImportError(
                f"the harness's {key} is {theirs:.9g}{unit} but aiperf's {aiperf_key}.{stat} is {ours:.9g}"
                f"{' ms' if unit else ''} ({expected:.9g}{unit}): they disagree beyond rounding",
                where=str(path),
            )
        level.notes.setdefault("cross_checked", f"{name} agrees with aiperf on")
        level.notes["cross_checked"] += f" {key}"


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# The deployment facts the harness record states: fact -> (record key, the document's pointer, or None where the
# fact is checked against the deployment and not copied: the weight format family).
FACTS = {
    "engine": ("framework", "/software/serving/engine"),
    "image": ("image", "/software/serving/image"),
    "tensor": ("tp", "/software/serving/parallelism/tensor"),
    "expert": ("ep", "/software/serving/parallelism/expert"),
    "data_parallel_attention": ("dp_attention", "/software/serving/parallelism/data_parallel_attention"),
    "speculative": ("spec_decoding", "/software/serving/speculative"),
    "kv_offload": ("offloading", "/software/serving/kv_offload"),
    "weights": ("precision", None),
}


def _take_facts(record: dict[str, Any], level: Level, path: Path) -> None:
    """The deployment facts the record states, each traced to its key; the record must describe aiperf's level."""
    name = f"inferencex:{path.name}"
    _same_level(record, level, path)
    for fact, (key, pointer) in FACTS.items():
        value = record.get(key)
        if key == "dp_attention":  # the harness writes it as text ("true"/"false") or as a boolean
            value = {"true": True, "false": False}.get(str(value).lower())
        if value is None:
            continue
        level.stated[fact] = value
        if pointer:
            level.fields[pointer] = f"{name}: {key}"
    if isinstance(record.get("disagg"), bool):  # prefill and decode on separate workers: another configuration
        level.settings["prefill_decode_disaggregated"] = record["disagg"]
        level.fields["/software/settings/prefill_decode_disaggregated"] = f"{name}: disagg"
    total, per_gpu = record.get("total_tput_tps"), record.get("tput_per_gpu")
    if _is_number(total) and _is_number(per_gpu) and per_gpu > 0:
        level.stated["accelerator_count"] = total / per_gpu
        level.stated["accelerator_count_from"] = f"{name}: total_tput_tps ÷ tput_per_gpu"


def _same_level(record: dict[str, Any], level: Level, path: Path) -> None:
    if record.get("model") not in (None, level.model):
        raise ServingImportError(
            f"the harness's model {record.get('model')!r} is not aiperf's {level.model!r}", where=str(path)
        )
    if record.get("conc") not in (None, level.concurrency):
        raise ServingImportError(
            f"the harness's conc {record.get('conc')!r} is not aiperf's concurrency {level.concurrency!r}",
            where=str(path),
        )
