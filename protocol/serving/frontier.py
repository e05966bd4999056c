"""The target a level must meet, the frontier of a sweep, its best measured level at a target and its knee."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import rules, sizing
from ..numbers import Style, number
from .levels import Level

MAX_PER_USER = 1e6  # tokens/s one user sees: beyond this a target is a typo


class TargetError(ValueError):
    """A target that cannot be applied as asked; the message names the field."""


@dataclass(frozen=True)
class Target:
    """What a level must meet: a least interactivity (median request's tokens/s per user) and/or latency
    objectives (e.g. ttft_ms p99 <= 2000 ms). An empty target is met by every measured level."""

    min_per_user: float | None = None
    objectives: tuple[sizing.LatencyObjective, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "") -> Target:
        """{"min_tokens_per_second_per_user": 50, "objectives": [{metric, percentile, max_ms}]}."""
        if not isinstance(data, Mapping):
            raise TargetError(f"{where or '/'}: an object {{min_tokens_per_second_per_user, objectives}}")
        for key in data:
            if key not in ("min_tokens_per_second_per_user", "objectives"):
                raise TargetError(
                    f"{where}/{key}: not a field of a target; the known fields are "
                    "min_tokens_per_second_per_user, objectives"
                )
        objectives = []
        for i, obj in enumerate(data.get("objectives") or []):
            try:
                objectives.append(sizing.LatencyObjective.from_dict(obj))
            except (sizing.SizingError, TypeError, ValueError) as exc:
                raise TargetError(f"{where}/objectives/{i}: {exc}") from None
        return cls(per_user_target(data.get("min_tokens_per_second_per_user"), where), tuple(objectives))

    def words(self) -> str:
        parts = []
        if self.min_per_user is not None:
            parts.append(f"at least {number(self.min_per_user, Style.SIGNIFICANT)} tok/s per user (median request)")
        parts += [o.words() for o in self.objectives]
        return " and ".join(parts) or "no target (every measured level qualifies)"

    def short(self) -> str:
        """'50 tok/s per user' (the sentence's opening)."""
        if self.min_per_user is not None and not self.objectives:
            return f"{number(self.min_per_user, Style.SIGNIFICANT)} tok/s per user"
        return self.words()

    def as_dict(self) -> dict[str, Any]:
        return {
            "min_tokens_per_second_per_user": self.min_per_user,
            "objectives": [o.words() for o in self.objectives],
            "words": self.words(),
        }


def per_user_target(value: Any, where: str = "") -> float | None:
    """A least tokens/s per user from its JSON form (None when absent), held to (0, MAX_PER_USER]."""
    if value is None:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not 0 < value <= MAX_PER_USER:
        raise TargetError(
            f"{where}/min_tokens_per_second_per_user: a positive number of tokens per second of at most "
            f"{MAX_PER_USER:g}"
        )
    return float(value)


def level_meets(level: Level, target: Target) -> tuple[bool, str | None]:
    """Whether the level meets the target on its point values, and the first reason it does not."""
    verdict, why = judge(level, target)
    return verdict == "meets", why


def judge(level: Level, target: Target) -> tuple[str, str | None]:
    """'meets', 'fails' (a figure is over its objective or under the interactivity target) or 'unjudged' (a figure
    the target needs is not stated, e.g. too few requests for a p99), with the first reason it does not meet it."""
    if target.min_per_user is not None:
        seen = level.per_user.value
        if seen is None:
            return "unjudged", "tokens/s per user not stated: the level did not measure it"
        if seen < target.min_per_user:
            return "fails", f"{number(seen, Style.SIGNIFICANT)} tok/s per user is under the target"
    for obj in target.objectives:
        measured = level.metric(obj.metric, obj.percentile)
        if measured is None:
            return "unjudged", unmeasured(level, obj.metric, obj.percentile)
        if measured > obj.max_ms:
            return (
                "fails",
                f"{obj.metric} {obj.percentile} {number(measured, Style.SIGNIFICANT)} ms is over the objective",
            )
    return "meets", None


def unmeasured(level: Level, metric: str, statistic: str) -> str:
    """Why a level states no value for an objective's percentile: most often too few requests for it (the protocol
    states a p99 from 662 values), which a longer level, or an objective on a lower percentile, answers."""
    counts = [((p.document.get("metrics") or {}).get(metric) or {}).get("count") for p in level.points]
    minimum = rules.MIN_SAMPLES_FOR_PERCENTILE.get(statistic)
    fewest = min((c for c in counts if isinstance(c, int) and not isinstance(c, bool)), default=None)
    if minimum is not None and fewest is not None and fewest < minimum:
        return (
            f"{metric} {statistic} not stated: {fewest} requests at this load, and the protocol states a "
            f"{statistic} from {minimum} (a longer level, or an objective on a lower percentile, would answer it)"
        )
    return f"{metric} {statistic} not stated: the level did not measure it"


def frontier(levels: Sequence[Level]) -> list[int]:
    """Indices (in `levels`) of the measured levels no other level beats on both throughput per accelerator and
    tokens/s per user (higher is better on both; point values), in order of rising tokens/s per user."""
    pts = [
        (i, lv.per_user.value, lv.per_accelerator.value)
        for i, lv in enumerate(levels)
        if lv.per_user.value is not None and lv.per_accelerator.value is not None
    ]
    members = [
        (u, i)
        for i, u, t in pts
        if not any((u2 >= u and t2 >= t) and (u2 > u or t2 > t) for j, u2, t2 in pts if j != i)
    ]
    return [i for _, i in sorted(members)]


@dataclass(frozen=True)
class Best:
    """A configuration's best measured level at a target, or why none qualifies."""

    level: Level | None
    index: int | None
    reason: str | None  # why no level qualifies
    between: str | None  # what was not measured (no interpolation)

    def as_dict(self) -> dict[str, Any]:
        return {
            "level": self.level.as_dict() if self.level else None,
            "index": self.index,
            "reason": self.reason,
            "between": self.between,
        }


def best_at(levels: Sequence[Level], target: Target) -> Best:
    """The level with the highest throughput per accelerator among those that meet `target` (measured levels only:
    nothing is interpolated), with the words saying what lies between it and the next load."""
    qualifying = [i for i, lv in enumerate(levels) if level_meets(lv, target)[0] and lv.per_accelerator.value]
    if not qualifying:
        failing = "; ".join(f"{lv.words}: {level_meets(lv, target)[1]}" for lv in levels[:3])
        reason = f"no measured level meets {target.words()}" + (f" ({failing})" if failing else "")
        return Best(None, None, reason, None)
    i = max(qualifying, key=lambda n: (levels[n].per_accelerator.value or 0.0, -levels[n].load))
    return Best(levels[i], i, None, _between(levels, i, target))


def _between(levels: Sequence[Level], i: int, target: Target) -> str:
    """What the chosen level leaves unmeasured: the next load, where it missed the target, and that no load
    between them was measured."""
    chosen = levels[i]
    later = [lv for lv in levels[i + 1 :] if lv.mode == chosen.mode]
    if not later:
        return (
            f"{chosen.words} is the highest load measured; a higher load might still meet the target but was not "
            "measured"
        )
    nxt = later[0]
    ok, why = level_meets(nxt, target)
    after = f"the next measured load, {nxt.words}, " + (f"does not meet it ({why})" if not ok else "meets it too")
    return (
        f"only measured levels qualify: {chosen.words} was used; {after}; a higher throughput at a load between "
        "them was not measured (no interpolation)"
    )


@dataclass(frozen=True)
class Knee:
    """The highest load measured before an objective failed (DECISIONS.md, Inference).

    `level` is None when the first load already failed. `reached` is False when no measured load failed: then
    the knee is the highest load measured, a lower bound on the capacity. `unjudged` is True when the load that
    ended the walk did not fail an objective but did not state it (too few requests for its percentile): not
    shown to hold, so the walk stops there, but no miss either."""

    level: Level | None
    index: int | None
    failed: Level | None
    reached: bool
    words: str
    unjudged: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "level": self.level.as_dict() if self.level else None,
            "index": self.index,
            "failed_at": self.failed.as_dict() if self.failed else None,
            "reached": self.reached,
            "unjudged": self.unjudged,
            "words": self.words,
        }


def knee(levels: Sequence[Level], target: Target) -> Knee:
    """Walk the levels in load order; the knee is the last one that meets `target` before the first that does
    not. Levels of another load mode than the first are not walked (one sweep is one mode)."""
    walk = [lv for lv in levels if lv.mode == levels[0].mode] if levels else []
    last: int | None = None
    for n, lv in enumerate(walk):
        verdict, why = judge(lv, target)
        if verdict != "meets":
            unjudged = verdict == "unjudged"
            at = f"{lv.words} {'was not judged' if unjudged else 'failed'} ({why})"
            if last is None:
                first = "is not shown to meet the target" if unjudged else "already fails"
                return Knee(None, None, lv, True, f"the lowest load measured {first}: {at}", unjudged)
            return Knee(walk[last], last, lv, True, f"{walk[last].words}, the highest load before {at}", unjudged)
        last = n
    if last is None:
        return Knee(None, None, None, False, "no load level was measured")
    return Knee(
        walk[last],
        last,
        None,
        False,
        f"{walk[last].words}, the highest load measured: every load met {target.words()}, so the capacity is a "
        "lower bound (no higher load was measured)",
    )
