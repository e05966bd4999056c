"""The per-request export of a load level, kept beside its document, and the figures recomputed from it.

One JSON line per request sent or scheduled, in scheduled order (format `benchreg.serving.requests/1`):

    {"index": 0, "scheduled": 0.0, "sent": 0.000112, "first_token": 0.0614, "first_answer": 0.1201,
     "tokens": [0.0614, 0.0731, ...], "end": 0.2113, "outcome": "completed", "detail": null,
     "input_tokens": 32, "output_tokens": 12, "reasoning_tokens": 5, "usage": true}

Times are seconds from the level's origin (its first scheduled arrival in open loop, its start in closed loop);
`tokens` holds the arrival of every event that carried a token (reasoning, answer text or a tool call's
fragment), so each inter-token gap is the difference of two neighbours; `first_token` is `tokens[0]` and
`first_answer` the first answer token's (null: none came, or not sent for `sent`); `usage` says the counts are
the server's usage report, else the client's count of token events. The document names the file and its sha256 in
`provenance.artifacts`.

The runner computes the document's figures from exactly these values (the records are rebased to the origin before
any figure is taken, and a float's shortest repr reads back as the same double), so `recompute` gives every figure
of `metrics` but the client's own (`metrics.client` is the load generator's view of itself, not the requests'),
and `conditions.window`, identical to the document: `benchreg recompute-serving DOC.json` says so or lists each
figure that differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from runners.arguments import ROW_ID, server_url

from .levels import Level, Objectives, counted_by
from .loadgen import OUTCOMES, LevelRun, Monitor, Record

FORMAT = "benchreg.serving.requests/1"
MEDIA_TYPE = "application/jsonl"
MAX_EXPORT_BYTES = 2 * 1024**3  # a level of 1,000,000 requests of ~100 tokens; refused beyond, never read whole


class ExportError(ValueError):
    """The export cannot be read or does not belong to the document: the message says which line and why."""


def rebased(run: LevelRun) -> LevelRun:
    """The level's records with every time in seconds from its origin (`run.started`), which becomes 0.0."""
    origin = run.started

    def shift(r: Record) -> Record:
        return replace(
            r,
            scheduled=r.scheduled - origin,
            sent=r.sent - origin,
            chunks=[t - origin for t in r.chunks],
            end=r.end - origin,
            first_answer=r.first_answer - origin,
        )

    return replace(run, records=[shift(r) for r in run.records], started=0.0)


def _time(value: float) -> float | None:
    return value if value == value else None


def to_jsonl(records: list[Record]) -> bytes:
    """The export's bytes: one line per record (module docstring)."""
    lines = []
    for r in records:
        row = {
            "index": r.index,
            "scheduled": r.scheduled,
            "sent": _time(r.sent),
            "first_token": r.chunks[0] if r.chunks else None,
            "first_answer": _time(r.first_answer),
            "tokens": r.chunks,
            "end": _time(r.end),
            "outcome": r.outcome,
            "detail": r.detail,
            "input_tokens": r.input_tokens,
            "output_tokens": r.output_tokens,
            "reasoning_tokens": r.reasoning_tokens,
            "usage": r.usage,
        }
        lines.append(json.dumps(row, ensure_ascii=False, allow_nan=False))
    return ("\n".join(lines) + "\n").encode() if lines else b""


def artifact(data: bytes, name: str) -> dict[str, Any]:
    """The document's `provenance.artifacts` entry naming the export."""
    return {
        "name": name,
        "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "media_type": MEDIA_TYPE,
        "format": FORMAT,
        "description": "one line per request of this level: send, every token event, first answer token, end, "
        "token counts and outcome (runners/serving/export.py); recompute with `benchreg recompute-serving`",
    }


def _number(row: dict[str, Any], key: str, line: int, optional: bool = True) -> float:
    value = row.get(key)
    if value is None and optional:
        return math.nan
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ExportError(f"line {line}: {key} is {str(value)[:40]!r}, not a time in seconds")
    return float(value)


def _count(row: dict[str, Any], key: str, line: int) -> int:
    value = row.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ExportError(f"line {line}: {key} is {str(value)[:40]!r}, not a whole number >= 0")
    return value


