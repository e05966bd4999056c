"""Reading what aiperf and guidellm wrote into the same figures benchreg measures, for bench/serving_load.py.

Shared with tests/devtools/test_serving_peers.py, which reads files the tools themselves wrote
(tests/fixtures/serving/peers/), so the parsing is checked in CI without either tool installed.

Each figure means one thing whatever the tool (docs/serving.md, "Peers"):
- TTFT: per request, from the request leaving the client to its first text chunk (aiperf `time_to_first_token`,
  guidellm `time_to_first_token_ms`: both from the request's start, not from its scheduled arrival);
- gap: every inter-chunk gap of every request, one sample per gap (aiperf `inter_chunk_latency`; guidellm does
  not record the gaps, only their per-request mean, so its gap figures are absent);
- TPOT: per request, (last token − first token) ÷ (output tokens − 1) (aiperf `inter_token_latency`, guidellm
  `inter_token_latency_ms`, whose distribution repeats each request's value once per gap: with equal output
  lengths its quantiles are the per-request ones). guidellm's own `time_per_output_token_ms` includes the TTFT
  and is not used;
- output tokens/s: output tokens of completed requests ÷ the tool's benchmark window (aiperf
  `output_token_throughput`, guidellm `output_tokens_per_second.successful.mean`, the duration-weighted mean rate
  over its window, i.e. tokens ÷ window);
- issued and achieved request rates, computed here by one formula from each tool's per-request records:
  issued = (sent − 1) ÷ (last start − first start); achieved = (completed − 1) ÷ (last end − first start).
Percentiles are the tool's own: aiperf interpolates (numpy's linear), guidellm takes a value of the sample
(numpy's "higher"), benchreg's bench uses numpy's linear.
A file from a version not listed in KNOWN_VERSIONS is refused: its fields may mean something else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KNOWN_VERSIONS = {"aiperf": ("0.13.0",), "guidellm": ("0.8.1",)}


class PeerFileError(ValueError):
    """A peer's output file that cannot be read as expected: the message names the file and the field."""


@dataclass(frozen=True)
class Figures:
    """One load level as a client measured it (ms, tokens/s, requests/s); None where the tool does not record it."""

    tool: str
    ttft: tuple[float, float]  # p50, p99
    gap: tuple[float, float] | None
    tpot: tuple[float, float]
    tokens_per_s: float
    sent: int
    completed: int
    issued_rps: float
    achieved_rps: float


def rates(starts: list[float], ends: list[float]) -> tuple[float, float]:
    """(issued, achieved) requests/s from the start times of all sent and the end times of the completed."""
    issued = (len(starts) - 1) / (max(starts) - min(starts)) if len(starts) > 1 and max(starts) > min(starts) else 0.0
    span = max(ends) - min(starts) if ends and starts else 0.0
    return issued, (len(ends) - 1) / span if len(ends) > 1 and span > 0 else 0.0


def _get(data: Any, path: str, where: Path) -> Any:
    """data[a][b]... for path "a.b..."; a PeerFileError naming the file and the field when absent."""
    node = data
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise PeerFileError(f"{where}: field {path!r} absent")
        node = node[part]
    return node


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PeerFileError(f"{path}: not a readable JSON file ({exc})") from None


def _quantiles(data: Any, template: str, where: Path) -> tuple[float, float]:
    """(p50, p99) read at `template` with {q} replaced by p50 and p99."""
    p50, p99 = (float(_get(data, template.format(q=q), where)) for q in ("p50", "p99"))
    return p50, p99


def _version(tool: str, version: Any, where: Path) -> None:
    if version not in KNOWN_VERSIONS[tool]:
        raise PeerFileError(f"{where}: {tool} version {version!r} not known (known: {', '.join(KNOWN_VERSIONS[tool])})")


def aiperf_figures(folder: Path) -> Figures:
    """The figures of one aiperf run from its artifact folder (profile_export_aiperf.json + profile_export.jsonl)."""
    summary_path, records_path = folder / "profile_export_aiperf.json", folder / "profile_export.jsonl"
    summary = _json(summary_path)
    _version("aiperf", summary.get("aiperf_version") if isinstance(summary, dict) else None, summary_path)
    starts, ends = _aiperf_times(records_path)
    issued, achieved = rates(starts, ends)
    return Figures(
        "aiperf",
        ttft=_quantiles(summary, "time_to_first_token.{q}", summary_path),
        gap=_quantiles(summary, "inter_chunk_latency.{q}", summary_path),
        tpot=_quantiles(summary, "inter_token_latency.{q}", summary_path),
        tokens_per_s=float(_get(summary, "output_token_throughput.avg", summary_path)),
        sent=len(starts),
        completed=len(ends),
        issued_rps=issued,
        achieved_rps=achieved,
    )


def _aiperf_times(path: Path) -> tuple[list[float], list[float]]:
    """Start times of every profiling request and end times of the successful ones (s), from the records file."""
    starts, ends = [], []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise PeerFileError(f"{path}: not readable ({exc})") from None
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            raise PeerFileError(f"{path}:{number}: not JSON") from None
        meta = _get(record, "metadata", path)
        if meta.get("benchmark_phase", "profiling") != "profiling":
            continue
        starts.append(_get(meta, "request_start_ns", path) / 1e9)
        if not record.get("error") and not meta.get("was_cancelled"):
            ends.append(_get(meta, "request_end_ns", path) / 1e9)
    return starts, ends


def guidellm_figures(path: Path) -> Figures:
    """The figures of a guidellm run with one benchmark, from its JSON report (`--output kind=json,path=...`)."""
    report = _json(path)
    _version("guidellm", _get(report, "metadata.guidellm_version", path), path)
    benchmarks = _get(report, "benchmarks", path)
    if not isinstance(benchmarks, list) or len(benchmarks) != 1:
        raise PeerFileError(f"{path}: field 'benchmarks' must hold exactly one benchmark")
    bench = benchmarks[0]
    metrics = _get(bench, "metrics", path)
    starts, ends = _guidellm_times(bench, path)
    issued, achieved = rates(starts, ends)
    return Figures(
        "guidellm",
        ttft=_quantiles(metrics, "time_to_first_token_ms.successful.percentiles.{q}", path),
        gap=None,
        tpot=_quantiles(metrics, "inter_token_latency_ms.successful.percentiles.{q}", path),
        tokens_per_s=float(_get(metrics, "output_tokens_per_second.successful.mean", path)),
        sent=len(starts),
        completed=len(ends),
        issued_rps=issued,
        achieved_rps=achieved,
    )


def _guidellm_times(bench: dict[str, Any], path: Path) -> tuple[list[float], list[float]]:
    requests = _get(bench, "requests", path)
    starts, ends = [], []
    for status in ("successful", "errored", "incomplete"):
        for request in requests.get(status) or []:
            start = _get(request, "info.timings.request_start", path)
            if start is not None:  # None: it never left the client
                starts.append(float(start))
            if status == "successful":
                ends.append(float(_get(request, "info.timings.request_end", path)))
    return starts, ends
