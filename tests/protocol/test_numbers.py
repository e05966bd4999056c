"""Every style of the one number formatter, pinned character for character: pages, charts, reports and the
comparison's sentences print exactly these."""

from __future__ import annotations

from decimal import Decimal

import pytest

from protocol.numbers import Style, number

INF, NAN = float("inf"), float("nan")
STYLES = (Style.SIGNIFICANT, Style.CHART, Style.GENERAL, Style.GROUPED, Style.RATIO)
TABLE = [
    # value            SIGNIFICANT             CHART                 GENERAL       GROUPED       RATIO
    (0, ("0", "0", "0", "0", "0.00")),
    (0.0, ("0", "0", "0", "0", "0.00")),
    (-0.0, ("0", "0", "-0", "-0", "-0.00")),
    (8, ("8", "8", "8", "8", "8.00")),
    (2364, ("2,364", "2,364", "2364", "2,364", "2364")),
    (-1, ("-1", "-1", "-1", "-1", "-1.00")),
    (10**12, ("1,000,000,000,000", "1,000,000,000,000", "1e+12", "1e+12", "1000000000000")),
    (1e12, ("1,000,000,000,000", "1,000,000,000,000", "1e+12", "1e+12", "1000000000000")),
    (-1e12, ("-1,000,000,000,000", "-1,000,000,000,000", "-1e+12", "-1e+12", "-1000000000000")),
    (1e15, ("1,000,000,000,000,000", "1e+15", "1e+15", "1e+15", "1000000000000000")),
    (1e-7, ("0.0000001", "1e-07", "1e-07", "1e-07", "1.00e-07")),
    (-1e-7, ("-0.0000001", "-1e-07", "-1e-07", "-1e-07", "-1.00e-07")),
    (0.0123456, ("0.01235", "0.0123", "0.01235", "0.01235", "0.0123")),
    (0.5, ("0.5", "0.5", "0.5", "0.5", "0.500")),
    (1.0, ("1", "1", "1", "1", "1.00")),
    (0.793, ("0.793", "0.793", "0.793", "0.793", "0.793")),
    (9.9996, ("10", "10", "10", "10", "10.0")),
    (10.04, ("10.04", "10.0", "10.04", "10.04", "10.0")),
    (862.84, ("862.8", "862.8", "862.8", "862.8", "863")),
    (1260.8, ("1,261", "1,261", "1261", "1,261", "1261")),
    (12345.0, ("12,345", "12,345", "1.234e+04", "1.234e+04", "12345")),
    (43579.602295, ("43,580", "43,580", "4.358e+04", "4.358e+04", "43580")),
    (-3.14159, ("-3.142", "-3.14", "-3.142", "-3.142", "-3.14")),
    (Decimal("1.5"), ("1.5", "1.5", "1.5", "1.5", "1.50")),
    (INF, ("inf", "inf", "inf", "inf", "inf")),
    (-INF, ("-inf", "-inf", "-inf", "-inf", "-inf")),
    (NAN, ("nan", "nan", "nan", "nan", "nan")),
]


@pytest.mark.parametrize(("value", "written"), TABLE, ids=[repr(v) for v, _ in TABLE])
def test_each_style_writes_each_number_as_pinned(value: object, written: tuple[str, ...]) -> None:
    assert tuple(number(value, style) for style in STYLES) == written


@pytest.mark.parametrize(
    ("value", "digits", "significant", "general", "grouped"),
    [
        (43579.602295, 2, "43,580", "4.4e+04", "4.4e+04"),  # SIGNIFICANT never rounds before the point
        (0.0123456, 3, "0.0123", "0.0123", "0.0123"),
        (1.004, 2, "1", "1", "1"),
        (0.4, 2, "0.4", "0.4", "0.4"),
        (1.2345678, 6, "1.23457", "1.23457", "1.23457"),
        (1234567.0, 6, "1,234,567", "1.23457e+06", "1.23457e+06"),
        (2364, 2, "2,364", "2.4e+03", "2.4e+03"),  # a count keeps every digit in SIGNIFICANT
    ],
)
def test_digits_set_the_significant_digits_of_the_styles_that_take_them(
    value: object, digits: int, significant: str, general: str, grouped: str
) -> None:
    assert number(value, Style.SIGNIFICANT, digits=digits) == significant
    assert number(value, Style.GENERAL, digits=digits) == general
    assert number(value, Style.GROUPED, digits=digits) == grouped


@pytest.mark.parametrize("style", [Style.CHART, Style.RATIO])
def test_styles_with_fixed_digits_refuse_others(style: Style) -> None:
    with pytest.raises(ValueError, match="digits fixed"):
        number(1.0, style, digits=3)


@pytest.mark.parametrize("style", STYLES)
def test_none_is_the_missing_text_and_what_is_not_a_number_is_its_text(style: Style) -> None:
    assert number(None, style) == "—"
    assert number(None, style, missing="?") == "?"
    assert [number(v, style) for v in ("12 ms", True, False)] == ["12 ms", "True", "False"]
