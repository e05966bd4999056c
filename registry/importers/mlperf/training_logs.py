"""What MLPerf Training's files say about one run and one result: a run's time to train and the quality it
reached (from its :::MLLOG records, as MLCommons' compliance checker and result summarizer read them), and
the result's scaling.json.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any, NamedTuple, TypeGuard

from .plan import SourceError
from .training_rules import QualityRule, Scaling


class Judged(NamedTuple):
    """One run as MLPerf scores it: `seconds` only when the run converged (else it counts as slowest),
    `reached` the evaluation that met the target (or the last one logged), `converged` the checker's verdict
    and, when it did not converge, `why`."""

    seconds: float | None
    reached: dict[str, float] | None
    converged: bool
    why: str | None = None
    checkpoint: float | None = None  # the evaluated checkpoint (step_num / samples_count) of `reached`, if named


def run_time(records: list[dict[str, Any]]) -> tuple[float | None, str | None, dict[str, Any]]:
    """(seconds from run_start to run_stop or None, run_stop's status, the first value of each key).

    The summarizer takes the first run_start and the first run_stop; a log without both has no time."""
    first: dict[str, Any] = {}
    start = stop = None
    status = None
    for record in records:
        first.setdefault(record["key"], record.get("value"))
        if record["key"] == "run_start" and start is None:
            start = record.get("time_ms")
        elif record["key"] == "run_stop" and stop is None:
            stop = record.get("time_ms")
            status = (record.get("metadata") or {}).get("status")
    if isinstance(start, int):
        first["run_start.time_ms"] = start
    if not isinstance(start, int | Decimal) or not isinstance(stop, int | Decimal) or stop < start:
        return None, status, first
    return float((Decimal(stop) - Decimal(start)) / 1000), status, first


def evaluations(records: list[dict[str, Any]], rule: QualityRule) -> list[dict[str, float]]:
    """The run's evaluations in log order, each as {metric: value}, read the way the rule says."""
    if rule.read == "grouped":
        return _grouped(records, rule)
    found = []
    for record in records:
        if record["key"] != rule.key:
            continue
        value = record.get("value")
        if rule.read == "dict":
            found.append(_numbers(value if isinstance(value, dict) else {}))
        elif _is_number(value):
            found.append({rule.key: float(value)})
    return found


def _grouped(records: list[dict[str, Any]], rule: QualityRule) -> list[dict[str, float]]:
    """Records of one metric each (metadata 'metric'), merged per metadata `group_by` value (the checkpoint), as
    the Stable Diffusion checker builds its aggregated_eval_accuracy lines, in checkpoint order.

    Checkpoint order, not log order: the FID and CLIP of each checkpoint are computed offline and logged as they
    finish, out of order (NVIDIA's v3.1 eos_n64 logs step 2250 before 2000). MLCommons' RCP checker takes "the
    first eval step that passes the convergence criteria", the lowest passing checkpoint, and so does the
    importer: `judge` takes the first evaluation of this list that meets the target."""
    return [evaluation for _checkpoint, evaluation in checkpoints(records, rule)]


def checkpoints(records: list[dict[str, Any]], rule: QualityRule) -> list[tuple[float | None, dict[str, float]]]:
    """(checkpoint, {metric: value}) per checkpoint a grouped rule evaluates, lowest checkpoint first; a
    checkpoint that is not a number (None) keeps its place in log order after the numbered ones."""
    groups: dict[str, tuple[float | None, dict[str, float]]] = {}
    for record in records:
        metadata = record.get("metadata") or {}
        if record["key"] != rule.key or "metric" not in metadata or not _is_number(record.get("value")):
            continue
        group = metadata.get(rule.group_by or "")
        number = float(group) if _is_number(group) else None
        groups.setdefault(str(group), (number, {}))[1][str(metadata["metric"])] = float(record["value"])
    numbered = sorted((g for g in groups.values() if g[0] is not None), key=lambda g: g[0] or 0.0)
    return numbered + [g for g in groups.values() if g[0] is None]


def stop_checkpoint(records: list[dict[str, Any]], rule: QualityRule) -> float | None:
    """The checkpoint run_stop names in its metadata (`group_by`: step_num in v3.1, samples_count since v4.0), or
    None when it names none; the first run_stop counts, as for the run's time."""
    stop = next((r for r in records if r["key"] == "run_stop"), None)
    value = ((stop or {}).get("metadata") or {}).get(rule.group_by or "") if rule.group_by else None
    return float(value) if _is_number(value) else None


def judge(seconds: float | None, records: list[dict[str, Any]], rule: QualityRule, init_limit_ms: float) -> Judged:
    """MLPerf's verdict on a run: it converged when a run_start..run_stop time exists, at least one evaluation
    meets the target (the checker's ATLEAST_ONE_CHECK; run_stop's status is not what decides) and its
    initialization stayed under the round's limit. The quality reached is the first evaluation that met the
    target, where the clock stopped (for a grouped rule, the lowest checkpoint that met it, as MLCommons' RCP
    checker takes it); for a run that never met it, the last evaluation."""
    found = checkpoints(records, rule) if rule.read == "grouped" else [(None, e) for e in evaluations(records, rule)]
    checkpoint, reached = next(((c, e) for c, e in found if rule.met(e)), (None, None))
    init_ms = init_time(records)
    why = (
        "no run_start..run_stop time"
        if seconds is None
        else f"never met the quality target ({rule.check})"
        if reached is None
        else f"initialization took {init_ms / 60000:.1f} min, over the {init_limit_ms / 60000:g} min limit"
        if init_ms is not None and not init_ms < init_limit_ms
        else None
    )
    if reached is None and found:
        checkpoint, reached = found[-1]
    return Judged(seconds if why is None else None, reached, why is None, why, checkpoint)


def init_time(records: list[dict[str, Any]]) -> float | None:
    """Milliseconds from the first init_start to init_stop, as the checker measures initialization; None when
    the log lacks either record."""
    first_start: float | None = None
    for record in records:
        stamp = record.get("time_ms")
        if not _is_number(stamp):
            continue
        if record["key"] == "init_start":
            first_start = float(stamp) if first_start is None else min(first_start, float(stamp))
        elif record["key"] == "init_stop" and first_start is not None:
            return float(stamp) - first_start
    return None


def read_scaling(text: str, rule: Scaling) -> float:
    """The factor of a scaling.json: a JSON object whose `rule.key` is a number above zero."""
    try:
        value = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise SourceError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise SourceError("nested too deep to be a scaling.json") from None
    if not isinstance(value, dict) or rule.key not in value:
        raise SourceError(f"no {rule.key!r} key: not a scaling.json MLCommons' result summarizer can read")
    factor = value[rule.key]
    if not _is_number(factor) or not factor > 0:
        raise SourceError(f"{rule.key} is {factor!r}, not a number above zero")
    return float(factor)


def _is_number(value: Any) -> TypeGuard[int | float | Decimal]:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool) and math.isfinite(value)


def _numbers(value: dict[Any, Any]) -> dict[str, float]:
    return {str(k): float(v) for k, v in value.items() if _is_number(v)}