def _record(row: Any, line: int) -> Record:
    if not isinstance(row, dict):
        raise ExportError(f"line {line}: not a JSON object")
    tokens = row.get("tokens")
    if not isinstance(tokens, list):
        raise ExportError(f"line {line}: tokens is not a list of times")
    chunks = [_number({"tokens": t}, "tokens", line, optional=False) for t in tokens]
    if row.get("first_token") != (chunks[0] if chunks else None):
        raise ExportError(f"line {line}: first_token is not the first of tokens")
    if row.get("outcome") not in OUTCOMES:
        raise ExportError(f"line {line}: outcome is {str(row.get('outcome'))[:40]!r}, not one of {', '.join(OUTCOMES)}")
    reasoning = row.get("reasoning_tokens")
    return Record(
        index=_count(row, "index", line),
        scheduled=_number(row, "scheduled", line, optional=False),
        sent=_number(row, "sent", line),
        chunks=chunks,
        end=_number(row, "end", line),
        outcome=row["outcome"],
        detail=row.get("detail") if isinstance(row.get("detail"), str) else None,
        input_tokens=_count(row, "input_tokens", line),
        output_tokens=_count(row, "output_tokens", line),
        usage=row.get("usage") is True,
        first_answer=_number(row, "first_answer", line),
        reasoning_tokens=None if reasoning is None else _count(row, "reasoning_tokens", line),
    )


def read_jsonl(data: bytes) -> list[Record]:
    """The records of an export's bytes; ExportError names the first bad line."""
    records = []
    for number, text in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        try:
            row = json.loads(text)
        except ValueError:
            raise ExportError(f"line {number}: not JSON") from None
        records.append(_record(row, number))
    return records


def _level(doc: dict[str, Any], records: list[Record]) -> Level:
    scenario = doc["scenario"]
    open_loop = scenario.get("target_qps") is not None
    slo = scenario.get("latency_slo_ms") or {}
    objectives = Objectives(slo.get("ttft_p99"), slo.get("tpot_p99"), slo.get("latency_p99"))
    load = scenario["target_qps"] if open_loop else scenario["concurrency"]
    run = LevelRun(records, Monitor(), 0.0, len(records))
    return Level("request-rate" if open_loop else "concurrency", load, run, objectives)


def recompute(doc: dict[str, Any], data: bytes) -> dict[str, Any]:
    """The level's figures from its export: {"metrics": ... (without `client`), "window": ...}."""
    level = _level(doc, read_jsonl(data))
    metrics = level.metrics(*counted_by([level]))
    window = {"seconds": round(level.seconds, 4), "iterations": len(level.completed), "repetitions": 1}
    return {"metrics": metrics, "window": window}


def differences(doc: dict[str, Any], data: bytes) -> list[str]:
    """Every figure of the document its export does not reproduce, as "pointer: document X, export Y"; [] when
    all agree. The export must be the one the document names (its sha256), else that is the one difference."""
    named = [a for a in (doc.get("provenance") or {}).get("artifacts") or [] if a.get("format") == FORMAT]
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if not named or named[0].get("sha256") != digest:
        stated = named[0].get("sha256") if named else "none"
        return [f"/provenance/artifacts: the document names export {stated}, this file is {digest}"]
    figures = recompute(doc, data)
    stated = {k: v for k, v in doc["metrics"].items() if k != "client"}
    out = _compare("/metrics", stated, figures["metrics"])
    return out + _compare("/conditions/window", doc["conditions"]["window"], figures["window"])


def _compare(pointer: str, stated: Any, computed: Any) -> list[str]:
    if isinstance(stated, dict) and isinstance(computed, dict):
        keys = sorted(set(stated) | set(computed))
        return [d for k in keys for d in _compare(f"{pointer}/{k}", stated.get(k), computed.get(k))]
    return [] if stated == computed else [f"{pointer}: document {stated!r}, export {computed!r}"]


def export_path(doc_path: Path, doc: dict[str, Any]) -> Path:
    """Where the export the document names lies: beside it, under the name it states."""
    named = [a for a in (doc.get("provenance") or {}).get("artifacts") or [] if a.get("format") == FORMAT]
    if not named:
        raise ExportError(f"{doc_path} names no per-request export (provenance.artifacts with format {FORMAT})")
    name = str(named[0]["name"])
    if "/" in name or "\\" in name or name.startswith("."):
        raise ExportError(f"{doc_path} names its export {name!r}, which is not a plain file name")
    return doc_path.parent / name


