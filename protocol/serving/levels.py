"""One load level read from one run document, and runs grouped into the levels of a sweep."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..numbers import Style, number
from ..statistics import Estimate, from_values
from ..summary import sweep_id as sweep_id  # one definition: the registry's sweep_id column is read with it

PER_USER_STATISTIC = "p50"
PER_USER_WORDS = "tokens/s per user (median request: metrics.tokens_per_second_per_user p50)"
THROUGHPUT_WORDS = "output tokens/s per accelerator (the level's tokens/s ÷ accelerators in the tested system)"
# The fields that change from one level of a sweep to the next: left out where levels of one configuration are
# grouped (a decision's candidate is the configuration, not one of its loads).
LOAD_FIELDS = ("target_qps", "concurrency", "sweep")


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def sweep_ids(docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The distinct sweep identities of `docs`, in order of first appearance."""
    return list(dict.fromkeys(s for s in map(sweep_id, docs) if s is not None))


def offered_load(doc: Mapping[str, Any]) -> tuple[str, float] | None:
    """("request-rate", requests/s) for an open-loop level, ("concurrency", streams) for a closed-loop one; None
    when the run states neither. A sweep's own mode decides when the level states both."""
    scenario = doc.get("scenario") or {}
    sweep = scenario.get("sweep")
    sweep = sweep if isinstance(sweep, Mapping) else {}
    rate, streams = _num(scenario.get("target_qps")), _num(scenario.get("concurrency"))
    if sweep.get("mode") == "concurrency" and streams is not None:
        return "concurrency", streams
    if rate is not None:
        return "request-rate", rate
    if streams is not None:
        return "concurrency", streams
    return None


def load_words(mode: str, load: float) -> str:
    """'concurrency 16' or '4.5 requests/s offered'."""
    if mode == "concurrency":
        return f"concurrency {number(load, Style.SIGNIFICANT)}"
    return f"{number(load, Style.SIGNIFICANT)} requests/s offered"


def _tokens(shape: Mapping[str, Any], which: str) -> str:
    block = shape.get(which)
    mean = _num(block.get("mean")) if isinstance(block, Mapping) else None
    return number(mean, Style.GENERAL, digits=7) if mean is not None else "?"  # "1000/200", as lengths are said


def shape_words(shape: Any) -> str:
    """A request shape as a reader says it: '1000/200 fixed' (input/output tokens), '1000/200 mean, normal',
    'dataset sharegpt, multi-turn', 'agentic multi-turn'; 'not stated' for none."""
    if not isinstance(shape, Mapping):
        return "not stated"
    kind, dataset = shape.get("kind"), shape.get("dataset")
    lengths = f"{_tokens(shape, 'input_tokens')}/{_tokens(shape, 'output_tokens')}"
    if kind == "fixed":
        words = f"{lengths} fixed"
    elif kind == "distribution":
        laws = sorted({str((shape.get(w) or {}).get("distribution") or "") for w in ("input_tokens", "output_tokens")})
        words = f"{lengths} mean, {', '.join(law for law in laws if law) or 'distribution not stated'}"
    elif kind == "agentic-multi-turn":
        words = "agentic multi-turn" + (f" ({dataset})" if dataset else "")
    else:
        words = f"dataset {dataset or 'not named'}"
    if kind != "agentic-multi-turn" and shape.get("turns") == "multi":
        turns = shape.get("max_turns")
        words += ", multi-turn" + (f" (up to {turns} turns)" if isinstance(turns, int) else "")
    return words + _prefix_words(shape.get("shared_prefix"))


def _prefix_words(prefix: Any) -> str:
    """', shared prefix 50%' (', ... in 4 groups'): two shapes that differ only there must read differently."""
    if not isinstance(prefix, Mapping) or not isinstance(prefix.get("ratio"), int | float):
        return ""
    groups = prefix.get("groups")
    return f", shared prefix {prefix['ratio']:.0%}" + (
        f" in {groups} groups" if isinstance(groups, int) and groups > 1 else ""
    )


def accelerators(doc: Mapping[str, Any]) -> int:
    """Every accelerator of the tested system (all models, all nodes); 0 when the run names none."""
    total = 0
    for accel in (doc.get("system") or {}).get("accelerators") or []:
        count = accel.get("count") if isinstance(accel, Mapping) else None
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            total += count
    return total


def configuration_label(doc: Mapping[str, Any]) -> str:
    """'8×NVIDIA B200' (the accelerators of the tested system), or the system's name when it has none."""
    accels = [a for a in (doc.get("system") or {}).get("accelerators") or [] if isinstance(a, Mapping)]
    if not accels:
        return str((doc.get("system") or {}).get("name") or "host CPU")
    return " + ".join(f"{a.get('count', 1)}×{a.get('model', '?')}" for a in accels)


def tokens_per_second(doc: Mapping[str, Any]) -> float | None:
    """The level's output tokens per second (metrics.tokens_per_second, else metrics.throughput in tokens/s)."""
    metrics = doc.get("metrics") or {}
    for name in ("tokens_per_second", "throughput"):
        block = metrics.get(name)
        if isinstance(block, Mapping) and block.get("unit") == "tokens/s" and (v := _num(block.get("value"))):
            return v
    return None


def per_user_rate(doc: Mapping[str, Any]) -> float | None:
    """The median request's output tokens per second (metrics.tokens_per_second_per_user p50)."""
    block = (doc.get("metrics") or {}).get("tokens_per_second_per_user")
    return _num(block.get(PER_USER_STATISTIC)) if isinstance(block, Mapping) else None


