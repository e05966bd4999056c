"""MLPerf Training's rules per round, as data: rounds/training/v<round>.json, written by
scripts/mlperf-training-rules from mlcommons/logging (each file names the commit and the path of every rule).

A round's file says which benchmarks the round has, how many runs a result needs (benchmark_meta.py), how many
the olympic mean drops at each end (the result summarizer), the quality each division must reach (the
compliance checker's ATLEAST_ONE_CHECK of <division>_<benchmark>.yaml) and how the published score is scaled
(scaling.json). The importer reads these files and nothing else: a round, benchmark or division they do not
cover is refused with the missing rule named, never given another round's rule or a default.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .plan import SourceError

RULES_DIR = Path(__file__).with_name("rounds") / "training"
HOW_TO_ADD = "scripts/mlperf-training-rules writes it from mlcommons/logging"


@dataclass(frozen=True)
class Bound:
    """One metric's pass bounds as the checker states them: `v >= 0.72 and v < 1.0` is min 0.72 (inclusive),
    max 1.0 (exclusive). A None bound is one the checker does not set."""

    low: float | None
    low_inclusive: bool
    high: float | None
    high_inclusive: bool

    def admits(self, value: float) -> bool:
        if self.low is not None and (value < self.low or (value == self.low and not self.low_inclusive)):
            return False
        return not (self.high is not None and (value > self.high or (value == self.high and not self.high_inclusive)))


@dataclass(frozen=True)
class QualityRule:
    """The quality a run must reach, read as MLPerf's compliance checker reads it.

    `read` says what an evaluation is: "value", each `key` record's value is the metric; "dict", each record's
    value is {metric: value}; "grouped", `key` records carry one metric each (metadata "metric") and the
    records sharing metadata `group_by` (samples_count) form one evaluation, as the Stable Diffusion checker
    builds them. A run converged when at least one evaluation meets every metric's bound (the checker's
    ATLEAST_ONE_CHECK). The first metric is the headline."""

    key: str
    read: str
    group_by: str | None
    metrics: dict[str, Bound]
    check: str
    path: str
    line: int

    @property
    def headline(self) -> str:
        return next(iter(self.metrics))

    def target(self) -> float | None:
        """The headline metric's target: the one bound of the check that is not the edge of the metric's range.

        MLCommons' checks pair the target with a sanity edge: `v >= 0.759 and v < 1.0` (accuracy, target 0.759),
        `v <= 0.058 and v > 0.0` (a word error rate, target 0.058), `v <= 2.69 and v > 2.6` (a log perplexity,
        target 2.69), `0.0 <= FID <= 90.0` (target 90). An edge is a lower bound of 0 or an exclusive one, or an
        upper bound of 1.0; every closed-division rule of rounds/training has exactly one bound left. None when no
        bound or two are left (an open division's `v < 1.0` states no target)."""
        bound = self.metrics[self.headline]
        left = [
            *([bound.low] if bound.low is not None and bound.low != 0.0 and bound.low_inclusive else []),
            *([bound.high] if bound.high is not None and bound.high != 1.0 else []),
        ]
        return left[0] if len(left) == 1 else None

    def met(self, evaluation: dict[str, float]) -> bool:
        """True when the evaluation has every metric and each lies within its bounds."""
        return all(name in evaluation and bound.admits(evaluation[name]) for name, bound in self.metrics.items())


@dataclass(frozen=True)
class BenchmarkRules:
    """What one benchmark of one round needs: runs, runs dropped at each end, and the division's quality."""

    benchmark: str
    runs_required: int
    dropped_each_end: int
    quality: QualityRule
    init_limit_ms: float  # the longest initialization a run may take (the checker's common.yaml)


@dataclass(frozen=True)
class Scaling:
    """How MLCommons scales a result's olympic mean: by `key` of the benchmark folder's `file`, and by
    `when_missing` when the folder has no such file (the summarizer's own default)."""

    file: str
    key: str
    when_missing: float


@dataclass(frozen=True)
class RoundRules:
    """One round's rules file, read."""

    round: str
    repo: str
    commit: str
    data: dict[str, Any]

    def benchmark(self, name: str, division: str) -> BenchmarkRules:
        """The rules of a benchmark in a division; SourceError naming the missing rule when the file has none."""
        entry = self.data["benchmarks"].get(name)
        if entry is None:
            known = ", ".join(sorted(self.data["benchmarks"]))
            raise SourceError(
                f"benchmark {name!r} is not in MLPerf Training {self.round}'s rules "
                f"({self.repo} mlperf_logging/benchmark_meta.py lists {known}): not imported"
            )
        quality = entry["quality"].get(division)
        if quality is None:
            raise SourceError(f"MLPerf Training {self.round} has no quality rule for the {division!r} division")
        if "unsupported" in quality:
            raise SourceError(
                f"no quality rule for {name} ({division}) in {self.round}: {quality['unsupported']} "
                f"({quality['source']['path']})"
            )
        minutes = self.data["init_limit_minutes"][division]
        return BenchmarkRules(
            name, entry["runs_required"], entry["dropped_each_end"], _quality(quality), minutes * 60 * 1000.0
        )

    @property
    def scaling(self) -> Scaling:
        rule = self.data["scoring"]["scaling"]
        if rule["applies_to"] != "olympic mean":
            raise SourceError(f"{self.round}'s scaling rule applies to {rule['applies_to']!r}, not the olympic mean")
        return Scaling(rule["file"], rule["key"], float(rule["when_missing"]))

    def source(self, rules: BenchmarkRules) -> str:
        """Where the rules used came from, in one line (provenance.origin.rules_source)."""
        scoring = self.data["scoring"]
        return (
            f"{self.repo}@{self.commit}: {rules.quality.path}:{rules.quality.line} (quality); "
            f"{scoring['dropped_source']['path']}:{scoring['dropped_source']['line']} (dropped runs), "
            f"lines {','.join(str(n) for n in scoring['scaling']['source']['lines'])} (scaling.json); "
            f"{self.data['benchmarks_source']['path']} (runs required); "
            f"{self.data['init_limit_minutes']['source']['path']} (initialization limit)"
        )


def _quality(entry: dict[str, Any]) -> QualityRule:
    metrics = {
        name: Bound(b["min"], bool(b["min_inclusive"]), b["max"], bool(b["max_inclusive"]))
        for name, b in entry["metrics"].items()
    }
    return QualityRule(
        key=entry["key"],
        read=entry["read"],
        group_by=entry.get("group_by"),
        metrics=metrics,
        check=entry["check"],
        path=entry["source"]["path"],
        line=entry["source"]["line"],
    )


def known_rounds() -> list[str]:
    """The rounds with a rules file, oldest first."""
    return sorted((p.stem for p in RULES_DIR.glob("v*.json")), key=lambda r: tuple(int(x) for x in r[1:].split(".")))


@functools.cache
def round_rules(round_value: str) -> RoundRules:
    """The rules of a round ('v5.0'); SourceError naming the missing file when the project has none."""
    path = RULES_DIR / f"{round_value}.json"
    if not path.is_file():
        raise SourceError(
            f"no MLPerf Training rules for round {round_value} (rounds/training/ has {', '.join(known_rounds())}; "
            f"{HOW_TO_ADD}): not imported"
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("kind") != "mlperf-training-rules" or data.get("round") != round_value:
        raise SourceError(f"{path.name} is not the MLPerf Training rules of {round_value}")
    return RoundRules(round_value, data["source"]["repo"], data["source"]["commit"], data)