def write_export(folder: Path, doc: dict[str, Any], data: bytes) -> Path:
    """Write the export `doc` names into `folder`, under the name it states, whole or not at all (a temporary name,
    then moved into place); its path. Written before the document, so no document names a file that is not there."""
    path = export_path(folder / "level.json", doc)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    """`benchreg recompute-serving DOC.json [--requests FILE]` or `benchreg recompute-serving --server URL --run ID`:
    0 every figure reproduced, 1 some differ, 2 unread."""
    p = argparse.ArgumentParser(prog="benchreg recompute-serving", description=__doc__.split("\n\n")[0])
    p.add_argument("document", type=Path, nargs="?", help="a level's document written by `benchreg run serving`")
    p.add_argument("--requests", type=Path, default=None, help="its export (default: the one it names, beside it)")
    p.add_argument("--run", type=ROW_ID, default=None, help="instead of a file: run ID of the registry at --server")
    p.add_argument(
        "--server", type=server_url, default=os.environ.get("BENCHREG_SERVER"), help="the registry (BENCHREG_SERVER)"
    )
    p.add_argument("--token", default=os.environ.get("BENCHREG_TOKEN"), help="a read token (BENCHREG_TOKEN)")
    args = p.parse_args(argv)
    if (args.run is None) == (args.document is None):
        p.error("give a document, or --run ID with --server and --token")
    try:
        if args.run is not None:
            label, source, doc, data = _from_registry(args)
        else:
            label = args.document.name
            doc = json.loads(args.document.read_text())
            if not isinstance(doc, dict):
                raise ValueError(f"{args.document} is not a serving level's document: not a JSON object")
            path = args.requests or export_path(args.document, doc)
            if path.stat().st_size > MAX_EXPORT_BYTES:
                raise ExportError(f"{path} is over {MAX_EXPORT_BYTES:,} bytes")
            source, data = path.name, path.read_bytes()
        found = differences(doc, data)
    except KeyError as exc:
        print(f"error: {args.document or args.run} is not a serving level's document: it has no {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for line in found:
        print(line)
    if not found:
        print(f"every figure of {label} (metrics but the client's, window) recomputed from {source}")
    return 1 if found else 0


def _from_registry(args: argparse.Namespace) -> tuple[str, str, dict[str, Any], bytes]:
    """Run `args.run`'s document and the export it names, downloaded from the registry at `args.server`."""
    if not (args.server and args.token):
        raise ExportError("--run needs --server and --token (or BENCHREG_SERVER / BENCHREG_TOKEN)")
    from runners.client import RegistryClient, RegistryError  # only here: httpx is not needed to read local files

    with RegistryClient(args.server, args.token) as client:
        try:
            response = client.request("GET", f"/api/v1/submissions/{args.run}/document")
            if response.status_code != 200:
                raise ExportError(f"run {args.run}: {_words(response)}")
            doc = response.json()
            named = [a for a in (doc.get("provenance") or {}).get("artifacts") or [] if a.get("format") == FORMAT]
            if not named:
                raise ExportError(f"run {args.run} names no per-request export (provenance.artifacts, format {FORMAT})")
            hexdigest = str(named[0].get("sha256", "")).removeprefix("sha256:")
            with client.stream("GET", f"/api/v1/submissions/{args.run}/artifacts/{hexdigest}") as got:
                if got.status_code != 200:
                    got.read()
                    raise ExportError(f"run {args.run}'s export {named[0].get('name')}: {_words(got)}")
                data = bytearray()
                for chunk in got.iter_bytes():
                    data += chunk
                    if len(data) > MAX_EXPORT_BYTES:
                        raise ExportError(f"run {args.run}'s export is over {MAX_EXPORT_BYTES:,} bytes")
        except RegistryError as exc:
            raise ExportError(str(exc)) from None
    return f"run {args.run}", f"its export {named[0].get('name')} from {args.server}", doc, bytes(data)


def _words(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        body = {}
    detail = body.get("detail") if isinstance(body, dict) else None
    return str(detail or f"the registry answered {response.status_code}")
