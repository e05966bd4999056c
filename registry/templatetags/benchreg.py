"""Template filters for numbers: {{ value|sig }} prints a few significant digits with thousands grouped."""

from __future__ import annotations

from typing import Any

from django import template

from protocol.decisions import GAP_TITLES, VERDICT_WORDS
from protocol.numbers import Style, number

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
def gap_title(gap: Any) -> str:
    """A decision gap's short name for a table cell (the full message is in the candidate's sentence)."""
    code = str(gap.get("code")) if isinstance(gap, dict) else str(gap)
    return GAP_TITLES.get(code, code.replace("-", " "))
