"""Template filters for numbers: {{ value|sig }} prints a few significant digits with thousands grouped."""

from __future__ import annotations

from typing import Any

from django import template

from registry.formatting import significant

register = template.Library()


@register.filter
def sig(value: Any, digits: int = 4) -> str:
    if value is None or value == "":
        return "—"
    return significant(value, int(digits))
