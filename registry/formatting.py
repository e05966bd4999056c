"""Numbers as pages print them: a few significant digits, thousands grouped, units beside them."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

SIGNIFICANT = 4


def significant(value: Any, digits: int = SIGNIFICANT) -> str:
    """43579.602295 -> "43,580"; 1260.8 -> "1,261"; 0.0123456 -> "0.01235"; 8 -> "8"; True and text unchanged.

    Integers keep every digit (a count is exact); other numbers keep `digits` significant digits, with no trailing
    zeros after the decimal point, and thousands separated by commas.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    number = float(value)
    if not math.isfinite(number):
        return str(number)
    if number == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(number)))
    decimals = max(0, digits - 1 - magnitude)
    rounded = round(number, decimals)
    text = f"{rounded:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def percent_change(ratio: float) -> str:
    """1.21 -> "+21%"; 0.85 -> "−15%"; 1.004 -> "+0.4%" (two significant digits below 10%)."""
    change = (ratio - 1.0) * 100.0
    shown = f"{abs(change):.0f}" if abs(change) >= 10 else significant(round(abs(change), 1), 2)
    if shown in ("0", "0.0"):
        return "±0%"
    return ("+" if change > 0 else "−") + shown + "%"
