"""A procurement question answered from measured runs: who meets the objectives, how many systems, at what cost.

A *question* (phase, workload, scenario, latency objectives, quality target, demand, candidate filters, prices,
criteria) is answered per *candidate configuration*: runs that are comparable on the iso-quality axis (same
workload, dataset, scenario and quality target; system, software and precision are the subject) and repeat one
configuration. For each candidate the answer says:

- whether it meets every latency objective, with the runs that show it. The claim is calibrated: "meets" is
  said only when the 95% interval of the measured percentile (Student t on the logs of one value per run) lies
  wholly under the objective, "misses" only when it lies wholly above; otherwise "uncertain", and with fewer
  than 3 runs "not enough evidence" with the face value in words (tests/protocol/test_calibration.py);
- how many systems carry the demand at steady state, with an interval from the sustainable rate's interval;
- cost per million outputs (price per system-hour, or purchase price over its lifetime; energy cost apart),
  energy per output where a meter measured it;
- which candidates are on the Pareto frontier of the criteria that matter (cost, latency, energy), never a
  single score;
- the evidence that is missing or weak (no steady state, no energy, too few repetitions, preview systems).

Nothing here touches a database: the registry passes the candidate runs' documents and references.

A *training* question (phase "training": R runs of a workload per period under a time budget per run) is read and
answered by training.py (DECISIONS.md, Training); `read` and `answer_question` choose by phase.

Where each part lives: question.py (the question and its plausible ranges), evidence.py (the runs and why one does
not answer), candidate.py (one configuration's verdicts, systems, cost and energy with their intervals),
answer.py (the whole answer: candidates, frontier, summary), tuned.py (a sweep whose engine was tuned per load).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .answer import CRITERION_FIELD, KIND, METHODS, SAFE_INTEGER, VERDICT_WORDS, answer, frontier, summary
from .candidate import GAP_TITLES, Interval, candidate, gaps, interval, objective_verdict, systems_needed
from .evidence import Evidence, accelerator_model, out_of_question
from .question import (
    CRITERIA,
    LIFETIME_HOURS,
    MAX_DEMAND,
    MAX_ENERGY_PRICE_KWH,
    MAX_HEADROOM,
    MAX_PRICE_PER_HOUR,
    MAX_PURCHASE_PRICE,
    MAX_REDUNDANCY,
    RANGES,
    RATE_UNITS,
    DecisionError,
    Question,
)
from .training import TrainingQuestion
from .training import answer as training_answer


def read(data: Any) -> Question | TrainingQuestion:
    """The question in its JSON form checked: a training question when its phase says so, else an inference one."""
    if isinstance(data, Mapping) and data.get("phase") == "training":
        return TrainingQuestion.from_dict(data)
    return Question.from_dict(data)


def answer_question(
    question: Question | TrainingQuestion, evidence: Sequence[Evidence], *, digests_name_documents: bool = False
) -> dict[str, Any]:
    """The answer of either kind of question (`digests_name_documents`: see `answer`)."""
    if isinstance(question, TrainingQuestion):
        return training_answer(question, evidence)
    return answer(question, evidence, digests_name_documents=digests_name_documents)


__all__ = [
    "CRITERIA",
    "CRITERION_FIELD",
    "GAP_TITLES",
    "KIND",
    "LIFETIME_HOURS",
    "MAX_DEMAND",
    "MAX_ENERGY_PRICE_KWH",
    "MAX_HEADROOM",
    "MAX_PRICE_PER_HOUR",
    "MAX_PURCHASE_PRICE",
    "MAX_REDUNDANCY",
    "METHODS",
    "RANGES",
    "RATE_UNITS",
    "SAFE_INTEGER",
    "VERDICT_WORDS",
    "DecisionError",
    "Evidence",
    "Interval",
    "Question",
    "TrainingQuestion",
    "accelerator_model",
    "answer",
    "answer_question",
    "candidate",
    "frontier",
    "gaps",
    "interval",
    "objective_verdict",
    "out_of_question",
    "read",
    "summary",
    "systems_needed",
]
