"""Serving sweeps compared at equal interactivity: the throughput-per-accelerator frontier against the tokens per
second one user sees, the best measured level at a stated interactivity or latency objective, the knee of a sweep,
and a ratio between two configurations in words.

A run document is one load level (protocol 1.2: `scenario.sweep` names the sweep, `scenario.target_qps` or
`scenario.concurrency` the offered load). The contract of this package:

- Interactivity is the **median request's** output tokens per second after its first token
  (`metrics.tokens_per_second_per_user.p50`); throughput per accelerator is the level's output tokens per
  second (`metrics.tokens_per_second`, else `metrics.throughput` in tokens/s) ÷ every accelerator of the tested
  system (`system.accelerators[*].count`, summed).
- Documents at the same offered load (in one sweep or several sweeps of one configuration) are repetitions of
  that level: a level's figure is the geometric mean of one value per run, with a Student t interval on the logs
  (protocol.statistics) from 3 runs; fewer runs give the point value and say there is no interval.
- **No interpolation.** Only measured levels qualify for a target. A level is chosen by its point values; the
  answer names the level used, and says that a higher throughput between it and the next measured load was not
  measured. The frontier is drawn through measured points only (straight segments are a reading aid, not data).
- The knee (shared/DECISIONS.md, Inference): the highest load measured before an objective failed, walking the
  levels in load order. A level too short to state an objective's percentile neither holds nor fails: the walk
  passes it and names it (Knee.passed). When no level failed, the highest judged load is a lower bound, and said
  so.

Plain Python: no Django, no I/O. Where each part lives: levels.py (reading one document; grouping into levels),
frontier.py (target, frontier, best level, knee), compare.py (two configurations at one target, in words).
"""

from __future__ import annotations

from .compare import Comparison, compare_at, not_like_for_like, sweep_summary
from .frontier import (
    MAX_PER_USER,
    Best,
    Knee,
    Target,
    TargetError,
    best_at,
    frontier,
    knee,
    level_meets,
    per_user_target,
)
from .levels import (
    LOAD_FIELDS,
    PER_USER_STATISTIC,
    PER_USER_WORDS,
    THROUGHPUT_WORDS,
    Level,
    Point,
    accelerators,
    configuration_label,
    level_neutral,
    levels,
    load_words,
    offered_load,
    per_user_rate,
    shape_words,
    sweep_id,
    sweep_ids,
    tokens_per_second,
    tuned_settings,
)

__all__ = [
    "LOAD_FIELDS",
    "MAX_PER_USER",
    "PER_USER_STATISTIC",
    "PER_USER_WORDS",
    "THROUGHPUT_WORDS",
    "Best",
    "Comparison",
    "Knee",
    "Level",
    "Point",
    "Target",
    "TargetError",
    "accelerators",
    "best_at",
    "compare_at",
    "configuration_label",
    "frontier",
    "knee",
    "level_meets",
    "level_neutral",
    "levels",
    "load_words",
    "not_like_for_like",
    "offered_load",
    "per_user_rate",
    "per_user_target",
    "shape_words",
    "sweep_id",
    "sweep_ids",
    "sweep_summary",
    "tokens_per_second",
    "tuned_settings",
]
