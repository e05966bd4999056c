"""Serving sweeps built from a simple law, so the frontier, the best level at a target and the knee are known.

The law of a closed-loop sweep (concurrency c, `accelerators` accelerators in the system):
    tokens/s per user (median request)  u(c) = u0 ÷ (1 + c ÷ c0)
    output tokens/s of the system       T(c) = c × u(c)          (rises with c, towards u0 × c0)
    ttft_ms p99                         ttft(c) = t0 × (1 + c ÷ 4)
Past `saturate_at` the server falls over: T and u both drop to half, so that level is off the frontier.
A level's runs are multiplied by the factors in `noise` (one factor per repetition).

Documents are protocol 1.2 levels (scenario.sweep, metrics.tokens_per_second_per_user) built on the server
example; they pass the 1.2 schema (tests/protocol/test_serving.py checks it once the schema has 1.2).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from tests.conftest import load_example


def per_user(c: float, u0: float, c0: float) -> float:
    return u0 / (1.0 + c / c0)


def system_tps(c: float, u0: float, c0: float) -> float:
    return c * per_user(c, u0, c0)


def level_doc(
    c: int,
    *,
    sweep: str,
    index: int,
    levels: int,
    accelerators: int = 8,
    model: str = "B200",
    vendor: str = "NVIDIA",
    u0: float = 100.0,
    c0: float = 8.0,
    t0: float = 100.0,
    factor: float = 1.0,
    saturated: bool = False,
) -> dict[str, Any]:
    doc = copy.deepcopy(load_example("inference-server-h100-bf16"))
    doc["protocol"] = "benchreg.submission/1.2"
    doc["system"]["name"] = f"{model.lower()}-{sweep}"
    doc["system"]["accelerators"][0].update({"model": model, "vendor": vendor, "count": accelerators})
    drop = 0.5 if saturated else 1.0
    u = per_user(c, u0, c0) * factor * drop
    tps = system_tps(c, u0, c0) * factor * drop
    doc["scenario"] = {
        "kind": "server",
        "arrival": "closed-loop",
        "target_qps": None,
        "concurrency": c,
        "latency_slo_ms": None,
        "sweep": {"id": sweep, "index": index, "levels": levels, "mode": "concurrency", "stop_reason": None},
    }
    m = doc["metrics"]
    m["throughput"] = {"value": tps, "unit": "tokens/s"}
    m["tokens_per_second"] = {"value": tps, "unit": "tokens/s"}
    m["request_rate"] = {"value": tps / 100.0, "unit": "requests/s"}
    m["goodput"] = {"value": tps / 100.0, "unit": "requests/s"}
    ttft = t0 * (1.0 + c / 4.0) * (2.0 if saturated else 1.0)
    m["ttft_ms"] = {
        **m["ttft_ms"],
        "p50": ttft / 2,
        "p90": ttft * 0.8,
        "p95": ttft * 0.9,
        "p99": ttft,
        "max": ttft * 1.2,
    }
    m["tokens_per_second_per_user"] = {
        "count": 2364,
        "method": "nearest-rank",
        "unit": "tokens/s",
        "min": u * 0.5,
        "mean": u,
        "p50": u,
        "p90": u * 1.2,
        "p95": u * 1.3,
        "p99": u * 1.4,
        "max": u * 1.5,
    }
    m.pop("energy", None)
    return doc


def sweep_docs(
    concurrencies: Sequence[int],
    *,
    sweep: str = "sweep-a",
    noise: Sequence[float] = (1.0,),
    saturate_at: int | None = None,
    **law: Any,
) -> list[dict[str, Any]]:
    """Every level of one sweep, each repeated once per factor in `noise` (repetitions of one level)."""
    return [
        level_doc(
            c,
            sweep=sweep,
            index=i,
            levels=len(concurrencies),
            factor=f,
            saturated=saturate_at is not None and c >= saturate_at,
            **law,
        )
        for i, c in enumerate(concurrencies)
        for f in noise
    ]
