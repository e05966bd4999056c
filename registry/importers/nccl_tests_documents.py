"""nccl-tests' output as protocol 1.3 run documents: `benchreg import nccl-tests LOG` (docs/interconnect.md).

Plain Python, no Django, no database. A log is read by `nccl_tests.read_path`, which refuses a log that does not
reproduce its own printed figures, naming the line, side and column; each group of rows with one type, reduction
and root (one, unless the run used `-d all` or `-o all`) becomes one document of phase `collective`, every figure
kept with the text it was printed as (`printed`), so the protocol's own check (`collective-bandwidth-mismatch`) holds
it to the same rounding. What a log does not say is not invented: the device matrix, PCIe links and NICs are named
absent; the system is the caller's `--system` file, else the device lines' hosts and device names.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from protocol import collectives

from . import nccl_tests

WORKLOAD_VERSION = "nccl-tests-2017"  # the bandwidth definitions of protocol/collectives.py
FORMATS = {"float": "fp32", "half": "fp16", "bfloat16": "bf16", "double": "fp64", "int32": "int32", "int": "int32"}
FORMATS |= {"int8": "int8", "char": "int8", "f8e4m3": "fp8-e4m3", "f8e5m2": "fp8-e5m2"}
ABSENT = {
    "device_matrix": "an nccl-tests log does not print the device matrix",
    "pcie": "an nccl-tests log prints bus ids, not PCIe generation or width",
    "nics": "an nccl-tests log does not print the NICs",
    "numa_nodes": "an nccl-tests log does not print NUMA nodes",
}


class NcclImportError(ValueError):
    """The log cannot become a run document: which file, and why (the reader's line and column where it has one)."""


MAX_SYSTEM_BYTES = 1 << 20


def load_system(path: Path | None) -> dict[str, Any] | None:
    """The protocol `system` object from a YAML, TOML or JSON file (checked with the document it goes into, so a
    mistake is named by its pointer under /system); None without a file."""
    if path is None:
        return None
    try:
        if path.stat().st_size > MAX_SYSTEM_BYTES:
            raise NcclImportError(f"{path}: over {MAX_SYSTEM_BYTES} bytes; a system file is read up to that")
        text = path.read_bytes().decode("utf-8")
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    except OSError as exc:
        raise NcclImportError(f"{path}: cannot read the system file ({exc.strerror})") from None
    except (ValueError, RecursionError, yaml.YAMLError) as exc:
        raise NcclImportError(f"{path}: not a YAML, TOML or JSON file: {str(exc).splitlines()[0][:200]}") from None
    if not isinstance(data, dict):
        raise NcclImportError(f"{path}: a system file holds one mapping (name, nodes, accelerators, host, ...)")
    return data


@dataclass(frozen=True)
class ImportedSweep:
    path: str
    document: dict[str, Any]


def read(
    paths: Iterable[Path], *, system: dict[str, Any] | None, submitter: str, collective: str | None = None
) -> list[ImportedSweep]:
    """Every log read and turned into documents before anything is stored; NcclImportError on the first refusal."""
    out = []
    for path in paths:
        try:
            log = nccl_tests.read_path(path, collective)
            data = path.read_bytes()
        except nccl_tests.NcclTestsError as exc:
            raise NcclImportError(f"{path}: {exc}") from None
        except OSError as exc:  # as the system file's: the reason in words, not "[Errno 2] ...: 'path'" again
            raise NcclImportError(f"{path}: cannot read the log ({exc.strerror})") from None
        if log.timed == "cputime":
            raise NcclImportError(
                f"{path}: printed with -C (CPU time beside bandwidths from GPU time): its bandwidths do not follow "
                "from a printed time, which a run document requires"
            )
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        out += [ImportedSweep(str(path), doc) for doc in documents(log, path.name, digest, system, submitter)]
    return out


def documents(
    log: nccl_tests.Log, name: str, digest: str, system: dict[str, Any] | None, submitter: str
) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str | None, int | None], list[nccl_tests.Row]] = {}
    for row in log.rows:
        groups.setdefault((row.type, row.redop, row.root), []).append(row)
    return [
        _document(log, rows, name, digest, system, submitter, whole_log=len(groups) == 1) for rows in groups.values()
    ]


def _document(
    log: nccl_tests.Log,
    rows: list[nccl_tests.Row],
    name: str,
    digest: str,
    system: dict[str, Any] | None,
    submitter: str,
    *,
    whole_log: bool,
) -> dict[str, Any]:
    dtype, redop = rows[0].type, rows[0].redop
    fmt = FORMATS.get(dtype, "unspecified")
    return {
        "protocol": "benchreg.submission/1.3",
        "phase": "collective",
        "workload": {
            "name": log.collective,
            "version": WORKLOAD_VERSION,
            "task": "collective communication",
            "shape": {"batch_size": 1},
        },
        "scenario": {"kind": "collective-sweep"},
        "precision": {"weights": fmt, "activations": fmt},
        "system": _system(log, system),
        "software": _software(log),
        "conditions": _conditions(log, rows),
        "metrics": {"primary": "collectives", "collectives": _block(log, rows, whole_log)},
        "provenance": {
            "runner": {"name": "nccl-tests", "version": log.nccl_tests_version or "not stated in the log"},
            "submitter": submitter,
            "source": "import",
            "origin": {
                "kind": "nccl-tests",
                "benchmark": f"{log.collective}_perf",
                "scenario": f"{dtype}/{redop or 'none'}" + (f"/root {rows[0].root}" if (rows[0].root or 0) > 0 else ""),
                "files": {name: digest},
                "unparsed": {f"note {i + 1}": note[:2000] for i, note in enumerate(log.notes[:100])},
            },
        },
    }


