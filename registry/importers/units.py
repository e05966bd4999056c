"""Small, closed-table parsers for the free text of imported system descriptions.

Plain Python, no Django. Each parser returns None when the text is not exactly one value it knows, so the
caller keeps the raw text and flags it instead of guessing. Arithmetic is done in Decimal so that a value
such as "1.5TiB" becomes exactly 1536 GiB, "2 TB" exactly 1862.645149230957031250 GiB before its one rounding to a
float, and "2.1 GHz" exactly 2100 MHz.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

# Memory capacities, in GiB (2^30 bytes), as written: "MB"/"GB"/"TB" are the SI units (10^6, 10^9, 10^12 bytes)
# and "MiB"/"GiB"/"TiB" the binary ones (IEC 80000-13). "192 GB" is 192 x 10^9 bytes = 178.8139... GiB, whatever
# the device holds: the registry records what the source states and does not second-guess it by the JEDEC usage
# that lets "GB" mean GiB for semiconductor memory (docs/mlperf-import.md). Every factor is an exact decimal
# (10^9 / 2^30 = 5^9 / 2^21), so the conversion is exact before the one rounding to a float. Bare "G"/"T" are
# refused as ambiguous.
_GIB = Decimal(2**30)
MEMORY_UNITS_GIB: dict[str, Decimal] = {
    "mib": Decimal(1) / 1024,
    "gib": Decimal(1),
    "tib": Decimal(1024),
    "mb": Decimal(10**6) / _GIB,
    "gb": Decimal(10**9) / _GIB,
    "tb": Decimal(10**12) / _GIB,
}
FREQUENCY_UNITS_MHZ: dict[str, Decimal] = {
    "hz": Decimal(1) / 1_000_000,
    "khz": Decimal(1) / 1000,
    "mhz": Decimal(1),
    "ghz": Decimal(1000),
}
_QUANTITY = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]+)\s*$")

# Words that mean "not stated" in MLPerf system descriptions.
NOT_STATED = frozenset({"", "n/a", "na", "none", "not applicable", "-", "tbd", "unknown"})


def not_stated(value: object) -> bool:
    """True for None and the placeholders submitters write for an empty field ("", "N/A", ...)."""
    return value is None or (isinstance(value, str) and value.strip().lower() in NOT_STATED)


def _to_number(value: Decimal) -> float | int:
    """An int when the value is integral (so 192 stays 192), else the nearest float."""
    return int(value) if value == value.to_integral_value() else float(value)


def parse_quantity(text: str, table: dict[str, Decimal]) -> float | int | None:
    """'<number> <unit>' with a unit from `table` (case-insensitive), converted by the table's factor."""
    match = _QUANTITY.match(text)
    if not match:
        return None
    factor = table.get(match["unit"].lower())
    if factor is None:
        return None
    try:
        return _to_number(Decimal(match["number"]) * factor)
    except InvalidOperation:  # pragma: no cover - the regex admits only plain decimals
        return None


def parse_memory_gib(text: str) -> float | int | None:
    """A memory capacity such as '192 GB' (SI: 178.81... GiB) or '1.5TiB' (1536 GiB) in GiB."""
    return parse_quantity(text, MEMORY_UNITS_GIB)


def parse_frequency_mhz(text: str) -> float | int | None:
    """A clock frequency such as '2100 MHz' or '2.1 GHz' in MHz."""
    return parse_quantity(text, FREQUENCY_UNITS_MHZ)


def parse_count(value: object) -> int | None:
    """A non-negative integer given as a JSON integer, a whole JSON number (`1.0`: submitters' description
    generators write counts as floats) or a string of either; anything else (1.5, -1, "two") is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        if not re.fullmatch(r"\d+\.0*", text):
            return None
        value = float(text)
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float | Decimal) and math.isfinite(value) and value >= 0 and value == int(value):
        return int(value)
    return None


_NAME_VERSION = re.compile(
    r"^(?P<name>[A-Za-z][A-Za-z0-9_.+-]*(?: [A-Za-z][A-Za-z0-9_.+-]*)*?)\s+v?"
    r"(?P<version>\d[^\s,]*)$"
)


def split_versions(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Split 'vLLM 0.9.0, Pytorch 2.7.0+git, ROCm 6.4.1' into [(name, version)] and the leftover parts.

    A part is accepted only as '<name> <version>' where the version starts with a digit and has no spaces;
    anything else (no version, two versions, prose) is returned as leftover text for the caller to keep.
    """
    pairs: list[tuple[str, str]] = []
    leftovers: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        match = _NAME_VERSION.match(part)
        if match:
            pairs.append((match["name"], match["version"]))
        else:
            leftovers.append(part)
    return pairs, leftovers


_OS = re.compile(r"^(?P<name>[A-Za-z][A-Za-z ]*?)\s+(?P<version>\d[\w.]*)(?P<rest>.*)$")


def parse_os(text: str) -> tuple[str, str, str] | None:
    """'Ubuntu 24.04 LTS' -> ('Ubuntu', '24.04', 'LTS'); None when no '<name> <version>' start is found."""
    match = _OS.match(text.strip())
    if not match:
        return None
    return match["name"], match["version"], match["rest"].strip()