def tuned_settings(docs: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """{sweep id: the engine settings (software.settings keys) whose value differs between the sweep's levels}: a
    sweep whose engine was tuned level by level (InferenceX sets vLLM's max_num_seqs to each level's concurrency).
    Such a sweep is still one candidate, its levels one engine tuned per load, and says so where its knee is used."""
    seen: dict[str, dict[str, set[str]]] = {}
    levels: dict[str, int] = {}
    for doc in docs:
        sweep = sweep_id(doc)
        if sweep is None:
            continue
        levels[sweep] = levels.get(sweep, 0) + 1
        settings = (doc.get("software") or {}).get("settings") or {}
        for key, value in settings.items():
            seen.setdefault(sweep, {}).setdefault(str(key), set()).add(repr(value))
    out = {}
    for sweep, keys in seen.items():
        # a key some levels lack varies too; one level alone varies in nothing
        varying = [k for k, vals in keys.items() if len(vals) > 1 or _levels_with(docs, sweep, k) < levels[sweep]]
        if varying:
            out[sweep] = tuple(sorted(varying))
    return out


def _levels_with(docs: Sequence[Mapping[str, Any]], sweep: str, key: str) -> int:
    return sum(1 for d in docs if sweep_id(d) == sweep and key in ((d.get("software") or {}).get("settings") or {}))


def level_neutral(doc: Mapping[str, Any], tuned: Sequence[str] = ()) -> dict[str, Any]:
    """A copy of `doc` without the fields that differ between the levels of one sweep, so that comparability keys
    group a configuration's levels together: the load (LOAD_FIELDS of the scenario), the engine settings `tuned`
    with it level by level (tuned_settings), and whether the level reached
    steady state. Steady state is an outcome of each level (a level near the capacity may not settle), controlled
    between runs but not a property of the configuration: each level shows its own, and a decision names a knee
    without it as a gap (no-steady-state)."""
    out = copy.deepcopy(dict(doc))
    if sweep_id(doc) is None:
        return out
    scenario = dict(out.get("scenario") or {})
    for key in LOAD_FIELDS:
        scenario.pop(key, None)
    out["scenario"] = scenario
    conditions = out.get("conditions")
    if isinstance(conditions, dict):
        conditions.pop("steady_state", None)
    software = out.get("software")
    settings = software.get("settings") if isinstance(software, dict) else None
    if isinstance(settings, dict) and tuned:
        for key in tuned:  # set per level with the load: the sweep's own, not another configuration
            settings.pop(key, None)
    return out


@dataclass(frozen=True)
class Point:
    """One run: one measurement of one load level."""

    document: Mapping[str, Any]
    ref: Mapping[str, Any]
    mode: str
    load: float
    per_user: float | None
    per_accelerator: float | None


@dataclass(frozen=True)
class Level:
    """The runs at one offered load, with the level's two figures (geometric mean over its runs, and an interval
    from 3 runs)."""

    mode: str
    load: float
    points: tuple[Point, ...]
    per_user: Estimate
    per_accelerator: Estimate

    @property
    def words(self) -> str:
        return load_words(self.mode, self.load)

    @property
    def documents(self) -> list[Mapping[str, Any]]:
        return [p.document for p in self.points]

    def metric(self, name: str, statistic: str) -> float | None:
        """The geometric mean over the level's runs of metrics.<name>.<statistic> (None unless every run has it)."""
        values = [_num(((p.document.get("metrics") or {}).get(name) or {}).get(statistic)) for p in self.points]
        if not values or any(v is None or v <= 0 for v in values):
            return None
        return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "load": self.load,
            "words": self.words,
            "runs": [dict(p.ref) for p in self.points],
            "per_user": self.per_user.as_dict(),
            "per_accelerator": self.per_accelerator.as_dict(),
        }


def _estimate(metric: str, unit: str, values: Sequence[float | None]) -> Estimate:
    base = Estimate(
        metric=metric,
        value=None,
        unit=unit,
        lower_is_better=False,
        method="",
        interval_method="none",
        n=len(values),
        source="runs",
        value_unit="run",
    )
    if any(v is None for v in values):
        return from_values(base, [], "the level's runs (not every run measured it)")
    return from_values(base, [v for v in values if v is not None], "one value per run at this load")


def _point(doc: Mapping[str, Any], ref: Mapping[str, Any]) -> Point | None:
    load = offered_load(doc)
    if load is None:
        return None
    count, tps = accelerators(doc), tokens_per_second(doc)
    per_accelerator = tps / count if tps is not None and count else None
    return Point(doc, ref, load[0], load[1], per_user_rate(doc), per_accelerator)


def levels(docs: Sequence[Mapping[str, Any]], refs: Sequence[Mapping[str, Any]] | None = None) -> list[Level]:
    """The runs grouped by offered load (runs at one load repeat that level), in load order. A run without an
    offered load is not a level and is left out; `refs` cite the runs (their positions when not given)."""
    refs = refs if refs is not None else [{"index": i} for i in range(len(docs))]
    grouped: dict[tuple[str, float], list[Point]] = {}
    for doc, ref in zip(docs, refs, strict=True):
        point = _point(doc, ref)
        if point is not None:
            grouped.setdefault((point.mode, point.load), []).append(point)
    out = []
    for (mode, load), points in sorted(grouped.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        out.append(
            Level(
                mode,
                load,
                tuple(points),
                _estimate("tokens_per_second_per_user", "tokens/s", [p.per_user for p in points]),
                _estimate("tokens_per_second_per_accelerator", "tokens/s", [p.per_accelerator for p in points]),
            )
        )
    return out
