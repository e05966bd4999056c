"""Template filters for numbers: {{ value|sig }} prints a few significant digits with thousands grouped."""

from __future__ import annotations

from typing import Any

from django import template

from protocol.decisions import VERDICT_WORDS
from protocol.decisions.training import BUDGET_WORDS
from protocol.numbers import Style, number
from registry.presentation.answers import GAP_TITLES
from registry.presentation.per_accelerator import per_accelerator_text, run_figures
from registry.presentation.words import axis_words, headline_text, outcome_words, statistic_words

register = template.Library()


@register.filter
def sig(value: Any, digits: int = 4) -> str:
    if value is None or value == "":
        return "—"
    return number(value, Style.SIGNIFICANT, digits=int(digits))


@register.filter
def verdict_words(code: Any) -> str:
    """A decision candidate's verdict code ('not-enough-evidence') in the words a reader reads."""
    return VERDICT_WORDS.get(str(code), str(code).replace("-", " "))


@register.filter
def budget_words(code: Any) -> str:
    """A training candidate's verdict on the time budget ('cannot-tell') in words."""
    return BUDGET_WORDS.get(str(code), str(code).replace("-", " "))


@register.filter
def gap_title(gap: Any) -> str:
    """A decision gap's short name for a table cell (the full message is in the candidate's sentence)."""
    code = str(gap.get("code")) if isinstance(gap, dict) else str(gap)
    return GAP_TITLES.get(code, code.replace("-", " "))


@register.filter
def headline(value: Any, unit: Any = None) -> str:
    """A run's headline, or an estimate beside one, as every page prints it: {{ run.headline_value|headline:unit }}."""
    return headline_text(value, unit)


@register.filter
def statistic(estimate: Any) -> str:
    """Which statistic an estimate is: 'as reported', 'geometric mean of 3 repetitions'."""
    return statistic_words(estimate) if isinstance(estimate, dict) else ""


@register.filter(name="axis_words")
def axis_in_words(axis: Any) -> str:
    """An axis in words: 'system under test', 'equal quality' (never 'iso-quality')."""
    return axis_words(axis)


@register.filter(name="outcome_words")
def outcome_in_words(code: Any) -> str:
    """A comparison's outcome code ('not-enough-evidence') in words ('not enough evidence')."""
    return outcome_words(code)


@register.filter(name="per_accelerator")
def per_accelerator_of(run: Any) -> Any:
    """A stored run's figures per accelerator (protocol.per_accelerator.PerAccelerator), from its columns."""
    return run_figures(run)


@register.filter(name="per_acc")
def per_accelerator_in_words(value: Any, unit: Any) -> str:
    """A figure per accelerator with its unit: '34.06 tokens/s per accelerator' ('—' without a value)."""
    return per_accelerator_text(value, unit)
