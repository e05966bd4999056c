"""Template filters for numbers: {{ value|sig }} prints a few significant digits with thousands grouped."""

from __future__ import annotations

from typing import Any

from django import template

from protocol.numbers import Style, number

register = template.Library()


@register.filter
def sig(value: Any, digits: int = 4) -> str:
    if value is None or value == "":
        return "—"
    return number(value, Style.SIGNIFICANT, digits=int(digits))