def _block(log: nccl_tests.Log, rows: list[nccl_tests.Row], whole_log: bool) -> dict[str, Any]:
    sizes = [_size(row, side, m) for row in rows for side, m in row.measurements]
    smallest = min(s["size_bytes"] for s in sizes)
    return {
        "collective": log.collective,
        "dtype": rows[0].type,
        "redop": rows[0].redop,
        "root": rows[0].root,
        "ranks": log.nranks,
        # nccl-tests' -a does not appear in its output; its default (1) is the mean over ranks
        "time_statistic": "mean-over-ranks",
        "sizes": sizes,
        "small_message_latency_us": min(s["time_us"] for s in sizes if s["size_bytes"] == smallest),
        "avg_busbw_gbs": log.avg_busbw if whole_log else None,  # the log's average is over every group
        "data_checked": log.header.validation == 1,
        "definition": collectives.collective(log.collective).source,
    }


def _size(row: nccl_tests.Row, side: str, m: nccl_tests.Measurement) -> dict[str, Any]:
    printed = {"time_us": m.printed["time"].strip(), "algbw_gbs": m.printed["algbw"].strip()}
    printed["busbw_gbs"] = m.printed["busbw"].strip()
    return {
        "size_bytes": row.size,
        "count": row.count,
        "side": side,
        "time_us": float(printed["time_us"]),
        "algbw_gbs": float(printed["algbw_gbs"]),
        "busbw_gbs": float(printed["busbw_gbs"]),
        "wrong": m.wrong,
        "printed": printed,
    }


def _system(log: nccl_tests.Log, given: dict[str, Any] | None) -> dict[str, Any]:
    hosts = list(dict.fromkeys(d.host for d in log.devices))
    system = dict(given) if given else _system_from_devices(log, hosts)
    per_host = {h: [d.rank for d in log.devices if d.host == h] for h in hosts}
    counts = {len(ranks) for ranks in per_host.values()}
    system["topology"] = {
        "nodes": len(hosts),
        "processes_per_node": counts.pop() if len(counts) == 1 else None,
        "hosts": [
            {
                "host": host[:200],
                "ranks": ranks,
                "pcie": [{"bus_id": d.bus_id[:40], "name": d.name[:200]} for d in log.devices if d.host == host],
                "absent": dict(ABSENT),
            }
            for host, ranks in per_host.items()
        ],
    }
    return system


def _system_from_devices(log: nccl_tests.Log, hosts: list[str]) -> dict[str, Any]:
    names: dict[str, int] = {}
    for device in log.devices:
        names[device.name] = names.get(device.name, 0) + 1
    return {
        "name": (", ".join(hosts) if len(hosts) <= 4 else f"{hosts[0]} and {len(hosts) - 1} more hosts")[:200],
        "nodes": len(hosts),
        "accelerators": [{"vendor": _vendor(n), "model": n[:500], "count": c} for n, c in names.items()],
        "host": None,
        "notes": {"system": "read from the log's device lines (no --system file given)"},
    }


def _vendor(device_name: str) -> str:
    """The vendor as the device's own name states it ('NVIDIA H100 80GB HBM3'); its first word otherwise."""
    first = device_name.split()[0] if device_name.split() else "unknown"
    return {"nvidia": "NVIDIA", "amd": "AMD", "tesla": "NVIDIA"}.get(first.lower(), first)[:500]


def _software(log: nccl_tests.Log) -> dict[str, Any]:
    amd = any(_vendor(d.name) == "AMD" for d in log.devices)
    return {
        "os": None,
        "communication": {
            "library": "rccl" if amd else "nccl",
            "version": log.nccl_version,
            "nccl_tests_version": log.nccl_tests_version,
            "env": {},
        },
        "notes": {"communication.env": "an nccl-tests log does not print the NCCL_* environment"},
    }


def _conditions(log: nccl_tests.Log, rows: list[nccl_tests.Row]) -> dict[str, Any]:
    failed = [row.line for row in rows if row.failed_validation]
    conditions: dict[str, Any] = {
        "warmup": {"iterations": log.header.warmup_iters, "seconds": None},
        "window": {"iterations": log.header.iters, "seconds": None, "repetitions": None},
        "steady_state": {
            "method": "not-assessed",
            "reached": None,
            "reasons": ["nccl-tests times each size once over its iterations"],
        },
    }
    if log.header.validation == 1:
        checks = {"nccl-tests data validation (#wrong is 0 on every row)": not failed}
        conditions["validity"] = {"valid": not failed, "checks": checks}
    return conditions
