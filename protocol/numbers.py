"""Numbers for readers: one formatter, `number(value, style)`, whose named styles are every way benchreg writes a
number in a page, a chart, a report, a comparison's sentence or the verifier's messages.

Plain Python, so the standalone verifier and protocol's own messages use it as the registry does. Each style's
output is pinned character for character (tests/protocol/test_numbers.py): a page, a PDF or a message changes only
when a style here does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from enum import StrEnum

DIGITS = 4  # significant digits of the styles that take `digits`, unless the caller asks for others


class Style(StrEnum):
    """How a number is written. Examples are 43579.6, 862.84, 0.0123456, 12345.0 and 1.0 in turn."""

    # "43,580", "862.8", "0.01235", "12,345", "1": `digits` significant digits but every digit before the point
    # (never an exponent), thousands grouped, trailing zeros dropped; integers exact. Measured figures on the pages.
    SIGNIFICANT = "significant"
    # "43,580", "862.8", "0.0123", "12,345", "1": by size: whole and grouped from 1,000, one decimal from 10, else
    # three significant digits; an exponent from 1e15 (written in full it runs off a chart). Charts and reports.
    CHART = "chart"
    # "4.358e+04", "862.8", "0.01235", "1.234e+04", "1": Python's general format with `digits` significant digits.
    GENERAL = "general"
    # As GENERAL with thousands grouped where there is no exponent: "1,261" for 1260.8 (GENERAL: "1261").
    GROUPED = "grouped"
    # "43580", "863", "0.0123", "12345", "1.00": three significant digits with trailing zeros kept (1.00 says the
    # ratio is even to that digit), whole from 1,000. A comparison's ratios in words.
    RATIO = "ratio"


def number(value: object, style: Style = Style.SIGNIFICANT, *, digits: int | None = None, missing: str = "—") -> str:
    """`value` written in `style`. None is written `missing`; what is not a number (text, True/False) as str(value).

    `digits` sets the significant digits of SIGNIFICANT, GENERAL and GROUPED (DIGITS unless given); CHART and
    RATIO have theirs fixed and refuse it (ValueError). Infinities and NaN read "inf", "-inf", "nan".
    """
    if digits is not None and style not in _TAKE_DIGITS:
        raise ValueError(f"the {style} style has its digits fixed")
    if value is None:
        return missing
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return str(value)
    if style is Style.SIGNIFICANT and isinstance(value, int):
        return f"{value:,}"
    return _WRITERS[style](float(value), DIGITS if digits is None else digits)


def _significant(value: float, digits: int) -> str:
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{round(value, decimals):,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _chart(value: float, _digits: int) -> str:
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 1e15:
        return f"{value:.4g}"
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:,.1f}"
    return f"{value:.3g}"


def _general(value: float, digits: int) -> str:
    return f"{value:.{digits}g}"


def _grouped(value: float, digits: int) -> str:
    return f"{value:,.{digits}g}"


def _ratio(value: float, _digits: int) -> str:
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:#.3g}".rstrip(".")


_WRITERS: dict[Style, Callable[[float, int], str]] = {
    Style.SIGNIFICANT: _significant,
    Style.CHART: _chart,
    Style.GENERAL: _general,
    Style.GROUPED: _grouped,
    Style.RATIO: _ratio,
}
_TAKE_DIGITS = frozenset({Style.SIGNIFICANT, Style.GENERAL, Style.GROUPED})
