"""Result files of serving benchmark tools (aiperf, vLLM's `bench serve`; guidellm is not read yet) as protocol 1.2
load levels, one run document per level, the levels of one tool run sharing `scenario.sweep.id`.

Plain Python, no Django: `parse` reads every file, checks it and builds every document, or raises ServingImportError
naming the file and field (or the deployment key and flag) before anything is stored. docs/serving.md describes the
mapping of each field and the deployment file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import aiperf, inferencex, vllm_bench
from .deployment import Deployment, check_complete, load
from .errors import ServingImportError
from .levels import Level, document, sweep_ids

__all__ = ["Deployment", "ImportedLevel", "ServingImportError", "load", "parse"]

MAX_FILES = 1000


@dataclass(frozen=True)
class ImportedLevel:
    """One load level, ready to store."""

    path: str
    sweep: str
    index: int
    document: dict[str, Any]


def parse(paths: list[Path], deployment: Deployment, *, submitter: str) -> list[ImportedLevel]:
    """Every level of `paths` (result files, or folders searched for aiperf summaries) as a run document."""
    check_complete(deployment)
    files = _expand(paths)
    levels = [_read(path) for path in files]
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
            inside = sorted(path.rglob(aiperf.SUMMARY))
            if not inside:
                raise ServingImportError(f"holds no {aiperf.SUMMARY}; name other tools' result files", where=str(path))
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise ServingImportError("no such file or folder", where=str(path))
    if len(found) > MAX_FILES:
        raise ServingImportError(f"{len(found)} result files: at most {MAX_FILES} at once", where=str(paths[0]))
    return list(dict.fromkeys(p.resolve() for p in found))


def _read(path: Path) -> Level:
    where = str(path)
    if path.stat().st_size > aiperf.MAX_SUMMARY_BYTES:
        raise ServingImportError(f"larger than {aiperf.MAX_SUMMARY_BYTES} bytes", where=where)
    raw = path.read_bytes()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ServingImportError(f"not JSON ({exc}); a result file of aiperf is expected", where=where) from None
    if isinstance(data, dict) and aiperf.is_aiperf(data):
        level = aiperf.read(path, data, raw)
        inferencex.cross_check(level, data, inferencex.records_for(path))
        return level
    if isinstance(data, dict) and vllm_bench.is_vllm(data):
        return vllm_bench.read(path, data, raw)
    raise ServingImportError(
        "not a result file of a known tool (aiperf's profile_export_aiperf.json: aiperf_version and input_config)",
        where=where,
    )
