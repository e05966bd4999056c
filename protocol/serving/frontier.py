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
    the target needs is not stated, e.g. too few requests for a p99), with the first reason it does not meet it. A
    failure wins over a figure not stated: one objective over its bound fails the level whatever the others say."""
    unstated: str | None = None
    if target.min_per_user is not None:
        seen = level.per_user.value
        if seen is None:
            unstated = "tokens/s per user not stated: the level did not measure it"
        elif seen < target.min_per_user:
            return "fails", f"{number(seen, Style.SIGNIFICANT)} tok/s per user is under the target"
    for obj in target.objectives:
        measured = level.metric(obj.metric, obj.percentile)
        if measured is None:
            unstated = unstated or unmeasured(level, obj.metric, obj.percentile)
        elif measured > obj.max_ms:
            return (
                "fails",
                f"{obj.metric} {obj.percentile} {number(measured, Style.SIGNIFICANT)} ms is over the objective",
            )
    return ("unjudged", unstated) if unstated else ("meets", None)


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
    """The highest load measured before an objective failed, among the levels that could be judged (DECISIONS.md,
    Inference: "a level too short to state an objective's percentile neither holds nor fails: the walk passes it
    and says so").

    `level` is None when no judged load met the target: the lowest judged load already failed (`failed` is it), or
    no load could be judged at all (`unjudged`). `reached` is False when no measured load failed: then the knee is
    the highest judged load, a lower bound on the capacity. `passed` holds each level the walk passed without a
    verdict, with the reason (e.g. 62 requests where a p90 needs 64)."""

    level: Level | None
    index: int | None
    failed: Level | None
    reached: bool
    words: str
    unjudged: bool = False
    passed: tuple[tuple[Level, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "level": self.level.as_dict() if self.level else None,
            "index": self.index,
            "failed_at": self.failed.as_dict() if self.failed else None,
            "reached": self.reached,
            "unjudged": self.unjudged,
            "passed": [{"load": lv.load, "mode": lv.mode, "words": lv.words, "reason": why} for lv, why in self.passed],
            "words": self.words,
        }


def _passed_words(passed: Sequence[tuple[Level, str]]) -> str:
    """'; passed without a verdict: concurrency 1 (ttft_ms p90 not stated: 62 requests …)', or '' for none."""
    if not passed:
        return ""
    return "; passed without a verdict (neither held nor failed): " + "; ".join(
        f"{lv.words} ({why})" for lv, why in passed
    )


def knee(levels: Sequence[Level], target: Target) -> Knee:
    """Walk the levels in load order; the knee is the last judged level that meets `target` before the first that
    fails it. A level that cannot be judged (a figure the target needs is not stated) is passed, named in `passed`.
    Levels of another load mode than the first are not walked (one sweep is one mode)."""
    walk = [lv for lv in levels if lv.mode == levels[0].mode] if levels else []
    last: int | None = None
    passed: list[tuple[Level, str]] = []
    for n, lv in enumerate(walk):
        verdict, why = judge(lv, target)
        if verdict == "unjudged":
            passed.append((lv, str(why)))
            continue
        if verdict == "fails":
            at = f"{lv.words} failed ({why})"
            said = _passed_words(passed)
            if last is None:
                lowest = "the lowest judged load" if passed else "the lowest load measured"
                return Knee(None, None, lv, True, f"{lowest} already fails: {at}{said}", passed=tuple(passed))
            words = f"{walk[last].words}, the highest judged load before {at}{said}"
            return Knee(walk[last], last, lv, True, words, passed=tuple(passed))
        last = n
    said = _passed_words(passed)
    if last is None:
        if passed:
            return Knee(None, None, None, False, f"no load could be judged{said}", True, tuple(passed))
        return Knee(None, None, None, False, "no load level was measured")
    return Knee(
        walk[last],
        last,
        None,
        False,
        f"{walk[last].words}, the highest judged load: every judged load met {target.words()}, so the capacity is a "
        f"lower bound (no higher load was shown to fail){said}",
        passed=tuple(passed),
    )
