"""Result files of serving benchmark tools (aiperf, guidellm, vLLM's `bench serve`) as protocol 1.2
load levels, one run document per level, the levels of one tool run sharing `scenario.sweep.id`. A file is known by
its content, not its name. SGLang's bench_serving results are recognised and refused in words (sglang_bench.py).

Plain Python, no Django: `parse` reads every file, checks it and builds every document, or raises ServingImportError
naming the file and field (or the deployment key and flag) before anything is stored. docs/serving.md describes the
mapping of each field and the deployment file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import aiperf, guidellm, inferencex, sglang_bench, vllm_bench
from .deployment import Deployment, check_complete, load
from .errors import ServingImportError
from .levels import Level, document, sweep_ids
from .reading import json_value, yaml_value

__all__ = ["Deployment", "ImportedLevel", "ServingImportError", "load", "parse"]

MAX_FILES = 1000
# A guidellm report keeps its request samples (all of them unless --metrics sample_size says otherwise).
MAX_RESULT_BYTES = 256 * 1024 * 1024
# The names the tools give their result files, searched for in a folder argument. guidellm writes one report in
# several formats: its YAML is read only where no JSON of the same name lies beside it.
FOLDER_NAMES = (aiperf.SUMMARY, "benchmarks.json")
YAML_NAMES = ("benchmarks.yaml", "benchmarks.yml")


@dataclass(frozen=True)
class ImportedLevel:
    """One load level, ready to store."""

    path: str
    sweep: str
    index: int
    document: dict[str, Any]


def parse(paths: list[Path], deployment: Deployment, *, submitter: str) -> list[ImportedLevel]:
    """Every level of `paths` (result files, or folders searched for the tools' result files) as a run document."""
    check_complete(deployment)
    files = _expand(paths)
    levels = [level for path in files for level in _read(path)]
    vllm_bench.regroup_swept(levels)
    placed = sweep_ids(levels)
    out = []
    for n, level in enumerate(levels):
        sweep = placed[n]
        out.append(ImportedLevel(level.path, sweep[0], sweep[1], document(level, deployment, sweep, submitter)))
    return sorted(out, key=lambda item: (item.sweep, item.index))


def _expand(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = _in_folder(path)
            if not inside:
                names = ", ".join((*FOLDER_NAMES, *YAML_NAMES))
                raise ServingImportError(
                    f"holds no result file ({names}, or a JSON file that opens as vLLM's results do); name other "
                    "files one by one",
                    where=str(path),
                )
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise ServingImportError("no such file or folder", where=str(path))
    if len(found) > MAX_FILES:
        raise ServingImportError(f"{len(found)} result files: at most {MAX_FILES} at once", where=str(paths[0]))
    return list(dict.fromkeys(p.resolve() for p in found))


def _in_folder(folder: Path) -> list[Path]:
    found = [p for name in FOLDER_NAMES for p in folder.rglob(name) if p.is_file()]
    phases = {p for manifest in folder.rglob(aiperf.PHASE_MANIFEST) for p in aiperf.phase_summaries(manifest.parent)}
    found = [p for p in found if p.resolve() not in phases]  # aiperf's per-phase copies: the run's summary is read
    found += [p for name in YAML_NAMES for p in folder.rglob(name) if not p.with_suffix(".json").is_file()]
    # vLLM names its result files as the user asks (--result-filename): known by how they open
    known = set(found)
    found += [
        p
        for p in folder.rglob("*.json")
        if p not in known and p.name != vllm_bench.WARMUP and vllm_bench.opens_as_result(p)
    ]  # (a sweep's warmup.json is its first run's warm-up, read with it)
    return sorted(found)


def _read(path: Path) -> list[Level]:
    """The levels of one result file, by what its content says it is."""
    where = str(path)
    if path.stat().st_size > MAX_RESULT_BYTES:
        raise ServingImportError(f"larger than {MAX_RESULT_BYTES} bytes", where=where)
    raw = path.read_bytes()
    if sglang_bench.is_sglang(raw):
        raise sglang_bench.refuse(where)
    if (results := vllm_bench.appended(raw, where)) is not None:
        return [vllm_bench.read(path, data, raw, line=n) for n, data in results]
    data = _parsed(raw, where)
    if isinstance(data, dict) and aiperf.is_aiperf(data):
        if len(raw) > aiperf.MAX_SUMMARY_BYTES:
            raise ServingImportError(f"larger than {aiperf.MAX_SUMMARY_BYTES} bytes for an aiperf summary", where=where)
        level = aiperf.read(path, data, raw)
        inferencex.cross_check(level, data, inferencex.records_for(path))
        inferencex.launch_settings(level, path)
        return [level]
    if isinstance(data, dict) and guidellm.is_guidellm(data):
        return guidellm.read(path, data, raw)
    if isinstance(data, dict) and vllm_bench.is_vllm(data):
        return [vllm_bench.read(path, data, raw)]
    raise ServingImportError(
        "not a result file of a known tool (aiperf's profile_export_aiperf.json: aiperf_version and input_config; "
        "guidellm's benchmarks report: metadata.guidellm_version and benchmarks; vLLM bench serve's result JSON: "
        "date, backend, model_id, request_throughput and the rest of the keys vLLM 0.33.0 writes)",
        where=where,
    )


def _parsed(raw: bytes, where: str) -> Any:
    """JSON, or else YAML (guidellm writes its report in either); neither is refused with the JSON error. Either
    is bounded (reading.py): too deep, a non-finite or huge number is refused with its pointer."""
    try:
        return json_value(raw, where)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        error = exc
    try:
        data = yaml_value(raw, where)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        raise ServingImportError(
            f"not JSON ({error}) nor a YAML mapping; a tool's result file is expected", where=where
        )
    return data
